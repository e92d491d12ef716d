import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { AppConfig } from "../src/config.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { DevnetFile, devnetFilePath, Devnets, DevnetsLive } from "../src/devnet/devnets.js"
import { tronHex41 } from "../src/keys/address-encoding.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { startNodeProxy } from "../test/node-proxy.js"
import { runOperator } from "../test/cli-in-process.js"
import { operatorEnvOf } from "../test/service-process.js"
import { eventually } from "../test/webhook-receiver.js"
import { indexerCommand } from "./indexer-command.js"
import { reconcileCommand } from "./reconcile-command.js"

// fast TRON and Solana devnets for this file (the rest as npm start has them)
const SERVICE_ENV = {
  FACET_DEVNET_TRON_BLOCK_MS: "250",
  FACET_CONFIRMATIONS_TRC20: "3",
  FACET_DEVNET_SOLANA_SLOT_MS: "150",
  FACET_DEVNET_SOLANA_FINALITY_SLOTS: "4"
}

/** The TRON addresses (40 hex, no 41) whose transfers the node in front of the indexer leaves out. */
const hidden = new Set<string>()

const mentionsHidden = (value: unknown) => {
  const text = JSON.stringify(value).toLowerCase()
  return [...hidden].some((hex) => text.includes(hex))
}

/**
 * The devnets, but the service's TRON node is a proxy that silently drops every transfer to a hidden
 * address from blocks and their transaction infos alike: a consistent answer, a lost deposit.
 */
const LyingTronNode = Layer.scopedContext(
  Effect.gen(function* () {
    const endpoints = yield* ChainEndpoints
    const devnets = yield* Devnets
    const proxy = yield* startNodeProxy(
      endpoints.tron.url,
      () => undefined,
      ({ path }, answer) => {
        if (
          path.endsWith("/wallet/getblockbynum") &&
          typeof answer === "object" &&
          answer !== null &&
          "transactions" in answer &&
          Array.isArray(answer.transactions)
        ) {
          return { ...answer, transactions: answer.transactions.filter((tx) => !mentionsHidden(tx)) }
        }
        if (path.endsWith("/wallet/gettransactioninfobyblocknum") && Array.isArray(answer))
          return answer.filter((info) => !mentionsHidden(info))
        return answer
      }
    )
    return Context.make(ChainEndpoints, { ...endpoints, tron: { ...endpoints.tron, url: proxy.url } }).pipe(
      Context.add(Devnets, devnets)
    )
  })
).pipe(Layer.provide(DevnetsLive))

const Report = Schema.parseJson(
  Schema.Struct({
    chain: Schema.String,
    checked: Schema.Number,
    skipped: Schema.Number,
    differences: Schema.Array(
      Schema.Struct({
        address: Schema.String,
        currency: Schema.String,
        on_chain: Schema.String,
        explained: Schema.String,
        from_block: Schema.String,
        to_block: Schema.String
      })
    )
  })
)

