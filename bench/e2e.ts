import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Fiber, Layer, Option } from "effect"
import * as os from "node:os"
import { createPublicClient, createWalletClient, http, type Address } from "viem"
import { runChainIndexer } from "../indexer/chain-indexer.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { DepositAddresses } from "../src/deposits/deposit-addresses.js"
import { bep20Customer } from "../src/devnet/devnet-customers.js"
import { startAnvilDevnet, tokenAbi } from "../src/devnet/evm/anvil-devnet.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { Onboarding } from "../src/merchants/onboarding.js"
import { benchCore } from "./bench-environment.js"

const ADDRESSES = 2_000
const TRANSFERS = 20_000
const PER_TX = 100

/**
 * End to end: anvil with 20,000 token Transfer events in batched transactions (100 per transaction) to
 * 2,000 deposit addresses of one merchant; the time from the BEP20 indexer's start until all 20,000 are
 * attributed and persisted (confirmed, with ledger, balances and webhook events). Twice, each on a fresh
 * database: with call traces off, and with every block's call tree read (`callTracer`, contract-sent BNB),
 * which is the cost of crediting internal transfers.
 */
const pass = (anvil: { readonly rpcUrl: string; readonly chainId: number; readonly tokens: { readonly USDT: Address } }, traces: "off" | "callTracer") => Effect.gen(function*() {
  const endpoints = Layer.succeed(ChainEndpoints, {
    bep20: { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, tokens: new Map<string, Address>([["USDT", anvil.tokens.USDT]]), confirmations: 0, traces },
    tron: { url: "http://127.0.0.1:9", tokens: new Map(), confirmations: 1 },
    solana: { rpcUrl: "http://127.0.0.1:9", tokens: new Map() }
  })
  yield* Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const onboarding = yield* Onboarding
    const deposits = yield* DepositAddresses
    const clients = yield* ChainClients
    const { response } = yield* onboarding.apply({
      project_name: `E2E ${Date.now()}`, business_type: "bench", use_case: "e2e benchmark", agree_terms: true, integration_mode: "exchange_wallet"
    }, {})
    const addresses: Array<Address> = []
    for (let start = 0; start < ADDRESSES; start += 1000) {
      const batch = yield* deposits.batch(response.merchant_id, {
        external_user_ids: Array.from({ length: 1000 }, (_, i) => `user-${start + i}`), chain: "BEP20", currency: "USDT", continue_on_error: false
      })
      for (const item of batch.items) {
        const address = item.deposit_address?.address ?? ""
        if (isHexAddress(address)) addresses.push(address)
      }
    }
    const publicClient = createPublicClient({ transport: http(anvil.rpcUrl), cacheTime: 0 })
    const wallet = createWalletClient({ account: bep20Customer, transport: http(anvil.rpcUrl, { retryCount: 0 }) })
    const chain = { id: anvil.chainId, name: "devnet", nativeCurrency: { name: "BNB", symbol: "BNB", decimals: 18 }, rpcUrls: { default: { http: [anvil.rpcUrl] } } }
    const startBlock = yield* Effect.promise(() => publicClient.getBlockNumber())
    let sent = Date.now()
    const hashes: Array<`0x${string}`> = []
    for (let t = 0; t < TRANSFERS / PER_TX; t++) {
      const to = Array.from({ length: PER_TX }, (_, i) => addresses[(t * PER_TX + i) % addresses.length] ?? addresses[0] ?? "0x0000000000000000000000000000000000000000")
      hashes.push(yield* Effect.promise(() => wallet.writeContract({
        address: anvil.tokens.USDT, abi: tokenAbi, functionName: "batchTransfer", args: [to, to.map((_, i) => 10n ** 18n + BigInt(i))], chain, gas: 5_000_000n
      })))
    }
    yield* Effect.promise(() => publicClient.waitForTransactionReceipt({ hash: hashes[hashes.length - 1] ?? "0x", pollingInterval: 50 }))
    const head = yield* Effect.promise(() => publicClient.getBlockNumber())
    console.log(`setup: ${addresses.length} deposit addresses; ${TRANSFERS} Transfer events in ${hashes.length} transactions, blocks ${startBlock + 1n}..${head}, sent in ${((Date.now() - sent) / 1000).toFixed(1)} s`)

    const client = Option.getOrThrow(clients.get("BEP20"))
    yield* sql`DELETE FROM indexer_cursors WHERE chain = 'BEP20'`
    sent = Date.now()
    const indexer = yield* Effect.fork(runChainIndexer(client, {
      batchSize: Number(process.env.BENCH_BATCH ?? 50), pollInterval: Duration.millis(20), leaseTtl: Duration.seconds(15), startBlock: Option.some(startBlock), network: "devnet"
    }))
    for (;;) {
      const [row] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM transactions WHERE merchant_id = ${response.merchant_id} AND status = 'confirmed'`
      if (Number(row?.n ?? 0) >= TRANSFERS) break
      yield* Effect.sleep("20 millis")
    }
    const seconds = (Date.now() - sent) / 1000
    yield* Fiber.interrupt(indexer)
    console.log(`end to end, traces ${traces}: ${TRANSFERS} events attributed and persisted in ${seconds.toFixed(2)} s = ${Math.round(TRANSFERS / seconds).toLocaleString()} events/s (target ≥ 30,000/s; Subsquid ≈ 15,000/s, Ponder 10–15 s here)`)
  }).pipe(Effect.provide(benchCore("none", endpoints)))
}).pipe(Effect.scoped)

const main = Effect.gen(function*() {
  const anvil = yield* startAnvilDevnet()
  console.log(`machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, node ${process.version}`)
  for (const traces of ["off", "callTracer"] as const) yield* pass(anvil, traces)
}).pipe(Effect.scoped)

NodeRuntime.runMain(main)
