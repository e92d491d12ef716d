import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Reconciliation } from "../indexer/reconciliation.js"
import { sendTransfer } from "../src/chains/chain-client.js"
import { Wallets } from "../src/wallets/wallets.js"
import { AppConfig } from "../src/config.js"
import type { Chain } from "../src/domain/chain.js"
import { fromBaseUnits, MoneyDecimal, toBaseUnits } from "../src/money.js"
import { readDevnetFile } from "../test/service-process.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { ledgerIntegrity } from "../test/ledger-integrity.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import {
  balances,
  clientOf,
  fundedAddress,
  pay,
  solanaRpc,
  sweep,
  tokenAccountRent,
  untilFinished
} from "../test/custody-flows.js"
import { getAssociatedTokenAddressSync } from "@solana/spl-token"
import { PublicKey } from "@solana/web3.js"

// automatic collection of BEP20 USDT from 5000 (the other tests here deposit less)
const ServiceLive = TestAppLive(
  {},
  { chains: "devnet", env: { FACET_AUTO_SWEEP_BEP20_USDT: "5000", FACET_AUTO_SWEEP_INTERVAL_MS: "500" } }
)

/** A reconciliation run of the chain, once the indexer has passed the final height: no difference. */
const reconciled = (chain: Chain) =>
  Effect.gen(function* () {
    const reconciliation = yield* Reconciliation
    const report = yield* eventually(
      reconciliation.reconcileChain(chain),
      (r) => r.skipped === 0 || r.differences.length > 0,
      20_000
    )
    expect(report.differences).toEqual([])
    expect(report.checked).toBeGreaterThan(0)
  })

