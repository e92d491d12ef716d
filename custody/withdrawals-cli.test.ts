import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as os from "node:os"
import { TestDatabaseLive } from "../test/database.js"
import { runInProcess } from "../test/cli-in-process.js"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { AuditLog } from "../src/audit/audit-log.js"
import { newId } from "../src/ids.js"
import { masterSeedFromMnemonic } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { Accounts, Ledger } from "../src/ledger/ledger.js"
import { toBaseUnits } from "../src/money.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { ConsoleStore } from "../src/stores/console-store.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { MerchantStore } from "../src/stores/merchant-store.js"
import { StoresLive } from "../src/stores/stores-layer.js"
import { WithdrawalStore } from "../src/stores/withdrawal-store.js"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { WithdrawalDecisionsLive, type WithdrawalServices, withdrawalsCommand } from "./withdrawals-command.js"

/**
 * `npm run withdrawals` end to end in this process: the command line parsed by the CLI's own command tree,
 * its exit code as the shared runner gives it (src/operator/cli.ts), on the withdrawal services as the CLI
 * composes them, over a test database of this file's. No process is spawned (test/operator-clis.test.ts
 * spawns the entry for --help and usage errors). The withdrawals are stored as POST /v1/withdrawals stores
 * them (admitted by the policy, the amount locked), without its network-fee quote: that needs a chain.
 */

const RECIPIENT = "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"
const HOST = `cli@${os.hostname()}`

const TestLive = Layer.mergeAll(WithdrawalPolicy.Default, AuditLog.Default, AssetCatalog.Default, Ledger.Default).pipe(
  Layer.provideMerge(WithdrawalDecisionsLive),
  Layer.provideMerge(StoresLive),
  Layer.provideMerge(
    LocalSignerLive.pipe(
      Layer.provide(masterSeedFromMnemonic("test test test test test test test test test test test junk"))
    )
  ),
  Layer.provideMerge(TestDatabaseLive)
)

/**
 * `npm run withdrawals -- ...args` on this file's database: the exit code, and what it printed (stdout
 * without the log lines the services write there too, as `npm run withdrawals` does; stderr), line by line.
 */
const cli = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const command = withdrawalsCommand(Layer.succeedContext(yield* Effect.context<WithdrawalServices>()))
    return yield* runInProcess(command, "withdrawals", args)
  })

/** The withdrawal a decision printed: its JSON line. */
const printed = (stdout: string): unknown => JSON.parse(stdout)

/** A merchant with the default assets enrolled (TRC20-USDT among them) and `available` USDT on TRON. */
const merchantWithAvailable = (available: string) =>
  Effect.gen(function* () {
    const id = newId("mer")
    yield* Effect.flatMap(MerchantStore, (store) =>
      store.insertMerchant({
        id,
        applicationId: `app_${id}`,
        projectName: `Withdrawals CLI ${id}`,
        projectKey: `withdrawals cli ${id}`,
        businessType: "exchange",
        useCase: "payouts",
        website: null,
        repositoryUrl: null,
        contactChannel: null,
        contactEmail: null,
        monthlyVolume: null,
        webhookUrl: null,
        returnUrl: null,
        preferredChains: ["TRC20"],
        aiProvider: null,
        integrationMode: "exchange_wallet",
        application: {},
        sealedWebhookSecret: "sealed"
      })
    ).pipe(Effect.orDie)
    yield* Effect.flatMap(AssetCatalog, (catalog) => catalog.enableDefaults(id))
    // collected funds, as a sweep leaves them (the deposit and the sweep are the custody tests')
    yield* Effect.flatMap(Ledger, (ledger) =>
      ledger.post([
        {
          debit: Accounts.chain,
          credit: Accounts.available(id),
          chain: "TRC20",
          currency: "USDT",
          amount: toBaseUnits(available, 6),
          kind: "test_funding",
          reference: `funding:${id}`
        }
      ])
    ).pipe(Effect.orDie)
    return id
  })

