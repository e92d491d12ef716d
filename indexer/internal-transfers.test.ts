import "../test/fast-devnets.js"

import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Address, createPublicClient, createWalletClient, http } from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { AppConfig } from "../src/config.js"
import { ANVIL_CHAIN_ID, ANVIL_MNEMONIC, compileContract, CUSTOMER_INDEX } from "../src/devnet/evm/anvil-devnet.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { readDevnetFile } from "../test/service-process.js"
import { eventually } from "../test/webhook-receiver.js"

const chain = { id: ANVIL_CHAIN_ID, name: "devnet", nativeCurrency: { name: "BNB", symbol: "BNB", decimals: 18 }, rpcUrls: { default: { http: [] } } } as const

describe("BNB sent by a contract (internal transfers)", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("is credited once per leg that succeeded, never from a reverted sub-call", () =>
      Effect.gen(function*() {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const addressOf = (user: string) =>
          Effect.map(client.request("POST", "/v1/deposit-addresses", { apiKey, json: { external_user_id: user, chain: "BEP20", currency: "BNB" } }), (r) => {
            const address = String(asRecord(r.body).address)
            return isHexAddress(address) ? address : "0x0000000000000000000000000000000000000000"
          })
        const alice = yield* addressOf("alice")
        const bob = yield* addressOf("bob")
        const carol = yield* addressOf("carol")

        // a smart-contract wallet sends on what it receives
        const devnet = yield* Effect.flatMap(AppConfig, (config) => readDevnetFile(config.dataDir))
        const customer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX })
        const wallet = createWalletClient({ account: customer, transport: http(devnet.bep20.rpcUrl), chain })
        const reader = createPublicClient({ transport: http(devnet.bep20.rpcUrl) })
        const forwarder = yield* compileContract("test/contracts/Forwarder.sol", "Forwarder").pipe(Effect.orDie)
        const deployed = yield* Effect.promise(async () => {
          const hash = await wallet.deployContract({ abi: forwarder.abi, bytecode: forwarder.bytecode })
          return (await reader.waitForTransactionReceipt({ hash })).contractAddress ?? "0x"
        })
        const call = (functionName: "forward" | "split" | "tryForward", args: ReadonlyArray<Address>, value: bigint) =>
          Effect.promise(async () => {
            const hash = await wallet.writeContract({ address: deployed, abi: forwarder.abi, functionName, args: [...args], value, gas: 200_000n })
            await reader.waitForTransactionReceipt({ hash })
            return hash
          })
        const forwarded = yield* call("forward", [alice], 5n * 10n ** 17n)
        const split = yield* call("split", [bob, bob], 3n * 10n ** 17n)
        const splitTwo = yield* call("split", [alice, carol], 2n * 10n ** 17n)
        const failed = yield* call("tryForward", [carol], 10n ** 17n)

        const deposits = () =>
          sql<{ tx_hash: string; to_address: string; event_index: number; amount: string; status: string }>`
            SELECT tx_hash, to_address, event_index, trim_scale(amount)::text AS amount, status FROM transactions
            WHERE type = 'deposit' AND chain = 'BEP20' AND currency = 'BNB' AND tx_hash IN (${forwarded}, ${split}, ${splitTwo}, ${failed})
            ORDER BY tx_hash, event_index DESC`
        const rows = yield* eventually(deposits(), (r) => r.length === 5 && r.every((t) => t.status === "confirmed"), 30_000)
        const seen = rows.map((r) => `${r.tx_hash === forwarded ? "forward" : r.tx_hash === split ? "split" : r.tx_hash === splitTwo ? "splitTwo" : "failed"} ${r.to_address.toLowerCase() === alice.toLowerCase() ? "alice" : r.to_address.toLowerCase() === bob.toLowerCase() ? "bob" : "carol"} ${r.amount}`).sort()
        // two legs to bob in one transaction are two deposits; the reverted sub-call credited nobody
        expect(seen).toEqual(["forward alice 0.5", "split bob 0.15", "split bob 0.15", "splitTwo alice 0.1", "splitTwo carol 0.1"])
        for (const r of rows) expect(r.event_index).toBeLessThanOrEqual(-2)
        expect(new Set(rows.filter((r) => r.tx_hash === split).map((r) => r.event_index)).size).toBe(2)
        const [events] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_events WHERE event = 'wallet.deposit.confirmed' AND idempotency_key LIKE ${`%:${forwarded}:%`}`
        expect(events?.n).toBe(1)
      }))
  })
})