describe("collection (sweep) on the devnets", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "240 seconds" })((it) => {
    for (const [chain, native] of [
      ["TRC20", "TRX"],
      ["BEP20", "BNB"]
    ] as const) {
      it.effect(`${chain} USDT: deposit → final → gas funding → sweep → COMPLETED, the ledger moved once`, () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const receive = yield* fundedAddress(apiKey, chain, "USDT", "1000")
          const started = yield* sweep(apiKey, `${chain}-USDT`, { from_wallet_id: receive.walletId })
          expect(started.status, started.text).toBe(200)
          const op = asRecord(started.body)
          expect(op).toMatchObject({
            type: "collection",
            status: "GAS_FUNDING",
            asset_key: `${chain}-USDT`,
            amount: "1000",
            from_wallet_id: receive.walletId
          })

          // a second sweep of the same wallet while this one is in flight
          const second = yield* sweep(apiKey, `${chain}-USDT`, { from_wallet_id: receive.walletId })
          expect(second.status).toBe(409)
          expect(String(asRecord(second.body).error)).toContain(String(op.operation_id))

          const done = yield* untilFinished(apiKey, `${chain}-USDT`, String(op.operation_id))
          expect(done, JSON.stringify(done)).toMatchObject({
            status: "COMPLETED",
            gas_funding: { status: "COMPLETED", asset: native }
          })
          expect(typeof done.tx_hash).toBe("string")

          // on chain: the receive address is empty of USDT, the main address holds it
          const client = yield* clientOf(chain)
          expect(yield* client.balance(receive.address, "USDT")).toBe(0n)
          const units = chain === "TRC20" ? 1_000_000_000n : 1000n * 10n ** 18n
          expect(yield* client.balance(String(done.to_address), "USDT")).toBe(units)
          // the ledger: uncollected → available exactly once
          expect(yield* balances(merchantId, chain, "USDT")).toEqual({ uncollected: "0", available: "1000" })
          const [moves] = yield* sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM ledger_transfers WHERE reference = ${String(op.operation_id)} AND kind = 'collection'`
          expect(moves?.n).toBe(1)
          // the gas sent to the receive address is not a deposit; both custody transactions are listed
          const deposits = yield* sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${receive.walletId} AND type = 'deposit'`
          expect(deposits[0]?.n).toBe(1)
          // and the merchant holds none of that gas: no native balance appeared for it
          expect(yield* balances(merchantId, chain, native)).toBeUndefined()
          const [parked] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM ledger_balances WHERE account = ${`gas:${receive.walletId}`} AND merchant_id IS NULL`
          expect(parked?.n).toBe(1)
          const listed = yield* Effect.flatMap(TestClient, (c) =>
            c.request("GET", `/v1/transactions?q=${receive.address}`, { apiKey })
          )
          const items = asRecord(listed.body).items
          const types = (Array.isArray(items) ? items : [])
            .map((t) => `${asRecord(t).type}:${asRecord(t).status}`)
            .sort()
          expect(types).toEqual(["collection:confirmed", "deposit:confirmed", "gas_funding:confirmed"])
          // the portfolio shows it collected, and the gas wallet it came from
          const portfolio = asRecord(
            (yield* Effect.flatMap(TestClient, (c) => c.request("GET", "/v1/wallet-portfolio", { apiKey }))).body
          )
          const assets = Array.isArray(portfolio.assets) ? portfolio.assets.map(asRecord) : []
          const usdt = assets.find((a) => a.currency === "USDT")
          expect(usdt).toMatchObject({ available_balance: "1000", uncollected_balance: "0", value_usdt: "1000.000000" })
          const networks = Array.isArray(usdt?.networks) ? usdt.networks.map(asRecord) : []
          expect(networks.find((n) => n.chain === chain)).toMatchObject({
            available_balance: "1000",
            main_address: done.to_address,
            gas_asset: native,
            gas_status: "ok"
          })
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
          // operators see it: operations by status and the gas wallets in /health and /metrics
          const health = asRecord((yield* Effect.flatMap(TestClient, (c) => c.request("GET", "/health"))).body)
          const custody = asRecord(health.custody)
          expect(Number(asRecord(custody.operations)["collection:COMPLETED"])).toBeGreaterThanOrEqual(1)
          const gasWallets = Array.isArray(custody.gas_wallets) ? custody.gas_wallets.map(asRecord) : []
          expect(gasWallets.find((g) => g.chain === chain)).toMatchObject({ asset: native, gas_status: "ok" })
          const metrics = (yield* Effect.flatMap(TestClient, (c) => c.request("GET", "/metrics"))).text
          expect(metrics).toMatch(/facet_custody_operations\{type="gas_funding",status="COMPLETED"\} [1-9]/)
          expect(metrics).toContain(`facet_gas_wallet_status{chain="${chain}",status="ok"} 1`)
          expect(metrics).toMatch(/facet_custody_oldest_in_flight_seconds \d+/)
          expect(metrics).toMatch(/facet_custody_transactions\{status="final"\} [1-9]/)
          // reconciliation explains the receive address on chain: the deposit, the gas in, the sweep and its fee out
          yield* reconciled(chain)
        })
      )
    }

    it.effect("automatic collection sweeps a wallet by itself once its uncollected balance passes the threshold", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const receive = yield* fundedAddress(apiKey, "BEP20", "USDT", "6000")
        const [started] = yield* eventually(
          sql<{
            id: string
          }>`SELECT id FROM custody_operations WHERE wallet_id = ${receive.walletId} AND type = 'collection'`,
          (rows) => rows.length > 0,
          10_000
        )
        const done = yield* untilFinished(apiKey, "BEP20-USDT", started?.id ?? "")
        expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
        expect(yield* balances(merchantId, "BEP20", "USDT")).toEqual({ uncollected: "0", available: "6000" })
      })
    )

    it.effect("a sweep whose gas would cost more than 5% of its value is refused with both figures", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const receive = yield* fundedAddress(apiKey, "TRC20", "USDT", "10")
        const res = yield* sweep(apiKey, "TRC20-USDT", { from_wallet_id: receive.walletId })
        expect(res.status).toBe(400)
        // nothing staked: the figures are for TRX burned for the energy, and the refusal says so
        expect(String(asRecord(res.body).error)).toMatch(
          /gas \([\d.]+ TRX ≈ [\d.]+ USDT\) is more than 5% of its value \(10 USDT ≈ 10\.00 USDT\); sweep a larger balance later \(TRX burned for its energy: the stake can lend 0 TRX/
        )
      })
    )

    it.effect("a native sweep (TRX, BNB, once an operator allows it) needs no gas funding and pays its own fee", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const refused = yield* sweep(apiKey, "TRC20-TRX", { from_wallet_id: "wal_nothing" })
        expect(refused.status).toBe(400)
        expect(String(asRecord(refused.body).error)).toContain("does not allow collection")
        yield* sql`UPDATE wallet_asset_policies SET can_collect = true WHERE currency IN ('TRX', 'BNB')`
        for (const [chain, currency, amount] of [
          ["TRC20", "TRX", "100"],
          ["BEP20", "BNB", "1"]
        ] as const) {
          const receive = yield* fundedAddress(apiKey, chain, currency, amount)
          const started = yield* sweep(apiKey, `${chain}-${currency}`, { from_wallet_id: receive.walletId })
          expect(started.status, started.text).toBe(200)
          expect(asRecord(started.body).status).toBe("SWEEPING")
          const done = yield* untilFinished(apiKey, `${chain}-${currency}`, String(asRecord(started.body).operation_id))
          expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
          expect(done.gas_funding).toBeUndefined()
          const client = yield* clientOf(chain)
          const decimals = chain === "TRC20" ? 6 : 18
          const onMain = yield* client.balance(String(done.to_address), currency)
          const left = yield* client.balance(receive.address, currency)
          const fee = BigInt(
            new MoneyDecimal(String(done.network_fee)).times(new MoneyDecimal(10).pow(decimals)).toFixed(0)
          )
          // what the chain shows is what the ledger says: sent to main, burned, and the rest still uncollected
          expect(onMain + left + fee).toBe(toBaseUnits(amount, decimals))
          expect(yield* balances(merchantId, chain, currency)).toEqual({
            available: fromBaseUnits(onMain, decimals),
            uncollected: fromBaseUnits(left, decimals)
          })
        }
        yield* sql`UPDATE wallet_asset_policies SET can_collect = false WHERE currency IN ('TRX', 'BNB')`
        expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
        yield* reconciled("TRC20")
        yield* reconciled("BEP20")
      })
    )

    it.effect(
      "Solana USDT with the policy switched live: the gas wallet pays the fee and the main token account's rent",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const receive = yield* fundedAddress(apiKey, "SOLANA", "USDT", "250")
          const closed = yield* sweep(apiKey, "SOLANA-USDT", { from_wallet_id: receive.walletId })
          expect(closed.status).toBe(400)
          expect(String(asRecord(closed.body).error)).toContain("deposit_live")
          yield* sql`UPDATE wallet_asset_policies SET status = 'live', can_collect = true, signing_implemented = true WHERE chain = 'SOLANA' AND currency = 'USDT'`
          const client = yield* clientOf("SOLANA")
          const receiveSol = yield* client.balance(receive.address, "SOL")
          const started = yield* sweep(apiKey, "SOLANA-USDT", { from_wallet_id: receive.walletId, amount: "200" })
          expect(started.status, started.text).toBe(200)
          const done = yield* untilFinished(apiKey, "SOLANA-USDT", String(asRecord(started.body).operation_id))
          yield* sql`UPDATE wallet_asset_policies SET status = 'deposit_live', can_collect = false, signing_implemented = false WHERE chain = 'SOLANA' AND currency = 'USDT'`
          expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
          expect(yield* client.balance(String(done.to_address), "USDT")).toBe(200_000_000n)
          expect(yield* client.balance(receive.address, "USDT")).toBe(50_000_000n)
          // the receive wallet paid nothing: the gas wallet was the fee payer and created the main token account
          expect(yield* client.balance(receive.address, "SOL")).toBe(receiveSol)
          const [rent] = yield* sql<{ amount: string }>`
          SELECT trim_scale(amount)::text AS amount FROM ledger_transfers WHERE reference = ${String(done.operation_id)} AND kind = 'rent'`
          expect(BigInt(rent?.amount ?? "0")).toBeGreaterThan(0n)
          expect(yield* balances(merchantId, "SOLANA", "USDT")).toEqual({ uncollected: "50", available: "200" })
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
        })
    )

    it.effect(
      "Solana: a swept order address's token account is closed, its rent back in the gas wallet; a deposit address keeps its own",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const http = yield* TestClient
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          // switched live for this test (shipped deposit_live: no orders, no collection), and back after the sweeps
          yield* sql`UPDATE wallet_asset_policies SET status = 'live', can_collect = true, signing_implemented = true WHERE chain = 'SOLANA' AND currency = 'USDT'`
          const created = yield* http.request("POST", "/v1/orders", {
            apiKey,
            json: { amount: "40", currency: "USDT", chain: "SOLANA" }
          })
          expect(created.status, created.text).toBe(201)
          const order = asRecord(created.body)
          const payAddress = String(order.pay_address)
          yield* pay("SOLANA-USDT", payAddress, "40")
          yield* eventually(
            http.request("GET", `/v1/orders/${String(order.order_id)}`, { apiKey }),
            (r) => asRecord(r.body).status === "PAID",
            30_000
          )
          const [orderWallet] = yield* sql<{ id: string }>`SELECT id FROM wallets WHERE address = ${payAddress}`
          const deposit = yield* fundedAddress(apiKey, "SOLANA", "USDT", "30")
          const swept = yield* Effect.forEach([orderWallet?.id ?? "", deposit.walletId], (walletId) =>
            Effect.flatMap(sweep(apiKey, "SOLANA-USDT", { from_wallet_id: walletId }), (started) =>
              untilFinished(apiKey, "SOLANA-USDT", String(asRecord(started.body).operation_id))
            )
          )
          yield* sql`UPDATE wallet_asset_policies SET status = 'deposit_live', can_collect = false, signing_implemented = false WHERE chain = 'SOLANA' AND currency = 'USDT'`
          expect(swept.map((done) => done.status)).toEqual(["COMPLETED", "COMPLETED"])

          // the order address's account is closed by an operation of its own, stored with the sweep
          const closes = yield* eventually(
            sql<{ id: string; parent_id: string; status: string }>`
              SELECT id, parent_id, status FROM custody_operations WHERE type = 'account_close' AND merchant_id = ${merchantId}`,
            (rows) => rows.every((r) => r.status === "COMPLETED") && rows.length > 0,
            60_000
          )
          // the deposit address keeps its account (FACET_SOLANA_CLOSE_DEPOSIT_ACCOUNTS is off by default)
          expect(closes.map((c) => c.parent_id)).toEqual([String(swept[0]?.operation_id)])
          const closeId = closes[0]?.id ?? ""
          const [closeTx] = yield* sql<{ tx_hash: string }>`
            SELECT tx_hash FROM custody_transactions WHERE operation_id = ${closeId} AND status = 'final'`
          const booked = yield* sql<{ kind: string; debit_account: string; credit_account: string; amount: string }>`
            SELECT kind, debit_account, credit_account, trim_scale(amount)::text AS amount
            FROM ledger_transfers WHERE reference = ${closeId} ORDER BY kind DESC`
          const config = yield* AppConfig
          const devnets = yield* readDevnetFile(config.dataDir)
          const mint = new PublicKey(devnets.solana.tokens.USDT ?? "")
          const accountOf = (owner: string) =>
            solanaRpc("getAccountInfo", [
              getAssociatedTokenAddressSync(mint, new PublicKey(owner), true).toBase58(),
              { commitment: "confirmed", encoding: "base64" }
            ]).pipe(Effect.map((result) => asRecord(result).value ?? null))
          expect(yield* accountOf(payAddress)).toBeNull()
          expect(yield* accountOf(deposit.address)).not.toBeNull()
          // the rent (a token account's rent-exempt minimum) went chain → gas; the fee gas → chain
          const rentExempt = yield* tokenAccountRent
          expect(booked).toEqual([
            {
              kind: "rent_refund",
              debit_account: "chain",
              credit_account: "gas",
              amount: rentExempt
            },
            { kind: "network_fee", debit_account: "gas", credit_account: "chain", amount: "10000" }
          ])
          // the platform's own transaction: no merchant-visible row, no deposit booked by the indexer
          const rows = yield* sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM transactions WHERE tx_hash = ${closeTx?.tx_hash ?? ""}`
          expect(rows[0]?.n).toBe(0)
          expect(yield* balances(merchantId, "SOLANA", "USDT")).toEqual({ uncollected: "0", available: "70" })
          // the closed account is no token balance gone from the address: ledger and chain still agree
          yield* reconciled("SOLANA")
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
        })
    )

    it.effect(
      "Solana sweeps signed before the first lands: the main token account's rent is booked once, as paid",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const receives = yield* Effect.forEach([1, 2, 3], () => fundedAddress(apiKey, "SOLANA", "USDT", "20"), {
            concurrency: 3
          })
          yield* sql`UPDATE wallet_asset_policies SET status = 'live', can_collect = true, signing_implemented = true WHERE chain = 'SOLANA' AND currency = 'USDT'`
          // all at once: each is signed while the main wallet has no token account yet, so each counts its rent
          const done = yield* Effect.forEach(
            receives,
            (receive) =>
              Effect.flatMap(sweep(apiKey, "SOLANA-USDT", { from_wallet_id: receive.walletId }), (started) =>
                untilFinished(apiKey, "SOLANA-USDT", String(asRecord(started.body).operation_id))
              ),
            { concurrency: 3 }
          )
          yield* sql`UPDATE wallet_asset_policies SET status = 'deposit_live', can_collect = false, signing_implemented = false WHERE chain = 'SOLANA' AND currency = 'USDT'`
          expect(done.map((d) => d.status)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED"])
          const counted = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM custody_transactions
          WHERE ${sql.in(
            "operation_id",
            done.map((d) => String(d.operation_id))
          )} AND max_fee > 10000`
          const booked = yield* sql<{ total: string }>`
          SELECT coalesce(trim_scale(sum(amount)), 0)::text AS total FROM ledger_transfers
          WHERE kind = 'rent' AND ${sql.in(
            "reference",
            done.map((d) => String(d.operation_id))
          )}`
          const rentExempt = yield* tokenAccountRent
          // however many counted it when signed, the chain took it once
          expect(counted[0]?.n).toBeGreaterThanOrEqual(2)
          expect(booked[0]?.total).toBe(rentExempt)
        })
    )

    // last in this file: the tokens it moves behind the ledger's back are a difference reconciliation reports
    it.effect(
      "a sweep that reverts on chain fails: the merchant's balance does not move, the burned fee is the platform's",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const wallets = yield* Wallets
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const receive = yield* fundedAddress(apiKey, "TRC20", "USDT", "1000")
          // the tokens leave the address behind the ledger's back (its key moves them), so the sweep will revert
          const config = yield* AppConfig
          const file = yield* readDevnetFile(config.dataDir)
          yield* Effect.promise(() =>
            fetch(`${file.tron.url}/devnet/fund`, {
              method: "POST",
              body: JSON.stringify({ address: receive.address, currency: "TRX", amount: "50000000" })
            })
          )
          const wallet = yield* wallets.byId(receive.walletId)
          const tron = yield* clientOf("TRC20")
          yield* sendTransfer(tron, {
            from: wallet?.key ?? { family: "TRON", account: 0, index: 0 },
            to: "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6",
            currency: "USDT",
            amount: 1_000_000_000n
          })
          yield* eventually(tron.balance(receive.address, "USDT"), (b) => b === 0n, 10_000)

          const started = yield* sweep(apiKey, "TRC20-USDT", { from_wallet_id: receive.walletId })
          expect(started.status, started.text).toBe(200)
          const done = yield* untilFinished(apiKey, "TRC20-USDT", String(asRecord(started.body).operation_id))
          expect(done.status).toBe("FAILED")
          expect(String(done.failure_reason)).toMatch(/failed on chain/)
          expect(yield* balances(merchantId, "TRC20", "USDT")).toEqual({ uncollected: "1000", available: "0" })
          const booked = yield* sql<{ kind: string; debit_account: string }>`
          SELECT kind, debit_account FROM ledger_transfers WHERE reference = ${String(done.operation_id)}`
          expect(booked).toEqual([{ kind: "network_fee", debit_account: `gas:${receive.walletId}` }])
          const listed = yield* Effect.flatMap(TestClient, (c) =>
            c.request("GET", `/v1/transactions?q=${String(done.operation_id)}`, { apiKey })
          )
          const items = asRecord(listed.body).items
          expect((Array.isArray(items) ? items : []).map((t) => asRecord(t).status)).toEqual(["failed"])
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
        })
    )
  })
})
