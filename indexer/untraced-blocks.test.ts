import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { type Address, createPublicClient, createWalletClient, http, parseEther } from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { ChainClients } from "../src/chains/chain-clients.js"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { AppConfig } from "../src/config.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { Devnets, DevnetsLive } from "../src/devnet/devnets.js"
import { ANVIL_CHAIN_ID, ANVIL_MNEMONIC, CUSTOMER_INDEX } from "../src/devnet/evm/anvil-devnet.js"
import { compileContract } from "../src/devnet/evm/solidity-compiler.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { rpcMethod, startNodeProxy } from "../test/node-proxy.js"
import { readDevnetFile } from "../test/service-process.js"
import { eventually } from "../test/webhook-receiver.js"
import { Reconciliation } from "./reconciliation.js"
import { rescanUntraced } from "./rescan.js"

const chain = {
  id: ANVIL_CHAIN_ID,
  name: "devnet",
  nativeCurrency: { name: "BNB", symbol: "BNB", decimals: 18 },
  rpcUrls: { default: { http: [] } }
} as const

/** While set, the BEP20 node is a full node past its state window: every transaction's trace is "Resource not found". */
const node = { pruned: false }

/** The devnets, the BEP20 one behind a node that answers traces as a full node does past ~128 blocks. */
const PrunedNodeLive = Layer.scopedContext(
  Effect.gen(function* () {
    const endpoints = yield* ChainEndpoints
    const devnets = yield* Devnets
    const proxy = yield* startNodeProxy(
      endpoints.bep20.rpcUrl,
      () => undefined,
      (call, answer) => {
        if (!node.pruned || rpcMethod(call.body) !== "debug_traceBlockByNumber") return answer
        const result = asRecord(answer).result
        return {
          ...asRecord(answer),
          result: Array.isArray(result)
            ? result.map((r) => ({ txHash: asRecord(r).txHash, error: "Resource not found" }))
            : result
        }
      }
    )
    return Context.make(ChainEndpoints, { ...endpoints, bep20: { ...endpoints.bep20, rpcUrl: proxy.url } }).pipe(
      Context.add(Devnets, devnets)
    )
  })
).pipe(Layer.provide(DevnetsLive))