describe("reconciliation against the chain", () => {
  layer(TestAppLive({}, { chains: "devnet", network: LyingTronNode, devnets: "as npm start", env: SERVICE_ENV }), {
    excludeTestServices: true,
    timeout: "180 seconds"
  })((it) => {
    it.effect(
      "a payment hidden from the indexer is named by `npm run reconcile`, and a rescan credits it once, with its webhook",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const client = yield* TestClient
          const config = yield* AppConfig
          // a page of one address: the run goes page by page, as it does over a million addresses
          const env = {
            ...operatorEnvOf(config),
            FACET_DATA_DIR: config.dataDir,
            FACET_RECONCILE_PAGE: "1"
          }
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const address = (user: string) =>
            Effect.map(
              client.request("POST", "/v1/deposit-addresses", {
                apiKey,
                json: { external_user_id: user, chain: "TRC20", currency: "USDT" }
              }),
              (r) => String(asRecord(r.body).address)
            )
          const seen = yield* address("seen")
          const missed = yield* address("missed")
          hidden.add((tronHex41(missed) ?? "").slice(2).toLowerCase())
          const file = yield* Schema.decodeUnknown(Schema.parseJson(DevnetFile))(
            fs.readFileSync(devnetFilePath(config.dataDir), "utf8")
          )
          yield* payFromCustomer(file, "TRC20-USDT", seen, "2")
          yield* payFromCustomer(file, "TRC20-USDT", missed, "5")
          const credited = (to: string) =>
            sql<{
              status: string
              amount: string
            }>`SELECT status, trim_scale(amount)::text AS amount FROM transactions WHERE to_address = ${to} AND type = 'deposit'`
          yield* eventually(credited(seen), (rows) => rows[0]?.status === "confirmed", 30_000)
          // let the TRON indexer read on past the final height the balances will be read at
          yield* Effect.sleep("2 seconds")
          expect(yield* credited(missed)).toEqual([])

          // a dozen more addresses, so wallet numbers cross a digit (9 → 10, …) and pages of one must still cover them all
          for (let i = 0; i < 12; i++) yield* address(`more-${i}`)
          const [expected] = yield* sql<{ pairs: number }>`
          SELECT ((SELECT count(*) FROM wallets WHERE network = 'TRC20' AND kind = 'receive')
               * (SELECT count(*) FROM wallet_asset_policies WHERE chain = 'TRC20' AND can_deposit AND status IN ('live', 'deposit_live')))::int AS pairs`

          const first = yield* runOperator(reconcileCommand, "reconcile", ["--chain", "TRC20"], env)
          expect(first.code).toBe(1)
          const report = Schema.decodeUnknownSync(Report)(
            first.output.split("\n").find((l) => l.startsWith('{"chain"')) ?? ""
          )
          expect(report.checked + report.skipped).toBe(expected?.pairs)
          expect(report.differences).toEqual([
            expect.objectContaining({ address: missed, currency: "USDT", on_chain: "5", explained: "0" })
          ])
          const health = yield* client.request("GET", "/health")
          expect(health.status).toBe(503)
          expect(asRecord(health.body).reasons).toEqual([
            expect.stringMatching(new RegExp(`^TRC20 reconciliation: 1 balance.*${missed} USDT on chain 5, ledger 0`))
          ])

          const [difference] = report.differences
          const rescanArgs = [
            "--chain",
            "TRC20",
            "--rescan-from",
            difference?.from_block ?? "",
            "--to",
            difference?.to_block ?? ""
          ]
          const rescanned = yield* runOperator(indexerCommand, "indexer", rescanArgs, env)
          expect(rescanned.code).toBe(0)
          expect(rescanned.output).toContain(`"added":1`)
          expect(yield* credited(missed)).toEqual([{ status: "confirmed", amount: "5" }])
          // a second rescan of the same blocks adds nothing: one row, one credit, one webhook
          const again = yield* runOperator(indexerCommand, "indexer", rescanArgs, env)
          expect(again.output).toContain(`"added":0`)
          const [counts] = yield* sql<{ rows: number; events: number; balance: string }>`
          SELECT (SELECT count(*)::int FROM transactions WHERE to_address = ${missed}) AS rows,
                 (SELECT count(*)::int FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.deposit.confirmed'
                    AND body::jsonb ->> 'to_address' = ${missed}) AS events,
                 (SELECT trim_scale(uncollected)::text FROM merchant_balances WHERE merchant_id = ${merchantId} AND chain = 'TRC20' AND currency = 'USDT') AS balance`
          expect(counts).toEqual({ rows: 1, events: 1, balance: "7" })

          const clean = yield* runOperator(reconcileCommand, "reconcile", ["--chain", "TRC20"], env)
          expect(clean.code).toBe(0)
          expect((yield* client.request("GET", "/health")).status).toBe(200)
        }),
      { timeout: 150_000 }
    )
  })
})