/** A PENDING withdrawal of 100 USDT, as Withdrawals.create stores it: admitted by the policy in force, locked. */
const pendingWithdrawal = (merchantId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const policy = yield* WithdrawalPolicy
    const store = yield* WithdrawalStore
    const ledger = yield* Ledger
    const id = newId("wdr")
    yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const admitted = yield* policy.admit(merchantId, {
            chain: "TRC20",
            currency: "USDT",
            toAddress: RECIPIENT,
            amount: "100.000000"
          })
          yield* store.insert({
            id,
            merchant_id: merchantId,
            out_withdrawal_no: null,
            status: "PENDING",
            chain: "TRC20",
            currency: "USDT",
            amount: "100.000000",
            platform_fee: "0.100000",
            platform_fee_bps: 10,
            network_fee: "1.000000",
            network_fee_asset: "TRX",
            network_fee_included: false,
            total_fee: "0.100000",
            net_amount: "99.900000",
            fee_model: "platform_bps_network_gas_paid_by_platform",
            fee_policy_version: "2026-07-19.1",
            to_address: RECIPIENT,
            required_approvals: admitted.requiredApprovals,
            admitted_at: admitted.admittedAt,
            created_by: "api_key:test",
            created_by_user_id: null
          })
          yield* ledger.post([
            {
              debit: Accounts.available(merchantId),
              credit: Accounts.locked(merchantId),
              chain: "TRC20",
              currency: "USDT",
              amount: toBaseUnits("100", 6),
              kind: "withdrawal_lock",
              reference: id
            }
          ])
        })
      )
      .pipe(Effect.orDie)
    return id
  })

/** The merchant's TRON USDT as the API reports it. */
const balances = (merchantId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ available: string; locked: string }>`
        SELECT trim_scale(available)::text AS available, trim_scale(locked)::text AS locked
        FROM merchant_balances WHERE merchant_id = ${merchantId} AND chain = 'TRC20' AND currency = 'USDT'`,
      (rows) => rows[0]
    )
  ).pipe(Effect.orDie)

/** The withdrawal's row with its decision, and its approvals as recorded. */
const stored = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all({
      row: Effect.map(
        sql<{ status: string; decided_by: string | null; decided_from: string | null; decision_reason: string | null }>`
          SELECT status, decided_by, decided_from, decision_reason FROM withdrawals WHERE id = ${id}`,
        (rows) => rows[0]
      ),
      approvals: sql<{ approver_kind: string; approved_by: string; user_id: string | null; from_address: string }>`
        SELECT approver_kind, approved_by, user_id, from_address FROM withdrawal_approvals WHERE withdrawal_id = ${id}`
    })
  ).pipe(Effect.orDie)

/** The merchant's audit log as the operator's `--by` name wrote it, oldest first: action and subject. */
const auditedAs = (merchantId: string, by: string) =>
  Effect.map(
    Effect.flatMap(AuditLog, (audit) => audit.list(merchantId, { actor: by, limit: 100 })),
    (rows) =>
      rows
        .filter((row) => row.actor === by)
        .map((row) => ({ action: row.action, subject: row.subject, kind: row.actor_kind, from: row.from_address }))
        .reverse()
  )

