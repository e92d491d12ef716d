import { SqlClient } from "@effect/sql"
import { mnemonicToSeedSync } from "@scure/bip39"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TEST_MNEMONIC, TestAppLive, TestClient } from "../../test/http-harness.js"
import { onboardMerchant } from "../../test/merchants.js"
import { deriveKey, type KeyFamily } from "./derivation.js"

const logs: Array<string> = []

describe("key secrecy", () => {
  layer(TestAppLive({}, { captureLogs: logs }), { excludeTestServices: true })((it) => {
    it.effect("no mnemonic, seed or private key reaches a table or a log line", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const { apiKey } = yield* onboardMerchant()
        yield* client.request("POST", "/v1/orders", {
          apiKey,
          json: {
            amount: "10",
            accepted_assets: [
              { chain: "TRC20", currency: "USDT" },
              { chain: "BEP20", currency: "USDT" }
            ]
          }
        })
        yield* client.request("POST", "/v1/deposit-addresses/batch", {
          apiKey,
          json: {
            items: ["TRC20", "BEP20", "SOLANA"].map((chain) => ({
              external_user_id: "s-1",
              chain,
              currency: chain === "SOLANA" ? "SOL" : "USDT"
            }))
          }
        })

        const seed = mnemonicToSeedSync(TEST_MNEMONIC)
        const wallets = yield* sql<{
          family: KeyFamily
          derivation_path: string
        }>`SELECT family, derivation_path FROM wallets`
        expect(wallets.length).toBeGreaterThanOrEqual(5)
        const secrets = [
          TEST_MNEMONIC,
          Buffer.from(seed).toString("hex"),
          Buffer.from(seed).toString("base64"),
          ...wallets.flatMap((w) => {
            const key = deriveKey(seed, w.family, w.derivation_path).privateKey
            return [Buffer.from(key).toString("hex"), Buffer.from(key).toString("base64")]
          })
        ]

        const tables = yield* sql<{ table_name: string }>`
          SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`
        const dump: Array<string> = []
        for (const { table_name } of tables) {
          const rows = yield* sql.unsafe<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM "${table_name}" t`)
          dump.push(...rows.map((r) => r.row))
        }
        expect(logs.length).toBeGreaterThan(0)
        for (const secret of secrets) {
          expect(dump.some((row) => row.includes(secret))).toBe(false)
          expect(logs.some((line) => line.includes(secret))).toBe(false)
        }
        expect(logs.some((line) => line.includes("test test test"))).toBe(false)
      })
    )
  })
})
