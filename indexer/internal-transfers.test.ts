import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type Address, createPublicClient, createWalletClient, http } from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { ChainClients } from "../src/chains/chain-clients.js"
import { AppConfig } from "../src/config.js"
import { ANVIL_CHAIN_ID, ANVIL_MNEMONIC, CUSTOMER_INDEX, reorgAnvil } from "../src/devnet/evm/anvil-devnet.js"
import { compileContract } from "../src/devnet/evm/solidity-compiler.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { readDevnetFile } from "../test/service-process.js"
import { eventually } from "../test/webhook-receiver.js"
import { rescan } from "./rescan.js"

// a BNB finality window wide enough to reorg inside
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_CONFIRMATIONS_BEP20: "6" } })

const chain = {
  id: ANVIL_CHAIN_ID,
  name: "devnet",
  nativeCurrency: { name: "BNB", symbol: "BNB", decimals: 18 },
  rpcUrls: { default: { http: [] } }
} as const

describe("BNB sent by a contract (internal transfers)", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("is credited once per leg that succeeded, never from a reverted sub-call", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const addressOf = (user: string) =>
          Effect.map(
            client.request("POST", "/v1/deposit-addresses", {
              apiKey,
              json: { external_user_id: user, chain: "BEP20", currency: "BNB" }
            }),
            (r) => {
              const address = String(asRecord(r.body).address)
              return isHexAddress(address) ? address : "0x0000000000000000000000000000000000000000"
            }
          )
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
        const call = (
          functionName: "forward" | "split" | "split3" | "tryForward",
          args: ReadonlyArray<Address>,
          value: bigint
        ) =>
          Effect.promise(async () => {
            const hash = await wallet.writeContract({
              address: deployed,
              abi: forwarder.abi,
              functionName,
              args: [...args],
              value,
              gas: 200_000n
            })
            await reader.waitForTransactionReceipt({ hash })
            return hash
          })
        const forwarded = yield* call("forward", [alice], 5n * 10n ** 17n)
        const split = yield* call("split", [bob, bob], 3n * 10n ** 17n)
        const splitTwo = yield* call("split", [alice, carol], 2n * 10n ** 17n)
        const failed = yield* call("tryForward", [carol], 10n ** 17n)

        const deposits = (hashes: ReadonlyArray<string> = [forwarded, split, splitTwo, failed]) =>
          sql<{ tx_hash: string; to_address: string; event_index: number; amount: string; status: string }>`
            SELECT tx_hash, to_address, event_index, trim_scale(amount)::text AS amount, status FROM transactions
            WHERE type = 'deposit' AND chain = 'BEP20' AND currency = 'BNB' AND tx_hash IN ${sql.in(hashes)}
            ORDER BY tx_hash, event_index DESC`
        const rows = yield* eventually(
          deposits(),
          (r) => r.length === 5 && r.every((t) => t.status === "confirmed"),
          30_000
        )
        const seen = rows
          .map(
            (r) =>
              `${r.tx_hash === forwarded ? "forward" : r.tx_hash === split ? "split" : r.tx_hash === splitTwo ? "splitTwo" : "failed"} ${r.to_address.toLowerCase() === alice.toLowerCase() ? "alice" : r.to_address.toLowerCase() === bob.toLowerCase() ? "bob" : "carol"} ${r.amount}`
          )
          .sort()
        // two legs to bob in one transaction are two deposits; the reverted sub-call credited nobody
        expect(seen).toEqual([
          "forward alice 0.5",
          "split bob 0.15",
          "split bob 0.15",
          "splitTwo alice 0.1",
          "splitTwo carol 0.1"
        ])
        for (const r of rows) expect(r.event_index).toBeLessThanOrEqual(-2)
        expect(new Set(rows.filter((r) => r.tx_hash === split).map((r) => r.event_index)).size).toBe(2)
        const [events] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_events WHERE event = 'wallet.deposit.confirmed' AND idempotency_key LIKE ${`%:${forwarded}:%`}`
        expect(events?.n).toBe(1)

        // three legs of one call, two to bob: three deposits, three webhooks with their own keys
        const three = yield* call("split3", [alice, bob, bob], 9n * 10n ** 17n)
        const legs = yield* eventually(
          deposits([three]),
          (r) => r.length === 3 && r.every((t) => t.status === "confirmed"),
          30_000
        )
        expect(legs.map((r) => r.amount)).toEqual(["0.3", "0.3", "0.3"])
        expect(new Set(legs.map((r) => r.event_index)).size).toBe(3)
        const [hooks] = yield* sql<{ n: number; keys: number }>`
          SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys FROM webhook_events
          WHERE event = 'wallet.deposit.confirmed' AND idempotency_key LIKE ${`%:${three}:%`}`
        expect(hooks).toEqual({ n: 3, keys: 3 })

        // re-reading those final blocks (an operator's rescan, a restart's catch-up) credits no leg twice
        const bep20 = yield* Effect.flatMap(ChainClients, (clients) =>
          Option.match(clients.get("BEP20"), {
            onNone: () => Effect.dieMessage("no BEP20 client"),
            onSome: Effect.succeed
          })
        )
        const [range] = yield* sql<{ low: string; high: string }>`
          SELECT min(block_number)::text AS low, max(block_number)::text AS high FROM transactions WHERE tx_hash IN (${forwarded}, ${three})`
        expect((yield* rescan(bep20, BigInt(range?.low ?? "0"), BigInt(range?.high ?? "0"), 10)).added).toBe(0)
        expect(yield* deposits([forwarded, split, splitTwo, failed, three])).toHaveLength(8)

        // an order paid through a contract call
        const order = asRecord(
          (yield* client.request("POST", "/v1/orders", {
            apiKey,
            json: { amount: "0.25", chain: "BEP20", currency: "BNB", out_trade_no: "bnb-via-contract" }
          })).body
        )
        const payTo = String(order.pay_address)
        yield* call("forward", [isHexAddress(payTo) ? payTo : alice], 25n * 10n ** 16n)
        const paid = yield* eventually(
          client.request("GET", `/v1/orders/${String(order.order_id)}`, { apiKey }),
          (r) => asRecord(r.body).status === "PAID",
          60_000
        )
        expect(asRecord(paid.body).paid_amount).toBe("0.25000000")

        // a reorg that drops the block reverses its internal legs as it does logs
        const dropped = yield* call("split", [alice, carol], 4n * 10n ** 17n)
        const mined = yield* eventually(deposits([dropped]), (r) => r.length === 2, 30_000)
        expect(mined.every((r) => r.status !== "confirmed")).toBe(true)
        const [row] = yield* sql<{
          block_number: string
        }>`SELECT block_number::text AS block_number FROM transactions WHERE tx_hash = ${dropped} LIMIT 1`
        const head = yield* Effect.promise(() => reader.getBlockNumber())
        yield* reorgAnvil(devnet.bep20.rpcUrl, Number(head - BigInt(row?.block_number ?? "0")) + 1).pipe(Effect.orDie)
        const reversed = yield* eventually(
          deposits([dropped]),
          (r) => r.length === 2 && r.every((t) => t.status === "reversed"),
          30_000
        )
        expect(reversed).toHaveLength(2)
      })
    )
  })
})
