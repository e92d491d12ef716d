import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Layer, Option, Redacted } from "effect"
import { AuditLog, type AuditActor } from "../src/audit/audit-log.js"
import { ConsoleAccounts } from "../src/console/console-accounts.js"
import { ledgerBalances, merchantWithFunds } from "../test/custody-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { asUser, member } from "../test/console-members.js"
import { onboardMerchant } from "../test/merchants.js"
import { ClockControl } from "../test/policy-clock.js"
import { runInProcess } from "../test/cli-in-process.js"
import { eventually } from "../test/webhook-receiver.js"
import { ApiKeys } from "../src/merchants/api-keys.js"
import { AddressBook } from "./address-book.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { Withdrawals } from "./withdrawals.js"
import { type MerchantServices, merchantsCommand } from "./merchants-command.js"

const OPERATOR: AuditActor = { kind: "operator", name: "ops", from: "test" }
const RECIPIENT = "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"
const OTHER = "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE"
const DAY = "24 hours"

const post = (apiKey: string, path: string, json: unknown) =>
  Effect.flatMap(TestClient, (c) => c.request("POST", path, { apiKey, json }))
const get = (apiKey: string, path: string) => Effect.flatMap(TestClient, (c) => c.request("GET", path, { apiKey }))
const withdraw = (apiKey: string, amount: string, to = RECIPIENT) =>
  post(apiKey, "/v1/withdrawals", { chain: "TRC20", currency: "USDT", amount, to_address: to })
const setPolicy = (merchantId: string, settings: Record<string, string | null>) =>
  Effect.flatMap(WithdrawalPolicy, (p) =>
    p.change(
      merchantId,
      Object.entries(settings).map(([setting, value]) => ({ setting, value })),
      OPERATOR
    )
  )

const actions = (merchantId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ action: string }>`SELECT action FROM audit_log WHERE merchant_id = ${merchantId} ORDER BY id`,
      (rows) => rows.map((r) => r.action)
    )
  )

