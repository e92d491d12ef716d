import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { promisify } from "node:util"
import { AppConfig } from "../config.js"
import { ChainClients } from "../chains/chain-clients.js"
import { TestAppLive, TestClient } from "../../test/http-harness.js"
import { eventually } from "../../test/webhook-receiver.js"
import { devnetFilePath } from "./devnets.js"

const run = promisify(execFile)

describe("the devnets as the service's default network", () => {
  layer(TestAppLive({}, { chains: "devnet", devnets: "as npm start" }), {
    excludeTestServices: true,
    timeout: "120 seconds"
  })((it) => {
    it.effect("start with the service, write their endpoints, and take payments from `npm run pay`", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const config = yield* AppConfig
        const chains = yield* ChainClients
        // ready once every chain's indexer has stored where it starts
        expect((yield* eventually(client.request("GET", "/health"), (r) => r.status === 200, 20_000)).status).toBe(200)
        expect(fs.existsSync(devnetFilePath(config.dataDir))).toBe(true)

        const tron = chains.get("TRC20")
        if (tron._tag === "None") return yield* Effect.die(new Error("no TRON client"))
        const to = "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6"
        const before = yield* tron.value.balance(to, "USDT")
        const { stdout } = yield* Effect.promise(() =>
          run(
            "node",
            ["--import", "tsx", "src/devnet/pay-cli.ts", "--asset", "TRC20-USDT", "--to", to, "--amount", "12.5"],
            {
              env: { ...process.env, FACET_DATA_DIR: config.dataDir }
            }
          )
        )
        const line: unknown = JSON.parse(stdout.trim())
        expect(line).toMatchObject({
          asset: "TRC20-USDT",
          to,
          amount: "12.5",
          tx_hash: expect.stringMatching(/^[0-9a-f]{64}$/)
        })
        for (let i = 0; i < 60 && (yield* tron.value.balance(to, "USDT")) === before; i++)
          yield* Effect.sleep("100 millis")
        expect((yield* tron.value.balance(to, "USDT")) - before).toBe(12_500_000n)
      })
    )
  })
})
