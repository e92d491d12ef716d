import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Keypair } from "@solana/web3.js"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import type { Chain } from "../src/domain/chain.js"
import { evmAddress, tronAddress } from "../src/keys/address-encoding.js"
import { MoneyDecimal, toBaseUnits } from "../src/money.js"
import { clientOf, ledgerBalances, merchantWithFunds, pay, untilWithdrawal } from "../test/custody-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"

/**
 * Issue #46, defect 8: a fee quote below the fee charged. The quote took no destination and priced a
 * recipient that already held the token (TRON: ~64k energy), while a recipient that never held it costs
 * about twice that (~130k): quoted 8.83 TRX, stored 17.41 TRX a second later. A quote is now what the
 * withdrawal to its destination is charged (`fee_kind: "exact"`), or, without one, the most any recipient
 * costs (`"upper_bound"`); and a withdrawal is never charged more than its fees say.
 */

const ServiceLive = TestAppLive({}, { chains: "devnet" })

const post = (apiKey: string, path: string, json: unknown) =>
  Effect.flatMap(TestClient, (c) => c.request("POST", path, { apiKey, json }))

const quote = (apiKey: string, json: Record<string, string>) =>
  Effect.map(post(apiKey, "/v1/withdrawal-fee-quote", json), (r) => {
    expect(r.status, r.text).toBe(200)
    return asRecord(r.body)
  })

const create = (apiKey: string, json: Record<string, string>) =>
  Effect.map(post(apiKey, "/v1/withdrawals", json), (r) => {
    expect(r.status, r.text).toBe(201)
    return asRecord(r.body)
  })

/** A person approves it; it ends COMPLETED. */
const completed = (apiKey: string, withdrawal: Record<string, unknown>) =>
  Effect.gen(function* () {
    const id = String(withdrawal.withdrawal_id)
    yield* (yield* WithdrawalDecisions).decide(id, "APPROVED", { kind: "operator", by: "owner@test", from: "test" })
    const done = yield* untilWithdrawal(apiKey, id, ["COMPLETED", "FAILED"])
    expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
    return done
  })

/** The figures a quote gives and a withdrawal keeps. */
const FEE_FIELDS = [
  "amount",
  "platform_fee",
  "network_fee",
  "network_fee_asset",
  "network_fee_included",
  "total_fee",
  "net_amount"
] as const
const feesOf = (record: Record<string, unknown>) => Object.fromEntries(FEE_FIELDS.map((k) => [k, record[k]]))

const decimal = (value: unknown) => new MoneyDecimal(String(value))

/** What custody's own transfer of a withdrawal cost on chain (its fee, and a token account's rent), in base units. */
const spentOnNetwork = (withdrawalId: unknown) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ spent: string }>`
        SELECT coalesce(sum(t.amount), 0)::text AS spent FROM ledger_transfers t
        JOIN custody_operations o ON o.id = t.reference
        WHERE o.withdrawal_id = ${String(withdrawalId)} AND t.kind IN ('network_fee', 'rent')`,
      (rows) => BigInt(new MoneyDecimal(rows[0]?.spent ?? "0").toFixed(0))
    )
  )

/** A valid address of the chain nobody holds a key to: it never held anything. */
const freshAddress = (chain: Chain) =>
  chain === "TRC20"
    ? tronAddress(randomBytes(20))
    : chain === "BEP20"
      ? evmAddress(randomBytes(20))
      : Keypair.generate().publicKey.toBase58()

/** An external address that holds some of the asset already (a customer pays it). */
const holderOf = (chain: Chain, currency: string, amount: string) =>
  Effect.gen(function* () {
    const address = freshAddress(chain)
    yield* pay(`${chain}-${currency}`, address, amount)
    const client = yield* clientOf(chain)
    yield* eventually(client.balance(address, currency), (b) => b > 0n, 30_000)
    return address
  })

/**
 * Runs `effect` again until it ran within one BEP20 block: the devnet's gas price moves with every block
 * (an empty one lowers the base fee), so two fees compare only when read at one price.
 */