describe("withdrawal policy", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "240 seconds" })((it) => {
    // the command tree of `npm run merchants` run in this process (no Node start-up) on the service's own
    // services, its test clock among them: the entry's exit codes are test/operator-clis.test.ts's
    it.scoped(
      "npm run merchants: policy, address book and users from the operator's CLI, audited as the operator's, loosening waits",
      () =>
        Effect.gen(function* () {
          const { merchantId } = yield* onboardMerchant()
          const command = merchantsCommand(Layer.succeedContext(yield* Effect.context<MerchantServices>()))
          const cli = (...args: ReadonlyArray<string>) =>
            Effect.map(runInProcess(command, "merchants", args), (ran) => ({
              code: ran.code,
              output: `${ran.stdout}\n${ran.stderr}`
            }))
          const tightened = yield* cli(
            "policy",
            merchantId,
            "--quorum",
            "2",
            "--limit",
            "TRC20-USDT=per_tx:100,per_day:1000",
            "--by",
            "ops-cli"
          )
          expect(tightened.code, tightened.output).toBe(0)
          expect(tightened.output).toContain("quorum: 1 → 2 in force now")
          expect(tightened.output).toContain("per_day:TRC20-USDT: no limit → 1000 in force now")
          const loosened = yield* cli("policy", merchantId, "--quorum", "1", "--by", "ops-cli")
          expect(loosened.output).toMatch(/quorum: 2 → 1 pending until \d{4}-/)
          const shown = yield* cli("policy", merchantId)
          expect(shown.output).toContain("quorum: 2")
          expect(shown.output).toMatch(/pending pch_\w+: quorum → 1 from/)
          const added = yield* cli(
            "address-book",
            merchantId,
            "add",
            "--chain",
            "TRC20",
            "--address",
            RECIPIENT,
            "--label",
            "cold",
            "--by",
            "ops-cli"
          )
          expect(added.output).toMatch(/wad_\w+: TRC20 TLsV52.* added, usable from/)
          const bad = yield* cli("address-book", merchantId, "add", "--chain", "TRC20", "--address", "Tnot-an-address")
          expect([bad.code, bad.output]).toEqual([2, expect.stringContaining("is not a TRON address")])
          const invited = yield* cli("users", merchantId, "add", "dana-cli", "--role", "approver", "--by", "ops-cli")
          expect(invited.output).toMatch(/\/console\/invite\?token=[\w-]{43}\n/)
          const removed = yield* cli(
            "address-book",
            merchantId,
            "remove",
            "--chain",
            "TRC20",
            "--address",
            RECIPIENT,
            "--by",
            "ops-cli"
          )
          expect(removed.code, removed.output).toBe(0)
          const rows = yield* Effect.flatMap(AuditLog, (a) => a.list(merchantId, { limit: 100, actor: "ops-cli" }))
          expect(rows.map((r) => r.action).sort()).toEqual([
            "address.added",
            "address.removed",
            "policy.changed",
            "policy.changed",
            "policy.changed",
            "policy.changed",
            "user.invited"
          ])
          expect(rows.every((r) => r.actor_kind === "operator" && r.from_address.startsWith("cli@"))).toBe(true)
        }),
      { timeout: 150_000 }
    )
    it.effect(
      "address book on: unknown → 403, cooling off → 403 with its time, usable → 201, removed → 403; nothing locked by a refusal",
      () =>
        Effect.gen(function* () {
          const book = yield* AddressBook
          const clock = yield* ClockControl
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
          expect((yield* withdraw(apiKey, "10")).status).toBe(201) // off by default: today's flows keep working
          const [on] = yield* setPolicy(merchantId, { address_book: "on" })
          expect(on).toMatchObject({ setting: "address_book", from: "off", to: "on", pending: false })

          const unknown = yield* withdraw(apiKey, "10")
          expect(unknown.status).toBe(403)
          expect(String(asRecord(unknown.body).error)).toContain("is not in this merchant's withdrawal address book")
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "990", locked: "10" })

          const entry = yield* book.add(merchantId, { chain: "TRC20", address: RECIPIENT, label: "treasury" }, OPERATOR)
          expect(entry.status).toBe("pending")
          const listed = asRecord((yield* get(apiKey, "/v1/withdrawal-addresses")).body)
          expect(listed).toMatchObject({ address_book: "on", cooling_off_seconds: 86_400, total: 1 })
          expect(listed.items).toEqual([
            expect.objectContaining({
              id: entry.id,
              address: RECIPIENT,
              label: "treasury",
              status: "pending",
              usable_from: entry.usable_from,
              created_by: "ops"
            })
          ])
          const cooling = yield* withdraw(apiKey, "10")
          expect(cooling.status).toBe(403)
          expect(String(asRecord(cooling.body).error)).toContain(
            `still cooling off: usable from ${new Date(entry.usable_from).toISOString()}`
          )
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "990", locked: "10" })
          expect(
            Either.isLeft(
              yield* Effect.either(
                book.add(merchantId, { chain: "TRC20", address: RECIPIENT, label: "again" }, OPERATOR)
              )
            )
          ).toBe(true)

          yield* clock.advance(DAY)
          yield* clock.advance("1 second")
          expect(asRecord((yield* get(apiKey, "/v1/withdrawal-addresses")).body).items).toEqual([
            expect.objectContaining({ status: "usable" })
          ])
          const sent = yield* withdraw(apiKey, "10")
          expect(sent.status, sent.text).toBe(201)
          expect((yield* withdraw(apiKey, "10", OTHER)).status).toBe(403)

          yield* book.remove(merchantId, entry.id, OPERATOR)
          expect((yield* withdraw(apiKey, "10")).status).toBe(403)
          expect(asRecord((yield* get(apiKey, "/v1/withdrawal-addresses")).body).total).toBe(0)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "980", locked: "20" })
          expect(yield* actions(merchantId)).toEqual(
            expect.arrayContaining([
              "api_key.created",
              "policy.changed",
              "address.added",
              "address.removed",
              "withdrawal.created"
            ])
          )
        })
    )

    it.effect(
      "limits: per withdrawal and per rolling 24 h refused with what is left; refused and rejected ones free the window; it rolls",
      () =>
        Effect.gen(function* () {
          const decisions = yield* WithdrawalDecisions
          const clock = yield* ClockControl
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
          yield* setPolicy(merchantId, { "per_tx:TRC20-USDT": "100", "per_day:TRC20-USDT": "250" })
          const big = yield* withdraw(apiKey, "150")
          expect(big.status).toBe(403)
          expect(String(asRecord(big.body).error)).toContain("passes the per-withdrawal limit of 100 USDT on TRC20")
          const first = asRecord((yield* withdraw(apiKey, "100")).body)
          expect((yield* withdraw(apiKey, "100")).status).toBe(201)
          const over = yield* withdraw(apiKey, "100")
          expect(over.status).toBe(403)
          expect(String(asRecord(over.body).error)).toContain(
            "passes the rolling 24 h limit of 250 USDT on TRC20: 200 used, 50 left in the window"
          )
          expect((yield* withdraw(apiKey, "50")).status).toBe(201)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "750", locked: "250" })
          yield* decisions.decide(String(first.withdrawal_id), "REJECTED", {
            kind: "operator",
            by: "ops",
            from: "test",
            reason: "not now"
          })
          expect((yield* withdraw(apiKey, "100")).status).toBe(201)
          expect((yield* withdraw(apiKey, "1")).status).toBe(403)
          yield* clock.advance("25 hours")
          expect((yield* withdraw(apiKey, "100")).status).toBe(201)
        })
    )

    it.effect("fifty concurrent creations against a 24 h window that covers ten: exactly ten", () =>
      Effect.gen(function* () {
        const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
        yield* setPolicy(merchantId, { "per_day:TRC20-USDT": "100" })
        const answers = yield* Effect.all(
          Array.from({ length: 50 }, () => withdraw(apiKey, "10")),
          { concurrency: "unbounded" }
        )
        expect(answers.filter((a) => a.status === 201)).toHaveLength(10)
        expect(answers.filter((a) => a.status === 403)).toHaveLength(40)
        expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "900", locked: "100" })
      })
    )

    it.effect(
      "quorum 2: one approval leaves it PENDING 1 of 2, a second person approves it and it is sent; twice, the console initiator and a viewer are refused",
      () =>
        Effect.gen(function* () {
          const decisions = yield* WithdrawalDecisions
          const withdrawals = yield* Withdrawals
          const clock = yield* ClockControl
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
          yield* setPolicy(merchantId, { quorum: "2", "quorum_above:TRC20-USDT": "500:3" })
          const alice = yield* member(merchantId, "alice-q", "approver")
          const bob = yield* member(merchantId, "bob-q", "approver")
          const victor = yield* member(merchantId, "victor-q", "viewer")
          const carol = yield* member(merchantId, "carol-q", "admin")

          const created = asRecord((yield* withdraw(apiKey, "100")).body)
          expect(created).toMatchObject({ status: "PENDING", required_approvals: 2, approvals: [] })
          const id = String(created.withdrawal_id)
          // a new approver's approvals count only after the cooling-off
          const early = yield* Effect.either(decisions.decide(id, "APPROVED", asUser(alice, "alice-q")))
          expect(Either.isLeft(early) && early.left._tag === "ApproverNotAllowed" && early.left.message).toContain(
            "count from"
          )
          yield* clock.advance("25 hours")

          const one = yield* decisions.decide(id, "APPROVED", asUser(alice, "alice-q"))
          expect(one).toMatchObject({
            status: "PENDING",
            required_approvals: 2,
            approvals: [{ approved_by: "alice-q", approver_kind: "console_user" }]
          })
          const shown = asRecord((yield* get(apiKey, `/v1/withdrawals/${id}`)).body)
          expect(shown).toMatchObject({ status: "PENDING", required_approvals: 2 })
          expect(shown.approvals).toEqual([
            {
              approved_by: "alice-q",
              approver_kind: "console_user",
              approved_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/)
            }
          ])
          const twice = yield* Effect.either(decisions.decide(id, "APPROVED", asUser(alice, "alice-q")))
          expect(Either.isLeft(twice) && twice.left._tag).toBe("DuplicateApproval")
          const viewer = yield* Effect.either(decisions.decide(id, "APPROVED", asUser(victor, "victor-q")))
          expect(Either.isLeft(viewer) && viewer.left._tag === "ApproverNotAllowed" && viewer.left.message).toContain(
            "is a viewer"
          )
          const viewerRejects = yield* Effect.either(
            decisions.decide(id, "REJECTED", { ...asUser(victor, "victor-q"), reason: "no" })
          )
          expect(Either.isLeft(viewerRejects) && viewerRejects.left._tag).toBe("ApproverNotAllowed")

          const two = yield* decisions.decide(id, "APPROVED", asUser(bob, "bob-q"))
          expect(two.status).toBe("APPROVED")
          const done = asRecord(
            (yield* eventually(
              get(apiKey, `/v1/withdrawals/${id}`),
              (r) => ["COMPLETED", "FAILED"].includes(String(asRecord(r.body).status)),
              90_000
            )).body
          )
          expect(done.status, JSON.stringify(done)).toBe("COMPLETED")

          // created in the console by carol: carol cannot approve it; an operator approval counts once, whatever
          // name it gives; the CLI never approves as a console user (three --by calls once met a quorum of three)
          const own = yield* withdrawals.create(
            merchantId,
            { chain: "TRC20", currency: "USDT", amount: "50", to_address: RECIPIENT },
            Option.none(),
            { actor: { kind: "console_user", name: "carol-q", from: "127.0.0.1" }, consoleUserId: carol }
          )
          const initiator = yield* Effect.either(
            decisions.decide(own.withdrawal_id, "APPROVED", asUser(carol, "carol-q"))
          )
          expect(
            Either.isLeft(initiator) && initiator.left._tag === "ApproverNotAllowed" && initiator.left.message
          ).toContain("someone else must approve it")
          expect(
            (yield* decisions.decide(own.withdrawal_id, "APPROVED", { kind: "operator", by: "ops", from: "cli@test" }))
              .approvals
          ).toHaveLength(1)
          const secondOperator = yield* Effect.either(
            decisions.decide(own.withdrawal_id, "APPROVED", { kind: "operator", by: "ops2", from: "cli@test" })
          )
          expect(Either.isLeft(secondOperator) && secondOperator.left._tag).toBe("DuplicateApproval")
          const posing = yield* Effect.either(
            decisions.decide(own.withdrawal_id, "APPROVED", { kind: "operator", by: "alice-q", from: "cli@test" })
          )
          expect(Either.isLeft(posing) && posing.left._tag === "ApproverNotAllowed" && posing.left.message).toContain(
            "alice-q is a console user of this merchant: the operator CLI decides as the operator"
          )
          const viaConsole = yield* decisions.decide(own.withdrawal_id, "APPROVED", asUser(alice, "alice-q"))
          expect(viaConsole.status).toBe("APPROVED")
          expect(viaConsole.approvals.map((a) => [a.approved_by, a.approver_kind])).toEqual([
            ["ops", "operator"],
            ["alice-q", "console_user"]
          ])

          // above 500: three; one rejection rejects
          const large = asRecord((yield* withdraw(apiKey, "600")).body)
          expect(large.required_approvals).toBe(3)
          yield* decisions.decide(String(large.withdrawal_id), "APPROVED", asUser(alice, "alice-q"))
          const rejected = yield* decisions.decide(String(large.withdrawal_id), "REJECTED", {
            ...asUser(bob, "bob-q"),
            reason: "too much"
          })
          expect(rejected.status).toBe("REJECTED")
          const trail = yield* actions(merchantId)
          expect(trail).toEqual(
            expect.arrayContaining([
              "user.invited",
              "user.joined",
              "withdrawal.approved",
              "withdrawal.rejected",
              "withdrawal.created"
            ])
          )
        })
    )

    // the review's finding: admitted at creation only, a withdrawal pending to an address since removed, or
    // above a limit since tightened, was approved and sent
    it.effect(
      "approval re-checks the policy in force: an address removed or a limit tightened since creation refuses it (403, still PENDING, nothing recorded)",
      () =>
        Effect.gen(function* () {
          const book = yield* AddressBook
          const decisions = yield* WithdrawalDecisions
          const clock = yield* ClockControl
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
          yield* setPolicy(merchantId, { address_book: "on" })
          const entry = yield* book.add(merchantId, { chain: "TRC20", address: RECIPIENT, label: "treasury" }, OPERATOR)
          yield* clock.advance("25 hours")
          const created = asRecord((yield* withdraw(apiKey, "100")).body)
          expect(created.status).toBe("PENDING")
          const id = String(created.withdrawal_id)
          const approve = decisions.decide(id, "APPROVED", { kind: "operator", by: "ops", from: "cli@test" })

          yield* book.remove(merchantId, entry.id, OPERATOR)
          const removed = yield* Effect.either(approve)
          expect(Either.isLeft(removed) && removed.left._tag === "PolicyRefused" && removed.left.message).toContain(
            `the withdrawal policy in force now refuses approving ${id}: ${RECIPIENT} is not in this merchant's withdrawal address book`
          )

          yield* book.add(merchantId, { chain: "TRC20", address: RECIPIENT, label: "treasury again" }, OPERATOR)
          yield* clock.advance("25 hours")
          yield* setPolicy(merchantId, { "per_tx:TRC20-USDT": "10" })
          const limited = yield* Effect.either(approve)
          expect(Either.isLeft(limited) && limited.left._tag === "PolicyRefused" && limited.left.message).toContain(
            "passes the per-withdrawal limit of 10 USDT on TRC20"
          )
          expect(asRecord((yield* get(apiKey, `/v1/withdrawals/${id}`)).body)).toMatchObject({
            status: "PENDING",
            approvals: []
          })
          expect(yield* sql`SELECT 1 FROM withdrawal_approvals WHERE withdrawal_id = ${id}`).toHaveLength(0)
          expect(yield* sql`SELECT 1 FROM custody_operations WHERE withdrawal_id = ${id}`).toHaveLength(0)

          // loosened again (after its cooling-off): approved
          yield* setPolicy(merchantId, { "per_tx:TRC20-USDT": "off" })
          yield* clock.advance("25 hours")
          expect((yield* approve).status).toBe("APPROVED")
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "900", locked: "100" })
        })
    )

    // the review's finding: an admin minted a key (no password asked), created a withdrawal through the API
    // and approved it alone; the "someone else approves" rule held only for withdrawals made in the console
    it.effect(
      "a key minted by a console user requests as that user: its withdrawals need someone else's approval",
      () =>
        Effect.gen(function* () {
          const keys = yield* ApiKeys
          const decisions = yield* WithdrawalDecisions
          const clock = yield* ClockControl
          const { merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
          const carol = yield* member(merchantId, "carol-k", "admin")
          const alice = yield* member(merchantId, "alice-k", "approver")
          yield* clock.advance("25 hours")
          const minted = yield* keys.issue(
            merchantId,
            ["read", "withdrawals"],
            "payouts",
            { kind: "console_user", name: "carol-k", from: "127.0.0.1" },
            carol
          )
          const created = asRecord((yield* withdraw(Redacted.value(minted.key), "10")).body)
          expect(created.status).toBe("PENDING")
          const id = String(created.withdrawal_id)
          const alone = yield* Effect.either(decisions.decide(id, "APPROVED", asUser(carol, "carol-k")))
          expect(Either.isLeft(alone) && alone.left._tag === "ApproverNotAllowed" && alone.left.message).toContain(
            "carol-k requested withdrawal"
          )
          expect(Either.isLeft(alone) && alone.left._tag === "ApproverNotAllowed" && alone.left.message).toContain(
            "someone else must approve it"
          )
          expect((yield* decisions.decide(id, "APPROVED", asUser(alice, "alice-k"))).status).toBe("APPROVED")
        })
    )

    it.effect(
      "loosening waits for the cooling-off (pending, cancellable), tightening is at once and reaches pending withdrawals",
      () =>
        Effect.gen(function* () {
          const policy = yield* WithdrawalPolicy
          const clock = yield* ClockControl
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
          const pendingWithdrawal = String(asRecord((yield* withdraw(apiKey, "10")).body).withdrawal_id)
          // tightening: in force now, and the pending withdrawal now needs two
          yield* setPolicy(merchantId, { quorum: "2", address_book: "on", "per_tx:TRC20-USDT": "500" })
          expect((yield* policy.effective(merchantId)).quorum).toBe(2)
          expect(asRecord((yield* get(apiKey, `/v1/withdrawals/${pendingWithdrawal}`)).body).required_approvals).toBe(2)

          // loosening: pending for the cooling-off in force, still the old value meanwhile
          const [quorum, book, limit, cooling] = yield* setPolicy(merchantId, {
            quorum: "1",
            address_book: "off",
            "per_tx:TRC20-USDT": "off",
            cooling_off: "1h"
          })
          for (const outcome of [quorum, book, limit, cooling]) expect(outcome?.pending).toBe(true)
          expect(quorum?.effectiveAt.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000)
          const meanwhile = yield* policy.effective(merchantId)
          expect([
            meanwhile.quorum,
            meanwhile.addressBook,
            meanwhile.perTx("TRC20-USDT")?.toFixed(),
            meanwhile.coolingOffSeconds
          ]).toEqual([2, true, "500", 86_400])
          // the owner cancels one; a tightening of another supersedes its pending loosening
          const pending = (yield* policy.changes(merchantId)).filter((c) => c.status === "PENDING")
          expect(pending.map((c) => c.setting).sort()).toEqual([
            "address_book",
            "cooling_off",
            "per_tx:TRC20-USDT",
            "quorum"
          ])
          yield* policy.cancelChange(merchantId, pending.find((c) => c.setting === "address_book")?.id ?? "", OPERATOR)
          yield* setPolicy(merchantId, { "per_tx:TRC20-USDT": "400" })

          yield* clock.advance("24 hours")
          yield* clock.advance("1 second")
          const after = yield* policy.effective(merchantId)
          expect([
            after.quorum,
            after.addressBook,
            after.perTx("TRC20-USDT")?.toFixed(),
            after.coolingOffSeconds
          ]).toEqual([1, true, "400", 3600])
          expect(yield* policy.settle(merchantId)).toBe(2)
          const statuses = (yield* policy.changes(merchantId)).map((c) => `${c.setting}:${c.status}`)
          expect(statuses).toEqual(
            expect.arrayContaining([
              "quorum:APPLIED",
              "cooling_off:APPLIED",
              "address_book:CANCELLED",
              "per_tx:TRC20-USDT:SUPERSEDED",
              "per_tx:TRC20-USDT:APPLIED"
            ])
          )
          // a pending withdrawal keeps what it needed when it was created
          expect(asRecord((yield* get(apiKey, `/v1/withdrawals/${pendingWithdrawal}`)).body).required_approvals).toBe(2)
          const trail = yield* actions(merchantId)
          expect(trail.filter((a) => a === "policy.change_applied")).toHaveLength(2)
          expect(trail).toContain("policy.change_cancelled")
        })
    )

    it.effect("the audit log: logins and failures, keys, and it refuses UPDATE and DELETE; CSV defuses formulas", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const audit = yield* AuditLog
        const accounts = yield* ConsoleAccounts
        const { merchantId } = yield* onboardMerchant()
        yield* member(merchantId, "audrey-a", "viewer")
        yield* Effect.either(accounts.login("audrey-a", "wrong-password-123", "10.0.0.9", "", "curl/8"))
        yield* accounts.login("audrey-a", "Correct-Horse-Battery-9", "10.0.0.9", "", "Mozilla/5.0")
        const rows = yield* audit.list(merchantId, { limit: 100 })
        const failed = rows.find((r) => r.action === "console.login_failed")
        expect(failed).toMatchObject({
          actor: "audrey-a",
          actor_kind: "console_user",
          from_address: "10.0.0.9",
          user_agent: "curl/8",
          detail: "wrong password"
        })
        expect(rows.find((r) => r.action === "console.login")).toMatchObject({ user_agent: "Mozilla/5.0" })
        expect((yield* audit.list(merchantId, { limit: 100, action: "user.joined", actor: "AUDREY" })).length).toBe(1)
        expect(
          Either.isLeft(
            yield* Effect.either(sql`UPDATE audit_log SET actor = 'someone else' WHERE merchant_id = ${merchantId}`)
          )
        ).toBe(true)
        expect(Either.isLeft(yield* Effect.either(sql`DELETE FROM audit_log WHERE merchant_id = ${merchantId}`))).toBe(
          true
        )
        const csv = audit.csv(rows.slice(0, 1).map((row) => ({ ...row, subject: '=HYPERLINK("x")', detail: "a,b" })))
        expect(csv.split("\r\n")[0]).toBe("id,at,actor_kind,actor,from_address,user_agent,action,subject,detail")
        expect(csv).toContain(`"'=HYPERLINK(""x"")","a,b"`)
      })
    )
  })
})