describe("a BEP20 node that can no longer trace blocks", () => {
  layer(TestAppLive({}, { chains: "devnet", network: PrunedNodeLive }), {
    excludeTestServices: true,
    timeout: "180 seconds"
  })((it) => {
    // before: the indexer asked for the trace again and again, and every BEP20 deposit after that block,
    // USDT included, waited for ever (the fault campaign's bad-nodes scenario: 56 payments never credited)
    it.effect(
      "keeps crediting logs and top-level transfers, records the untraced blocks, alerts, and a rescan with a tracing node credits what contracts sent",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const addressOf = (user: string, currency: string) =>
            Effect.map(
              client.request("POST", "/v1/deposit-addresses", {
                apiKey,
                json: { external_user_id: user, chain: "BEP20", currency }
              }),
              (r) => {
                const address = String(asRecord(r.body).address)
                return isHexAddress(address) ? address : "0x0000000000000000000000000000000000000000"
              }
            )
          const alice = yield* addressOf("alice", "BNB")
          const bob = yield* addressOf("bob", "BNB")
          const carol = yield* addressOf("carol", "USDT")
          const devnet = yield* Effect.flatMap(AppConfig, (config) => readDevnetFile(config.dataDir))
          const customer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX })
          const wallet = createWalletClient({ account: customer, transport: http(devnet.bep20.rpcUrl), chain })
          const reader = createPublicClient({ transport: http(devnet.bep20.rpcUrl) })
          const forwarder = yield* compileContract("test/contracts/Forwarder.sol", "Forwarder").pipe(Effect.orDie)
          const deployed: Address = yield* Effect.promise(async () => {
            const hash = await wallet.deployContract({ abi: forwarder.abi, bytecode: forwarder.bytecode })
            return (await reader.waitForTransactionReceipt({ hash })).contractAddress ?? "0x"
          })

          node.pruned = true
          const viaContract = yield* Effect.promise(async () => {
            const hash = await wallet.writeContract({
              address: deployed,
              abi: forwarder.abi,
              functionName: "forward",
              args: [alice],
              value: parseEther("0.5"),
              gas: 200_000n
            })
            await reader.waitForTransactionReceipt({ hash })
            return hash
          })
          const direct = yield* Effect.promise(async () => {
            const hash = await wallet.sendTransaction({ to: bob, value: parseEther("0.2") })
            await reader.waitForTransactionReceipt({ hash })
            return hash
          })
          const token = yield* payFromCustomer(devnet, "BEP20-USDT", carol, "3")
          const deposits = sql<{ tx_hash: string; to_address: string; amount: string; status: string }>`
          SELECT tx_hash, to_address, trim_scale(amount)::text AS amount, status FROM transactions WHERE merchant_id = ${merchantId} AND type = 'deposit' ORDER BY tx_hash`
          // the top-level BNB and the token, in blocks after the untraceable one, are credited
          yield* eventually(
            deposits,
            (rows) => [direct, token].every((hash) => rows.some((r) => r.tx_hash === hash && r.status === "confirmed")),
            30_000
          )
          expect((yield* deposits).filter((r) => r.tx_hash === viaContract)).toEqual([])
          const [block] = yield* sql<{ number: string }>`SELECT number::text AS number FROM untraced_blocks
          WHERE chain = 'BEP20' AND rescanned_at IS NULL AND number = ${(yield* Effect.promise(() => reader.getTransactionReceipt({ hash: viaContract }))).blockNumber.toString()}`
          expect(block).toBeDefined()

          // /health says so, and /metrics counts it
          const health = yield* client.request("GET", "/health")
          expect(health.status).toBe(503)
          expect(asRecord(health.body).reasons).toEqual(
            expect.arrayContaining([
              expect.stringMatching(
                /^BEP20: \d+ block\(s\) from \d+ to \d+ could not be traced \(.*Resource not found.*\).*--rescan-untraced/
              )
            ])
          )
          expect((yield* client.request("GET", "/metrics")).text).toMatch(
            /facet_indexer_untraced_blocks\{chain="BEP20"\} [1-9]/
          )

          // reconciliation: alice holds what the ledger does not explain, and the untraced blocks are named
          const report = yield* Effect.flatMap(Reconciliation, (r) => r.reconcileChain("BEP20"))
          const missing = report.differences.find((d) => d.address.toLowerCase() === alice.toLowerCase())
          expect(missing).toMatchObject({ currency: "BNB", difference: "0.5" })
          expect(missing?.untraced_blocks).toBeGreaterThan(0)

          // a node that traces them (an archive node): the rescan credits the contract's BNB, and clears them
          node.pruned = false
          const bep20 = yield* Effect.flatMap(ChainClients, (clients) =>
            Option.match(clients.get("BEP20"), {
              onNone: () => Effect.dieMessage("no BEP20 client"),
              onSome: Effect.succeed
            })
          )
          const rescanned = yield* rescanUntraced(bep20, 10)
          expect(rescanned).toMatchObject({ chain: "BEP20", added: 1, stillUntraced: 0 })
          expect((yield* deposits).filter((r) => r.tx_hash === viaContract)).toEqual([
            { tx_hash: viaContract, to_address: alice, amount: "0.5", status: "confirmed" }
          ])
          const again = yield* Effect.flatMap(Reconciliation, (r) => r.reconcileChain("BEP20"))
          expect(again.differences.filter((d) => d.address.toLowerCase() === alice.toLowerCase())).toEqual([])
          const after = yield* client.request("GET", "/health")
          expect(JSON.stringify(asRecord(after.body).reasons ?? [])).not.toContain("could not be traced")
        }).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              node.pruned = false
            })
          )
        )
    )
  })
})
