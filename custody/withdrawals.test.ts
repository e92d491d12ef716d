import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { clientOf, ledgerBalances, merchantWithFunds, untilWithdrawal } from "../test/custody-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { ledgerIntegrity } from "../test/ledger-integrity.js"
import { eventually } from "../test/webhook-receiver.js"
import { webhookProblem } from "../test/webhook-bodies.js"
import { Keypair } from "@solana/web3.js"
import { AppConfig } from "../src/config.js"
import { sendTransfer } from "../src/chains/chain-client.js"
import { fundNative } from "../src/devnet/evm/anvil-devnet.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { MoneyDecimal, toBaseUnits } from "../src/money.js"
import { Wallets } from "../src/wallets/wallets.js"
import { Accounts, Ledger } from "../src/ledger/ledger.js"
import { readDevnetFile } from "../test/service-process.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"

// a transfer waits 3 s for a network fee above its cap to fall before it fails (60 minutes in production)
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_FEE_WAIT_MINUTES: "0.05" } })

const post = (apiKey: string, path: string, json: unknown, headers: Record<string, string> = {}) =>
  Effect.flatMap(TestClient, (c) => c.request("POST", path, { apiKey, json, headers }))
const get = (apiKey: string, path: string) => Effect.flatMap(TestClient, (c) => c.request("GET", path, { apiKey }))

// a fresh external recipient per chain (valid, not one of ours)
const RECIPIENT: Record<"TRC20" | "BEP20", string> = {
  TRC20: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy",
  BEP20: "0x8ba1f109551bD432803012645Ac136ddd64DBA72"
}

