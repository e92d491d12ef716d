import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { AppConfig } from "../src/config.js"
import type { Chain } from "../src/domain/chain.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { TestClient } from "./http-harness.js"
import { asRecord } from "./json.js"
import { readDevnetFile } from "./service-process.js"
import { eventually } from "./webhook-receiver.js"
import { expect } from "@effect/vitest"
import { onboardMerchant } from "./merchants.js"

/** Money in and out on the devnets, for the custody tests: paid deposit addresses, sweeps, balances. */

/** A devnet customer pays `amount` of `asset` to `to`. */
export const pay = (asset: string, to: string, amount: string) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    return yield* payFromCustomer(yield* readDevnetFile(config.dataDir), asset, to, amount)
  })

/** A JSON-RPC call to the Solana devnet the service runs: the call's `result`. */
export const solanaRpc = (method: string, params: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const devnets = yield* readDevnetFile(config.dataDir)
    const body = yield* Effect.promise(() =>
      fetch(devnets.solana.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })
      }).then((r) => r.json())
    )
    return asRecord(body).result
  })

/** What a token account must hold to be rent-exempt on the Solana devnet (165 bytes), in lamports. */
export const tokenAccountRent = Effect.map(solanaRpc("getMinimumBalanceForRentExemption", [165]), String)

/** The service's chain client of a chain. */
export const clientOf = (chain: Chain) =>
  Effect.flatMap(ChainClients, (clients) =>
    Option.match(clients.get(chain), { onNone: () => Effect.dieMessage(`no ${chain} client`), onSome: Effect.succeed })
  )

/** A deposit address for a fresh user, paid and final. */
export const fundedAddress = (apiKey: string, chain: Chain, currency: string, amount: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const created = asRecord(
      (yield* client.request("POST", "/v1/deposit-addresses", {
        apiKey,
        json: { external_user_id: `user-${Math.random().toString(36).slice(2)}`, chain, currency }
      })).body
    )
    yield* pay(`${chain}-${currency}`, String(created.address), amount)
    yield* eventually(
      client.request("GET", `/v1/deposit-addresses/${String(created.id)}/transactions`, { apiKey }),
      (r) => {
        const items = asRecord(r.body).items
        return Array.isArray(items) && items.some((t) => asRecord(t).status === "confirmed")
      },
      30_000
    )
    return { walletId: String(created.wallet_id), address: String(created.address) }
  })

/** POST a sweep of an asset. */
export const sweep = (apiKey: string, assetKey: string, json: unknown) =>
  Effect.flatMap(TestClient, (c) => c.request("POST", `/v1/wallet-assets/${assetKey}/sweep`, { apiKey, json }))

/** A sweep's state once it is COMPLETED or FAILED. */
export const untilFinished = (apiKey: string, assetKey: string, operationId: string) =>
  Effect.flatMap(TestClient, (c) =>
    Effect.map(
      eventually(
        c.request("GET", `/v1/wallet-assets/${assetKey}/sweeps/${operationId}`, { apiKey }),
        (r) => {
          const status = asRecord(r.body).status
          return status === "COMPLETED" || status === "FAILED"
        },
        90_000
      ),
      (r) => asRecord(r.body)
    )
  )

/** A merchant's ledger balances of one asset, in its units. */
export const ledgerBalances = (merchantId: string, chain: Chain, currency: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ uncollected: string; available: string; locked: string }>`
        SELECT trim_scale(uncollected)::text AS uncollected, trim_scale(available)::text AS available, trim_scale(locked)::text AS locked
        FROM merchant_balances WHERE merchant_id = ${merchantId} AND chain = ${chain} AND currency = ${currency}`,
      (rows) => rows[0]
    )
  )

/** Uncollected and available only (what a sweep moves). */
export const balances = (merchantId: string, chain: Chain, currency: string) =>
  Effect.map(ledgerBalances(merchantId, chain, currency), (b) =>
    b === undefined ? undefined : { uncollected: b.uncollected, available: b.available }
  )

/** A merchant with `amount` collected (available) on an asset: deposit, final, swept. */
export const merchantWithFunds = (chain: Chain, currency: string, amount: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const merchant = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
    const receive = yield* fundedAddress(merchant.apiKey, chain, currency, amount)
    const native = currency === "TRX" || currency === "BNB"
    if (native)
      yield* sql`UPDATE wallet_asset_policies SET can_collect = true WHERE chain = ${chain} AND currency = ${currency}`
    const started = yield* sweep(merchant.apiKey, `${chain}-${currency}`, { from_wallet_id: receive.walletId })
    const done = yield* untilFinished(
      merchant.apiKey,
      `${chain}-${currency}`,
      String(asRecord(started.body).operation_id)
    )
    if (native)
      yield* sql`UPDATE wallet_asset_policies SET can_collect = false WHERE chain = ${chain} AND currency = ${currency}`
    expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
    return { ...merchant, receive }
  })

/** A withdrawal as GET /v1/withdrawals/{id} shows it, once its status is one of `done`. */
export const untilWithdrawal = (apiKey: string, id: string, done: ReadonlyArray<string>) =>
  Effect.flatMap(TestClient, (c) =>
    Effect.map(
      eventually(
        c.request("GET", `/v1/withdrawals/${id}`, { apiKey }),
        (r) => done.includes(String(asRecord(r.body).status)),
        90_000
      ),
      (r) => asRecord(r.body)
    )
  )