describe("npm run withdrawals, in process", () => {
  layer(TestLive, { excludeTestServices: true })((it) => {
    it.effect(
      "approve: a withdrawal needing one approval is APPROVED with the operator's approval and the operation that sends it; the amount stays locked",
      () =>
        Effect.gen(function* () {
          const merchantId = yield* merchantWithAvailable("1000")
          const id = yield* pendingWithdrawal(merchantId)
          expect(yield* balances(merchantId)).toEqual({ available: "900", locked: "100" })

          const approved = yield* cli("approve", id, "--by", "ops-cli")
          expect(approved.code, approved.stderr).toBe(0)
          expect(printed(approved.stdout)).toMatchObject({
            withdrawal_id: id,
            status: "APPROVED",
            required_approvals: 1,
            approvals: [{ approved_by: "ops-cli", approver_kind: "operator" }]
          })
          // a quorum of one: no "stays PENDING" note
          expect(approved.stderr).toBe("")

          expect(yield* stored(id)).toEqual({
            row: { status: "APPROVED", decided_by: "ops-cli", decided_from: HOST, decision_reason: null },
            approvals: [{ approver_kind: "operator", approved_by: "ops-cli", user_id: null, from_address: HOST }]
          })
          // handed to the main wallet: the custody operation the running service's actor picks up
          const row = yield* Effect.flatMap(WithdrawalStore, (store) => store.find({ id }))
          const operationId = Option.flatMap(row, (r) => Option.fromNullable(r.operation_id))
          expect(Option.isSome(operationId)).toBe(true)
          const operation = yield* Effect.flatMap(CustodyStore, (store) =>
            store.operation(Option.getOrElse(operationId, () => ""))
          )
          expect(Option.getOrUndefined(operation)).toMatchObject({
            type: "withdrawal",
            status: "GAS_FUNDING",
            merchant_id: merchantId,
            withdrawal_id: id,
            to_address: RECIPIENT,
            amount: 99_900_000n
          })
          expect(yield* balances(merchantId)).toEqual({ available: "900", locked: "100" })
          expect(yield* auditedAs(merchantId, "ops-cli")).toEqual([
            { action: "withdrawal.approved", subject: id, kind: "operator", from: HOST }
          ])
        })
    )

    it.effect("reject and cancel: REJECTED / CANCELLED with the reason, the locked amount back to available", () =>
      Effect.gen(function* () {
        const merchantId = yield* merchantWithAvailable("1000")
        const rejectedId = yield* pendingWithdrawal(merchantId)
        const cancelledId = yield* pendingWithdrawal(merchantId)
        expect(yield* balances(merchantId)).toEqual({ available: "800", locked: "200" })

        const rejected = yield* cli("reject", rejectedId, "--by", "ops-cli", "--reason", "unknown recipient")
        expect(rejected.code, rejected.stderr).toBe(0)
        expect(printed(rejected.stdout)).toMatchObject({ withdrawal_id: rejectedId, status: "REJECTED", approvals: [] })
        expect(yield* stored(rejectedId)).toEqual({
          row: { status: "REJECTED", decided_by: "ops-cli", decided_from: HOST, decision_reason: "unknown recipient" },
          approvals: []
        })
        expect(yield* balances(merchantId)).toEqual({ available: "900", locked: "100" })

        const cancelled = yield* cli("cancel", cancelledId, "--by", "ops-cli")
        expect(cancelled.code, cancelled.stderr).toBe(0)
        expect(printed(cancelled.stdout)).toMatchObject({ withdrawal_id: cancelledId, status: "CANCELLED" })
        expect(yield* balances(merchantId)).toEqual({ available: "1000", locked: "0" })

        const unlocks = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{ reference: string; kind: string; amount: string }>`
            SELECT reference, kind, trim_scale(amount)::text AS amount FROM ledger_transfers
            WHERE reference IN (${rejectedId}, ${cancelledId}) AND kind <> 'withdrawal_lock' ORDER BY kind`
        ).pipe(Effect.orDie)
        expect(unlocks).toEqual([
          { reference: cancelledId, kind: "withdrawal_cancelled", amount: "100000000" },
          { reference: rejectedId, kind: "withdrawal_rejected", amount: "100000000" }
        ])
        expect(yield* auditedAs(merchantId, "ops-cli")).toEqual([
          { action: "withdrawal.rejected", subject: rejectedId, kind: "operator", from: HOST },
          { action: "withdrawal.cancelled", subject: cancelledId, kind: "operator", from: HOST }
        ])

        // --reason is required to reject: a usage error naming it, nothing decided
        const pending = yield* pendingWithdrawal(merchantId)
        const noReason = yield* cli("reject", pending, "--by", "ops-cli")
        expect([noReason.code, noReason.stdout + noReason.stderr]).toEqual([2, expect.stringContaining("--reason")])
        // an empty operator name would be recorded as nobody: refused, naming --by
        const nobody = yield* cli("reject", pending, "--by", " ", "--reason", "r")
        expect([nobody.code, nobody.stdout + nobody.stderr]).toEqual([2, expect.stringContaining("--by")])
        expect((yield* stored(pending)).row?.status).toBe("PENDING")
      })
    )

    it.effect(
      "what the rules refuse is exit 2 with the refusal naming the withdrawal (not found, not pending, a second operator approval, a console login as --by, the policy in force); nothing changes",
      () =>
        Effect.gen(function* () {
          const merchantId = yield* merchantWithAvailable("1000")
          const refusal = (args: ReadonlyArray<string>, message: string) =>
            Effect.gen(function* () {
              const result = yield* cli(...args)
              expect({ code: result.code, stderr: result.stderr, stdout: result.stdout }).toEqual({
                code: 2,
                stderr: message,
                stdout: ""
              })
            })

          yield* refusal(["approve", "wdr_missing", "--by", "ops-cli"], "withdrawal wdr_missing not found")
          yield* refusal(
            ["reject", "wdr_missing", "--by", "ops-cli", "--reason", "r"],
            "withdrawal wdr_missing not found"
          )

          // decided already: every decision on it is refused, naming it and its status
          const decided = yield* pendingWithdrawal(merchantId)
          expect((yield* cli("approve", decided, "--by", "ops-cli")).code).toBe(0)
          yield* refusal(
            ["approve", decided, "--by", "ops-cli"],
            `withdrawal ${decided} is APPROVED: only a PENDING withdrawal can be approved`
          )
          yield* refusal(
            ["reject", decided, "--by", "ops-cli", "--reason", "too late"],
            `withdrawal ${decided} is APPROVED: only a PENDING withdrawal can be rejected`
          )
          expect(yield* stored(decided)).toMatchObject({ row: { status: "APPROVED" }, approvals: [{}] })
          expect(yield* balances(merchantId)).toEqual({ available: "900", locked: "100" })

          // a quorum of two: the operator's approval counts once, the rest must come from console users
          yield* Effect.flatMap(WithdrawalPolicy, (policy) =>
            policy.change(merchantId, [{ setting: "quorum", value: "2" }], {
              kind: "operator",
              name: "ops",
              from: "test"
            })
          )
          const quorum = yield* pendingWithdrawal(merchantId)
          const first = yield* cli("approve", quorum, "--by", "ops-cli")
          expect(first.code, first.stderr).toBe(0)
          expect(first.stderr).toBe("approval recorded: 1 of 2; it stays PENDING until the quorum is reached")
          expect(printed(first.stdout)).toMatchObject({ status: "PENDING", required_approvals: 2 })
          yield* refusal(
            ["approve", quorum, "--by", "ops-other"],
            `withdrawal ${quorum} already has an operator or policy approval; at most one counts: the rest of the quorum must come from console users`
          )
          expect(yield* stored(quorum)).toMatchObject({
            row: { status: "PENDING", decided_by: null },
            approvals: [{ approved_by: "ops-cli" }]
          })

          // a console user's login is not an operator's name
          yield* Effect.flatMap(ConsoleStore, (store) =>
            store.insertUser({
              id: newId("usr"),
              merchantId,
              loginName: "dana",
              passwordHash: "not-a-hash",
              role: "owner"
            })
          ).pipe(Effect.orDie)
          const posing = yield* pendingWithdrawal(merchantId)
          yield* refusal(
            ["approve", posing, "--by", "dana"],
            "dana is a console user of this merchant: the operator CLI decides as the operator, under the operator's own name; dana decides in the console"
          )
          expect(yield* stored(posing)).toMatchObject({ row: { status: "PENDING" }, approvals: [] })

          // the policy in force at the approval, not at the creation: a limit tightened since refuses it
          yield* Effect.flatMap(WithdrawalPolicy, (policy) =>
            policy.change(merchantId, [{ setting: "per_tx:TRC20-USDT", value: "50" }], {
              kind: "operator",
              name: "ops",
              from: "test"
            })
          )
          yield* refusal(
            ["approve", posing, "--by", "ops-cli"],
            `the withdrawal policy in force now refuses approving ${posing}: 100.000000 USDT passes the per-withdrawal limit of 50 USDT on TRC20: at most 50 per withdrawal`
          )
          expect(yield* stored(posing)).toMatchObject({ row: { status: "PENDING" }, approvals: [] })
          // still pending: locked, three of them (the approved one stays locked until it is sent)
          expect(yield* balances(merchantId)).toEqual({ available: "700", locked: "300" })
        })
    )

    it.effect(
      "auto-approve: sets and switches off the merchant's daily limit as it says, audited as the operator's; an asset not enrolled is exit 2",
      () =>
        Effect.gen(function* () {
          const merchantId = yield* merchantWithAvailable("0")
          const limit = Effect.flatMap(AssetStore, (store) =>
            store.lockAutoApprovalLimit(merchantId, "TRC20", "USDT")
          ).pipe(Effect.orDie)
          expect(yield* limit).toEqual(Option.none())
          const autoApprove = (asset: string, daily: string) =>
            cli("auto-approve", "--merchant", merchantId, "--asset", asset, "--daily", daily, "--by", "ops-cli")

          const set = yield* autoApprove("trc20-usdt", "250.5")
          expect(set.code, set.stderr).toBe(0)
          expect(set.stdout).toBe(`auto-approval of TRC20-USDT for ${merchantId}: up to 250.5 per rolling 24 h`)
          expect(yield* limit).toEqual(Option.some("250.5"))

          const off = yield* autoApprove("TRC20-USDT", "off")
          expect(off.code, off.stderr).toBe(0)
          expect(off.stdout).toBe(`auto-approval of TRC20-USDT for ${merchantId}: off`)
          expect(yield* limit).toEqual(Option.none())
          expect(yield* auditedAs(merchantId, "ops-cli")).toEqual([
            { action: "policy.changed", subject: "auto_approve:TRC20-USDT", kind: "operator", from: HOST },
            { action: "policy.changed", subject: "auto_approve:TRC20-USDT", kind: "operator", from: HOST }
          ])

          // POLYGON-USDT is no default asset: the merchant has not enrolled it
          const notEnrolled = yield* autoApprove("POLYGON-USDT", "100")
          expect([notEnrolled.code, notEnrolled.stderr, notEnrolled.stdout]).toEqual([
            2,
            `merchant ${merchantId} has no asset POLYGON-USDT enrolled`,
            ""
          ])
          const malformed = yield* autoApprove("TRC20-USDT", "lots")
          expect([malformed.code, malformed.stdout + malformed.stderr]).toEqual([
            2,
            expect.stringContaining("--daily lots: expected an amount above 0 such as 100, or off")
          ])
          // no limit is not a limit of 0 (the database refuses one: a defect, exit 1, before the flag named it)
          for (const daily of ["0", "0.000"]) {
            const zero = yield* autoApprove("TRC20-USDT", daily)
            expect([zero.code, zero.stdout + zero.stderr]).toEqual([
              2,
              expect.stringContaining(`--daily ${daily}: expected an amount above 0 such as 100, or off`)
            ])
          }
          expect(yield* limit).toEqual(Option.none())
          expect(yield* auditedAs(merchantId, "ops-cli")).toHaveLength(2)
        })
    )
  })
})