describe("withdrawals on the devnets", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "240 seconds" })((it) => {
    it.effect(
      "TRC20 USDT: quote → create (locked, idempotent) → approved by a human → exactly the net amount on chain → COMPLETED with its webhook",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const decisions = yield* WithdrawalDecisions
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "1000")
          const quote = yield* post(apiKey, "/v1/withdrawal-fee-quote", {
            chain: "TRC20",
            currency: "USDT",
            amount: "100"
          })
          expect(quote.status, quote.text).toBe(200)
          expect(asRecord(quote.body)).toMatchObject({
            chain: "TRC20",
            currency: "USDT",
            fee_currency: "USDT",
            amount: "100.000000",
            platform_fee: "0.100000",
            platform_fee_bps: 10,
            network_fee_asset: "TRX",
            network_fee_included: false,
            total_fee: "0.100000",
            net_amount: "99.900000",
            policy_version: "2026-07-19.1"
          })
          expect(String(asRecord(quote.body).network_fee)).toMatch(/^\d+\.\d{6}$/)

          const body = {
            chain: "TRC20",
            currency: "USDT",
            amount: "100",
            to_address: RECIPIENT.TRC20,
            out_withdrawal_no: "payout-1"
          }
          const created = yield* post(apiKey, "/v1/withdrawals", body, { "x-service-idempotency-key": "wd-key-1" })
          expect(created.status, created.text).toBe(201)
          const withdrawal = asRecord(created.body)
          expect(withdrawal).toMatchObject({
            status: "PENDING",
            amount: "100.000000",
            net_amount: "99.900000",
            fee_policy_version: "2026-07-19.1",
            tx_hash: null
          })
          const again = yield* post(apiKey, "/v1/withdrawals", body, { "x-service-idempotency-key": "wd-key-1" })
          expect(again.status).toBe(201)
          expect(asRecord(again.body).withdrawal_id).toBe(withdrawal.withdrawal_id)
          expect(
            (yield* post(
              apiKey,
              "/v1/withdrawals",
              { ...body, amount: "101" },
              { "x-service-idempotency-key": "wd-key-1" }
            )).status
          ).toBe(409)
          expect((yield* post(apiKey, "/v1/withdrawals", body)).status).toBe(409)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toEqual({
            uncollected: "0",
            available: "900",
            locked: "100"
          })

          // a human approves (the console's service; here as the operator CLI calls it)
          yield* decisions.decide(String(withdrawal.withdrawal_id), "APPROVED", {
            kind: "operator",
            by: "owner@test",
            from: "test"
          })
          const done = yield* untilWithdrawal(apiKey, String(withdrawal.withdrawal_id), ["COMPLETED", "FAILED"])
          expect(done, JSON.stringify(done)).toMatchObject({
            status: "COMPLETED",
            tx_hash: expect.stringMatching(/^[0-9a-f]{64}$/)
          })
          const tron = yield* clientOf("TRC20")
          expect(yield* tron.balance(RECIPIENT.TRC20, "USDT")).toBe(99_900_000n)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toEqual({
            uncollected: "0",
            available: "900",
            locked: "0"
          })
          const [fees] = yield* sql<{ amount: string }>`
          SELECT trim_scale(amount)::text AS amount FROM ledger_transfers WHERE reference = ${String(withdrawal.withdrawal_id)} AND kind = 'platform_fee'`
          expect(fees?.amount).toBe("100000")
          const [event] = yield* sql<{ idempotency_key: string; body: string }>`
          SELECT idempotency_key, body FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.withdrawal.completed'`
          expect(event?.idempotency_key).toBe(
            `wallet.withdrawal.completed:${String(withdrawal.withdrawal_id)}:${String(done.tx_hash)}`
          )
          expect(
            webhookProblem("wallet.withdrawal.completed", event?.idempotency_key ?? "", event?.body ?? "")
          ).toBeUndefined()
          expect(JSON.parse(event?.body ?? "{}")).toMatchObject({
            event: "wallet.withdrawal.completed",
            withdrawal: { status: "COMPLETED", net_amount: "99.900000" }
          })
          const listed = asRecord((yield* get(apiKey, `/v1/transactions?q=${String(withdrawal.withdrawal_id)}`)).body)
          expect(listed.items).toMatchObject([
            { type: "withdrawal", status: "confirmed", withdrawal_id: withdrawal.withdrawal_id, amount: "99.9" }
          ])
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
        })
    )

    it.effect(
      "BEP20 BNB: a native withdrawal pays its network fee out of the amount; reject and cancel unlock; bad requests lock nothing",
      () =>
        Effect.gen(function* () {
          const decisions = yield* WithdrawalDecisions
          const { apiKey, merchantId, receive } = yield* merchantWithFunds("BEP20", "BNB", "2")
          const before = yield* ledgerBalances(merchantId, "BEP20", "BNB")
          const available = String(before?.available)
          const refusals: ReadonlyArray<[unknown, number, RegExp]> = [
            [
              { chain: "BEP20", currency: "BNB", amount: "100", to_address: RECIPIENT.BEP20 },
              400,
              /available .* is less than 100/
            ],
            [
              {
                chain: "BEP20",
                currency: "BNB",
                amount: "0.1",
                to_address: "0x8ba1f109551bd432803012645ac136ddd64dBA72"
              },
              400,
              /EIP-55/
            ],
            [
              { chain: "BEP20", currency: "BNB", amount: "0.1", to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" },
              400,
              /not a BEP20 address/
            ],
            [
              { chain: "BEP20", currency: "BNB", amount: "0.123456789", to_address: RECIPIENT.BEP20 },
              400,
              /more than 8 fractional digits/
            ],
            [{ chain: "BEP20", currency: "BNB", amount: "0.00000001", to_address: RECIPIENT.BEP20 }, 400, /net amount/],
            [
              { chain: "BEP20", currency: "BNB", amount: "0.1", to_address: receive.address },
              400,
              /own receive address/
            ],
            [
              { chain: "BEP20", currency: "BNB", amount: "0.1", to_address: RECIPIENT.BEP20, network_fee: "0" },
              400,
              /network_fee/
            ],
            [
              { chain: "SOLANA", currency: "USDT", amount: "1", to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" },
              400,
              /deposit_live/
            ]
          ]
          for (const [json, status, message] of refusals) {
            const res = yield* post(apiKey, "/v1/withdrawals", json)
            expect(res.status, `${JSON.stringify(json)}: ${res.text}`).toBe(status)
            expect(String(asRecord(res.body).error)).toMatch(message)
          }
          expect(yield* ledgerBalances(merchantId, "BEP20", "BNB")).toEqual(before)

          const create = (amount: string) =>
            Effect.map(
              post(apiKey, "/v1/withdrawals", { chain: "BEP20", currency: "BNB", amount, to_address: RECIPIENT.BEP20 }),
              (r) => asRecord(r.body)
            )
          const rejected = yield* create("0.2")
          const cancelled = yield* create("0.3")
          yield* decisions.decide(String(rejected.withdrawal_id), "REJECTED", {
            kind: "operator",
            by: "owner@test",
            from: "test",
            reason: "not ours"
          })
          yield* decisions.decide(String(cancelled.withdrawal_id), "CANCELLED", {
            kind: "operator",
            by: "owner@test",
            from: "test"
          })
          expect(yield* ledgerBalances(merchantId, "BEP20", "BNB")).toEqual(before)
          expect(
            (yield* Effect.either(
              decisions.decide(String(rejected.withdrawal_id), "APPROVED", { kind: "operator", by: "x", from: "test" })
            ))._tag
          ).toBe("Left")

          const sent = yield* create("0.5")
          expect(sent).toMatchObject({
            network_fee_included: true,
            network_fee_asset: "BNB",
            platform_fee: "0.00050000"
          })
          const bnb = yield* clientOf("BEP20")
          const recipientBefore = yield* bnb.balance(RECIPIENT.BEP20, "BNB")
          yield* decisions.decide(String(sent.withdrawal_id), "APPROVED", {
            kind: "operator",
            by: "owner@test",
            from: "test"
          })
          const done = yield* untilWithdrawal(apiKey, String(sent.withdrawal_id), ["COMPLETED", "FAILED"])
          expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
          const net = toBaseUnits(String(done.net_amount), 18)
          expect((yield* bnb.balance(RECIPIENT.BEP20, "BNB")) - recipientBefore).toBe(net)
          // the merchant paid the amount less the unburned part of the quoted network fee; nothing stays locked
          const after = yield* ledgerBalances(merchantId, "BEP20", "BNB")
          expect(after?.locked).toBe("0")
          const paid = new MoneyDecimal(available).minus(after?.available ?? "0")
          expect(paid.lessThanOrEqualTo("0.5")).toBe(true)
          expect(paid.greaterThan(new MoneyDecimal("0.5").minus(String(done.network_fee)))).toBe(true)
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
        })
    )

    // the review's finding: signed at whatever the node said, up to 72 h after the quote, a native withdrawal
    // approved after a fee rise burned more than it locked and posted `locked: -0.03214986`
    it.effect(
      "BEP20 BNB: a native withdrawal whose network fee now costs more than its quote is never signed; after the wait it FAILS and unlocks; locked can never go negative",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const decisions = yield* WithdrawalDecisions
          const ledger = yield* Ledger
          const { apiKey, merchantId } = yield* merchantWithFunds("BEP20", "BNB", "1")
          const before = yield* ledgerBalances(merchantId, "BEP20", "BNB")
          const created = asRecord(
            (yield* post(apiKey, "/v1/withdrawals", {
              chain: "BEP20",
              currency: "BNB",
              amount: "0.3",
              to_address: RECIPIENT.BEP20
            })).body
          )
          const id = String(created.withdrawal_id)
          // the quote of a far cheaper hour: the fee now is thousands of times it
          yield* sql`UPDATE withdrawals SET network_fee = 0.00000001 WHERE id = ${id}`
          yield* decisions.decide(id, "APPROVED", { kind: "operator", by: "owner@test", from: "test" })
          const done = yield* untilWithdrawal(apiKey, id, ["COMPLETED", "FAILED"])
          expect(done.status, JSON.stringify(done)).toBe("FAILED")
          expect(String(done.failure_reason)).toMatch(
            /the network fee stayed above its cap for 3s: BEP20: the transfer would cost up to \d+ at \d+ per unit, above its cap of 10000000000 at/
          )
          expect(done.tx_hash).toBeNull()
          expect(
            yield* sql`SELECT 1 FROM custody_transactions t JOIN withdrawals w ON w.operation_id = t.operation_id WHERE w.id = ${id}`
          ).toHaveLength(0)
          expect(yield* ledgerBalances(merchantId, "BEP20", "BNB")).toEqual(before)

          // and whatever the code: the database refuses a transfer that would take locked below zero
          const overdraw = yield* Effect.either(
            sql.withTransaction(
              ledger.post([
                {
                  debit: Accounts.locked(merchantId),
                  credit: Accounts.chain,
                  chain: "BEP20",
                  currency: "BNB",
                  amount: 1n,
                  kind: "withdrawal",
                  reference: id
                }
              ])
            )
          )
          const refusal = overdraw._tag === "Left" ? overdraw.left.cause : "posted"
          expect(refusal instanceof Error ? refusal.message : String(refusal)).toMatch(
            /ledger_balances_merchant_not_negative: locked:.* would be -1/
          )
          expect(yield* ledgerBalances(merchantId, "BEP20", "BNB")).toEqual(before)
        })
    )

    for (const [chain, currency, deposit, amount] of [
      ["BEP20", "USDT", "500", "120"],
      ["TRC20", "TRX", "300", "50"],
      ["SOLANA", "USDT", "400", "150"]
    ] as const) {
      it.effect(
        `${chain} ${currency}: deposit → sweep → quote → create → approve → exactly the net amount at the recipient → COMPLETED`,
        () =>
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const decisions = yield* WithdrawalDecisions
            if (chain === "SOLANA") {
              yield* sql`UPDATE wallet_asset_policies SET status = 'live', can_collect = true, can_withdraw = true, signing_implemented = true WHERE chain = 'SOLANA' AND currency = 'USDT'`
            }
            const { apiKey, merchantId } = yield* merchantWithFunds(chain, currency, deposit)
            const recipient =
              chain === "SOLANA"
                ? Keypair.generate().publicKey.toBase58()
                : chain === "TRC20"
                  ? "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE"
                  : RECIPIENT.BEP20
            const client = yield* clientOf(chain)
            const before = yield* client.balance(recipient, currency)
            const created = yield* post(apiKey, "/v1/withdrawals", { chain, currency, amount, to_address: recipient })
            expect(created.status, created.text).toBe(201)
            const id = String(asRecord(created.body).withdrawal_id)
            yield* decisions.decide(id, "APPROVED", { kind: "operator", by: "owner@test", from: "test" })
            const done = yield* untilWithdrawal(apiKey, id, ["COMPLETED", "FAILED"])
            if (chain === "SOLANA") {
              yield* sql`UPDATE wallet_asset_policies SET status = 'deposit_live', can_collect = false, can_withdraw = false, signing_implemented = false WHERE chain = 'SOLANA' AND currency = 'USDT'`
            }
            expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
            const decimals = chain === "BEP20" ? 18 : 6
            expect((yield* client.balance(recipient, currency)) - before).toBe(
              toBaseUnits(String(done.net_amount), decimals)
            )
            expect((yield* ledgerBalances(merchantId, chain, currency))?.locked).toBe("0")
            expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
          })
      )
    }

    it.effect("fifty concurrent creations against a balance that covers ten: exactly ten, nothing overdrawn", () =>
      Effect.gen(function* () {
        const { apiKey, merchantId } = yield* merchantWithFunds("BEP20", "USDT", "100")
        const results = yield* Effect.forEach(
          Array.from({ length: 50 }, (_, i) => i),
          () =>
            post(apiKey, "/v1/withdrawals", {
              chain: "BEP20",
              currency: "USDT",
              amount: "10",
              to_address: RECIPIENT.BEP20
            }),
          { concurrency: 50 }
        )
        expect(results.filter((r) => r.status === 201).length).toBe(10)
        expect(results.filter((r) => r.status === 400).length).toBe(40)
        expect(yield* ledgerBalances(merchantId, "BEP20", "USDT")).toEqual({
          uncollected: "0",
          available: "0",
          locked: "100"
        })
      })
    )

    it.effect(
      "a main wallet that holds less on chain than the ledger says: FAILED before anything is signed, unlocked, webhook",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const decisions = yield* WithdrawalDecisions
          const wallets = yield* Wallets
          const { apiKey, merchantId } = yield* merchantWithFunds("BEP20", "USDT", "300")
          // the main wallet's tokens leave behind the ledger's back (its own key moves them)
          const main = yield* wallets.mainWallet(merchantId, "BEP20")
          const bep20 = yield* clientOf("BEP20")
          const devnet = yield* Effect.flatMap(AppConfig, (config) => readDevnetFile(config.dataDir))
          if (isHexAddress(main.address)) yield* fundNative(devnet.bep20.rpcUrl, main.address, 10n ** 17n)
          yield* sendTransfer(bep20, {
            from: main.key,
            to: RECIPIENT.BEP20,
            currency: "USDT",
            amount: 300n * 10n ** 18n
          })
          yield* eventually(bep20.balance(main.address, "USDT"), (b) => b === 0n, 10_000)
          const created = asRecord(
            (yield* post(apiKey, "/v1/withdrawals", {
              chain: "BEP20",
              currency: "USDT",
              amount: "50",
              to_address: RECIPIENT.BEP20
            })).body
          )
          yield* decisions.decide(String(created.withdrawal_id), "APPROVED", {
            kind: "operator",
            by: "owner@test",
            from: "test"
          })
          const done = yield* untilWithdrawal(apiKey, String(created.withdrawal_id), ["COMPLETED", "FAILED"])
          expect(done).toMatchObject({ status: "FAILED", tx_hash: null })
          expect(String(done.failure_reason)).toMatch(/holds 0 USDT on chain/)
          expect(yield* ledgerBalances(merchantId, "BEP20", "USDT")).toEqual({
            uncollected: "0",
            available: "300",
            locked: "0"
          })
          const [event] = yield* sql<{ idempotency_key: string }>`
          SELECT idempotency_key FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.withdrawal.failed'`
          expect(event?.idempotency_key).toBe(`wallet.withdrawal.failed:${String(created.withdrawal_id)}:`)
        })
    )

    it.effect("the optional auto-approval policy approves within its daily limit and leaves the rest to a human", () =>
      Effect.gen(function* () {
        const decisions = yield* WithdrawalDecisions
        const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "400")
        yield* decisions.setAutoApproval(merchantId, "TRC20", "USDT", Option.some("150"), {
          kind: "operator",
          by: "ops@test",
          from: "test"
        })
        const create = (amount: string) =>
          Effect.map(
            post(apiKey, "/v1/withdrawals", { chain: "TRC20", currency: "USDT", amount, to_address: RECIPIENT.TRC20 }),
            (r) => asRecord(r.body)
          )
        const first = yield* create("100")
        expect(first.status).toBe("APPROVED")
        const second = yield* create("100")
        expect(second.status).toBe("PENDING")
        const done = yield* untilWithdrawal(apiKey, String(first.withdrawal_id), ["COMPLETED", "FAILED"])
        expect(done.status).toBe("COMPLETED")
        expect(asRecord((yield* get(apiKey, `/v1/withdrawals/${String(second.withdrawal_id)}`)).body).status).toBe(
          "PENDING"
        )
        const listed = asRecord((yield* get(apiKey, "/v1/withdrawals?status=PENDING")).body)
        expect(listed).toMatchObject({ total: 1, items: [{ withdrawal_id: second.withdrawal_id }] })
      })
    )

    it.effect(
      "a transfer the token refuses on chain (a blacklisted sender) → FAILED, unlocked, webhook; an undecided one expires",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const decisions = yield* WithdrawalDecisions
          const wallets = yield* Wallets
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "300")
          const created = asRecord(
            (yield* post(apiKey, "/v1/withdrawals", {
              chain: "TRC20",
              currency: "USDT",
              amount: "100",
              to_address: RECIPIENT.TRC20
            })).body
          )
          const main = yield* wallets.mainWallet(merchantId, "TRC20")
          const devnet = yield* Effect.flatMap(AppConfig, (config) => readDevnetFile(config.dataDir))
          yield* Effect.promise(() =>
            fetch(`${devnet.tron.url}/devnet/blacklist`, {
              method: "POST",
              body: JSON.stringify({ address: main.address })
            })
          )
          yield* decisions.decide(String(created.withdrawal_id), "APPROVED", {
            kind: "operator",
            by: "owner@test",
            from: "test"
          })
          const done = yield* untilWithdrawal(apiKey, String(created.withdrawal_id), ["COMPLETED", "FAILED"])
          expect(done, JSON.stringify(done)).toMatchObject({
            status: "FAILED",
            tx_hash: expect.stringMatching(/^[0-9a-f]{64}$/)
          })
          expect(String(done.failure_reason)).toMatch(/failed on chain/)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toEqual({
            uncollected: "0",
            available: "300",
            locked: "0"
          })
          const [event] = yield* sql<{ idempotency_key: string; body: string }>`
          SELECT idempotency_key, body FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.withdrawal.failed'`
          expect(event?.idempotency_key).toBe(
            `wallet.withdrawal.failed:${String(created.withdrawal_id)}:${String(done.tx_hash)}`
          )
          expect(
            webhookProblem("wallet.withdrawal.failed", event?.idempotency_key ?? "", event?.body ?? "")
          ).toBeUndefined()

          // nobody decides the next one: past FACET_WITHDRAWAL_PENDING_HOURS it is cancelled and unlocked
          const idle = asRecord(
            (yield* post(apiKey, "/v1/withdrawals", {
              chain: "TRC20",
              currency: "USDT",
              amount: "50",
              to_address: RECIPIENT.TRC20
            })).body
          )
          yield* sql`UPDATE withdrawals SET created_at = created_at - interval '73 hours' WHERE id = ${String(idle.withdrawal_id)}`
          expect(yield* decisions.expire()).toBe(1)
          expect(asRecord((yield* get(apiKey, `/v1/withdrawals/${String(idle.withdrawal_id)}`)).body).status).toBe(
            "CANCELLED"
          )
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toEqual({
            uncollected: "0",
            available: "300",
            locked: "0"
          })
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
        })
    )
  })
})