const withinOneBlock = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const bsc = yield* clientOf("BEP20")
    for (let attempt = 1; ; attempt++) {
      const before = yield* bsc.head
      const value = yield* effect
      if ((yield* bsc.head) === before || attempt >= 5) return value
    }
  })

describe("a withdrawal fee quote is what the withdrawal is charged, or a stated upper bound", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "300 seconds" })((it) => {
    it.effect(
      "TRC20 USDT: without a destination the quote is the upper bound (a recipient that never held USDT, about twice the energy) and says so; with one it is exactly the withdrawal's fees; the transfer costs no more",
      () =>
        Effect.gen(function* () {
          const { apiKey } = yield* merchantWithFunds("TRC20", "USDT", "300")
          const ask = { chain: "TRC20", currency: "USDT", amount: "50" }
          const fresh = freshAddress("TRC20")

          // the case: the quote first, then a withdrawal to a recipient that never held USDT
          const bound = yield* quote(apiKey, ask)
          const toFresh = yield* create(apiKey, { ...ask, to_address: fresh })
          expect(
            decimal(bound.network_fee).greaterThanOrEqualTo(decimal(toFresh.network_fee)),
            `quoted ${String(bound.network_fee)} TRX, stored ${String(toFresh.network_fee)} TRX`
          ).toBe(true)
          expect(bound.fee_kind).toBe("upper_bound")
          expect(bound).not.toHaveProperty("to_address")
          // the bound is the dearer case itself, not a guess above it
          expect(bound.network_fee).toBe(toFresh.network_fee)

          // with a destination: exact, for a fresh recipient and for one that holds USDT
          const holder = yield* holderOf("TRC20", "USDT", "1")
          const forFresh = yield* quote(apiKey, { ...ask, to_address: fresh })
          const forHolder = yield* quote(apiKey, { ...ask, to_address: holder })
          expect(forFresh).toMatchObject({ fee_kind: "exact", to_address: fresh })
          expect(forHolder).toMatchObject({ fee_kind: "exact", to_address: holder })
          expect(feesOf(forFresh)).toEqual(feesOf(toFresh))
          const toHolder = yield* create(apiKey, { ...ask, to_address: holder })
          expect(feesOf(forHolder)).toEqual(feesOf(toHolder))
          // ~130k energy against ~64k: about twice
          expect(
            decimal(forFresh.network_fee).greaterThan(decimal(forHolder.network_fee).times(1.5)),
            `fresh ${String(forFresh.network_fee)}, holder ${String(forHolder.network_fee)}`
          ).toBe(true)

          // sent: its transfer cost no more than the quote said
          const done = yield* completed(apiKey, toFresh)
          expect(feesOf(done)).toEqual(feesOf(forFresh))
          const spent = yield* spentOnNetwork(done.withdrawal_id)
          expect(spent > 0n).toBe(true)
          expect(spent <= toBaseUnits(String(forFresh.network_fee), 6), `${spent} sun`).toBe(true)
        }),
      { timeout: 180_000 }
    )

    it.effect(
      "TRC20 TRX (network fee included): the payee's net is what the quote said — the upper bound's for a new account, the exact one's for an existing one; the merchant is charged no more",
      () =>
        Effect.gen(function* () {
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "TRX", "300")
          const tron = yield* clientOf("TRC20")
          const ask = { chain: "TRC20", currency: "TRX", amount: "50" }
          const fresh = freshAddress("TRC20")

          const bound = yield* quote(apiKey, ask)
          const toFresh = yield* create(apiKey, { ...ask, to_address: fresh })
          // a new account's creation fee is in the bound: the payee's net is the quote's
          expect(toFresh.net_amount, `quoted ${String(bound.network_fee)}, stored ${String(toFresh.network_fee)}`).toBe(
            bound.net_amount
          )
          expect(bound).toMatchObject({ network_fee_included: true, fee_kind: "upper_bound" })
          expect(feesOf(yield* quote(apiKey, { ...ask, to_address: fresh }))).toEqual(feesOf(toFresh))

          const available = (yield* ledgerBalances(merchantId, "TRC20", "TRX"))?.available ?? "0"
          const done = yield* completed(apiKey, toFresh)
          expect(yield* tron.balance(fresh, "TRX")).toBe(toBaseUnits(String(bound.net_amount), 6))
          // charged: the amount less what of the quoted network fee was not burned, never more
          const after = (yield* ledgerBalances(merchantId, "TRC20", "TRX"))?.available ?? "0"
          const charged = decimal(available).minus(after)
          expect(charged.lessThanOrEqualTo("50"), charged.toFixed()).toBe(true)
          expect(
            (yield* spentOnNetwork(done.withdrawal_id)) <= toBaseUnits(String(bound.network_fee), 6),
            "burned within the quote"
          ).toBe(true)

          // an account that exists: no creation fee, exactly as quoted for it, more for the payee than the bound
          const existing = yield* holderOf("TRC20", "TRX", "1")
          const forExisting = yield* quote(apiKey, { ...ask, to_address: existing })
          expect(forExisting).toMatchObject({ fee_kind: "exact", to_address: existing })
          const toExisting = yield* create(apiKey, { ...ask, to_address: existing })
          expect(feesOf(toExisting)).toEqual(feesOf(forExisting))
          expect(decimal(forExisting.net_amount).greaterThan(decimal(bound.net_amount))).toBe(true)
        }),
      { timeout: 180_000 }
    )

    it.effect(
      "SOLANA USDT: the upper bound pays a new token account's rent; with a destination the rent is in only when its token account does not exist",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const live = (on: boolean) =>
            sql`UPDATE wallet_asset_policies SET status = ${on ? "live" : "deposit_live"}, can_collect = ${on}, can_withdraw = ${on}, signing_implemented = ${on} WHERE chain = 'SOLANA' AND currency = 'USDT'`
          yield* live(true)
          yield* Effect.gen(function* () {
            const { apiKey } = yield* merchantWithFunds("SOLANA", "USDT", "400")
            const ask = { chain: "SOLANA", currency: "USDT", amount: "60" }
            const fresh = freshAddress("SOLANA")
            const holder = yield* holderOf("SOLANA", "USDT", "1")

            const bound = yield* quote(apiKey, ask)
            const forFresh = yield* quote(apiKey, { ...ask, to_address: fresh })
            const forHolder = yield* quote(apiKey, { ...ask, to_address: holder })
            expect(bound.fee_kind).toBe("upper_bound")
            expect(forFresh).toMatchObject({ fee_kind: "exact", to_address: fresh })
            expect(forHolder).toMatchObject({ fee_kind: "exact", to_address: holder })
            expect(bound.network_fee).toBe(forFresh.network_fee)
            // the holder's token account exists: no rent
            expect(decimal(forHolder.network_fee).lessThan(decimal(forFresh.network_fee))).toBe(true)

            const toFresh = yield* create(apiKey, { ...ask, to_address: fresh })
            const toHolder = yield* create(apiKey, { ...ask, to_address: holder })
            expect(feesOf(toFresh)).toEqual(feesOf(forFresh))
            expect(feesOf(toHolder)).toEqual(feesOf(forHolder))

            const done = yield* completed(apiKey, toFresh)
            expect(yield* (yield* clientOf("SOLANA")).balance(fresh, "USDT")).toBe(
              toBaseUnits(String(forFresh.net_amount), 6)
            )
            expect(
              (yield* spentOnNetwork(done.withdrawal_id)) <= toBaseUnits(String(forFresh.network_fee), 9),
              "fee and rent within the quote"
            ).toBe(true)
          }).pipe(Effect.ensuring(Effect.orDie(live(false))))
        }),
      { timeout: 180_000 }
    )

    it.effect(
      "BEP20 USDT and BNB: the upper bound prices a recipient that never held the token; with a destination the quote is the withdrawal's fees; a native's payee gets the quoted net",
      () =>
        Effect.gen(function* () {
          const { apiKey } = yield* merchantWithFunds("BEP20", "USDT", "300")
          const ask = { chain: "BEP20", currency: "USDT", amount: "20" }
          const holder = yield* holderOf("BEP20", "USDT", "1")

          const [bound, fresh, toFresh] = yield* withinOneBlock(
            Effect.gen(function* () {
              const fresh = freshAddress("BEP20")
              return [yield* quote(apiKey, ask), fresh, yield* create(apiKey, { ...ask, to_address: fresh })] as const
            })
          )
          expect(
            decimal(bound.network_fee).greaterThanOrEqualTo(decimal(toFresh.network_fee)),
            `quoted ${String(bound.network_fee)} BNB, stored ${String(toFresh.network_fee)} BNB`
          ).toBe(true)
          expect(bound.fee_kind).toBe("upper_bound")

          const [forFresh, forHolder, toHolder] = yield* withinOneBlock(
            Effect.all([
              quote(apiKey, { ...ask, to_address: fresh }),
              quote(apiKey, { ...ask, to_address: holder }),
              create(apiKey, { ...ask, to_address: holder })
            ])
          )
          expect(forFresh).toMatchObject({ fee_kind: "exact", to_address: fresh })
          expect(forHolder).toMatchObject({ fee_kind: "exact", to_address: holder })
          expect(feesOf(toHolder)).toEqual(feesOf(forHolder))
          // a new holder's balance slot costs more gas than an existing one's
          expect(decimal(forHolder.network_fee).lessThan(decimal(forFresh.network_fee))).toBe(true)

          const done = yield* completed(apiKey, toFresh)
          expect(
            (yield* spentOnNetwork(done.withdrawal_id)) <= toBaseUnits(String(toFresh.network_fee), 18),
            "gas within the stored fee"
          ).toBe(true)

          // a native: the payee gets exactly the net the quote for it said
          const native = yield* merchantWithFunds("BEP20", "BNB", "2")
          const bnb = { chain: "BEP20", currency: "BNB", amount: "0.5" }
          const payee = freshAddress("BEP20")
          const [nativeQuote, nativeWithdrawal] = yield* withinOneBlock(
            Effect.all([
              quote(native.apiKey, { ...bnb, to_address: payee }),
              create(native.apiKey, { ...bnb, to_address: payee })
            ])
          )
          expect(nativeQuote).toMatchObject({ fee_kind: "exact", network_fee_included: true })
          expect(feesOf(nativeWithdrawal)).toEqual(feesOf(nativeQuote))
          yield* completed(native.apiKey, nativeWithdrawal)
          expect(yield* (yield* clientOf("BEP20")).balance(payee, "BNB")).toBe(
            toBaseUnits(String(nativeQuote.net_amount), 18)
          )
        }),
      { timeout: 180_000 }
    )

    it.effect("a quote's destination is checked as a withdrawal's: its chain's format, never one of ours", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        const receive = asRecord(
          (yield* post(apiKey, "/v1/deposit-addresses", { external_user_id: "u1", chain: "TRC20", currency: "USDT" }))
            .body
        )
        const ask = { chain: "TRC20", currency: "USDT", amount: "5" }
        const refusals: ReadonlyArray<[string, RegExp]> = [
          ["0x8ba1f109551bD432803012645Ac136ddd64DBA72", /not a TRON address/],
          [String(receive.address), /own receive address/]
        ]
        for (const [to_address, message] of refusals) {
          const res = yield* post(apiKey, "/v1/withdrawal-fee-quote", { ...ask, to_address })
          expect(res.status, res.text).toBe(400)
          expect(String(asRecord(res.body).error)).toMatch(message)
        }
        expect((yield* post(apiKey, "/v1/withdrawal-fee-quote", { ...ask, to_address: "" })).status).toBe(400)
      })
    )
  })
})
