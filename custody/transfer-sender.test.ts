import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Option, Schema } from "effect"
import { createTestClient, createWalletClient, http, isHex, keccak256, type Address } from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { testCustodyConfig } from "../test/custody-settings.js"
import { TestDatabaseLive } from "../test/database.js"
import { evmAddressOf } from "../test/evm-addresses.js"
import { rpcId, rpcMethod, rpcParams, startNodeProxy } from "../test/node-proxy.js"
import { until } from "../test/service-process.js"
import { type ChainClient, TransferRejected } from "../src/chains/chain-client.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { makeBep20Client } from "../src/chains/evm/bep20-client.js"
import {
  ANVIL_MNEMONIC,
  CUSTOMER_INDEX,
  devnetChain,
  fundNative,
  mineBlocks,
  startAnvilDevnet,
  tokenAbi
} from "../src/devnet/evm/anvil-devnet.js"
import { masterSeedFromMnemonic } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { CustodyConfig } from "./custody-config.js"
import { CustodyStore, OPERATION_COLUMNS, OperationRow } from "../src/stores/custody-store.js"
import { TransactionStore } from "../src/stores/transaction-store.js"
import { WithdrawalStore } from "../src/stores/withdrawal-store.js"
import { SendRules } from "./send-rules.js"
import { TransferSender } from "./transfer-sender.js"

/**
 * The moment a broadcast transaction is mined between custody's lookup of it ("not in a block") and the
 * nonce check ("its nonce is used"): on its own, the nonce check reads as "proven dead" and a second
 * transaction would be signed and sent — the same money twice. The lookup is made to miss once, exactly
 * there; the chain (anvil), the signing and the nonces are real.
 */
class Devnet extends Context.Tag("test/SenderDevnet")<
  Devnet,
  { readonly rpcUrl: string; readonly usdt: Address; readonly client: ChainClient; readonly proxied: ChainClient }
>() {}

/**
 * How the node in front of anvil misbehaves, set by each test: the lookup after a broadcast misses once;
 * a lagging node (a second one behind a failover, say) knows no transaction and refuses any send after
 * the first; a node refuses the next send outright; a node's gas price (a spike, or a lie).
 */
class NodeFaults extends Context.Tag("test/NodeFaults")<
  NodeFaults,
  {
    missAfterBroadcast: boolean
    lagging: boolean
    refuseNext: boolean
    pruned: boolean
    gasPrice: bigint | undefined
    /** Sends are answered with their hash and never reach the chain (a node that takes bytes and loses them). */
    swallowSends: boolean
    /** Receipts say "failed in block 1" (a node on another branch, or a lying one). */
    fakeFailedReceipts: boolean
    /**
     * Sends are passed to the chain and then answered with this refusal (a balancer that retried the POST on
     * another backend, a gateway returning one backend's error): the bytes are out whatever the answer says.
     */
    forwardThenRefuse: string | undefined
    /** FACET_FEE_BUMP_AFTER_SECONDS for the sender: a minute unless a test wants replacements. */
    feeBumpAfter: Duration.Duration
  }
>() {}

const SignerLive = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

/**
 * The devnet's client (`client`, for checks) and one through a node proxy (`proxied`, what custody uses)
 * whose transaction lookups answer "not found" while `pruned` is set: a pruned node, or another node
 * behind a load-balanced URL that has not seen the block, as real JSON-RPC answers.
 */
const DevnetLive = Layer.scoped(
  Devnet,
  Effect.gen(function* () {
    const faults = yield* NodeFaults
    const devnet = yield* startAnvilDevnet()
    const tokens = new Map([["USDT", devnet.tokens.USDT]])
    const proxy = yield* startNodeProxy(devnet.rpcUrl, (call) => {
      const method = rpcMethod(call.body)
      if (method === "eth_gasPrice" && faults.gasPrice !== undefined)
        return { jsonrpc: "2.0", id: rpcId(call.body), result: `0x${faults.gasPrice.toString(16)}` }
      const [raw] = rpcParams(call.body)
      if (method === "eth_getTransactionReceipt" && faults.fakeFailedReceipts && typeof raw === "string") {
        return {
          jsonrpc: "2.0",
          id: rpcId(call.body),
          result: {
            transactionHash: raw,
            blockHash: `0x${"ab".repeat(32)}`,
            blockNumber: "0x1",
            transactionIndex: "0x0",
            type: "0x0",
            status: "0x0",
            from: `0x${"11".repeat(20)}`,
            to: `0x${"22".repeat(20)}`,
            contractAddress: null,
            cumulativeGasUsed: "0x5208",
            gasUsed: "0x5208",
            effectiveGasPrice: "0x3b9aca00",
            logs: [],
            logsBloom: `0x${"00".repeat(256)}`
          }
        }
      }
      if (method === "eth_sendRawTransaction" && faults.swallowSends && typeof raw === "string" && isHex(raw))
        return { jsonrpc: "2.0", id: rpcId(call.body), result: keccak256(raw) }
      return faults.pruned && (method === "eth_getTransactionReceipt" || method === "eth_getTransactionByHash")
        ? { jsonrpc: "2.0", id: rpcId(call.body), result: null }
        : undefined
    })
    // confirmations 0: a mined transaction is final at once, so its nonce reads as used right away
    const client = yield* makeBep20Client({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, tokens, confirmations: 0 })
    const proxied = yield* makeBep20Client({ rpcUrl: proxy.url, chainId: devnet.chainId, tokens, confirmations: 0 })
    return { rpcUrl: devnet.rpcUrl, usdt: devnet.tokens.USDT, client, proxied }
  })
)

const FaultsLive = Layer.sync(NodeFaults, () => ({
  missAfterBroadcast: false,
  lagging: false,
  refuseNext: false,
  pruned: false,
  gasPrice: undefined,
  swallowSends: false,
  fakeFailedReceipts: false,
  forwardThenRefuse: undefined,
  feeBumpAfter: Duration.minutes(1)
}))

/** The devnet's client behind the faults of NodeFaults. */
const ClientsLive = Layer.effect(
  ChainClients,
  Effect.gen(function* () {
    const { proxied: real } = yield* Devnet
    const faults = yield* NodeFaults
    let missNext = false
    let sendsWhileLagging = 0
    const client: ChainClient = {
      ...real,
      broadcast: (raw) =>
        Effect.suspend(() => {
          if (faults.refuseNext) {
            faults.refuseNext = false
            return Effect.fail(
              new TransferRejected({ chain: "BEP20", message: "insufficient funds for gas * price + value" })
            )
          }
          const refusal = faults.forwardThenRefuse
          if (refusal !== undefined)
            return Effect.zipRight(
              real.broadcast(raw),
              Effect.fail(new TransferRejected({ chain: "BEP20", message: refusal }))
            )
          if (faults.lagging && sendsWhileLagging++ > 0)
            return Effect.fail(new TransferRejected({ chain: "BEP20", message: "nonce too low" }))
          return Effect.tap(real.broadcast(raw), () =>
            Effect.sync(() => {
              missNext = faults.missAfterBroadcast
            })
          )
        }),
      transaction: (hash) =>
        Effect.suspend(() => {
          if (faults.lagging) return Effect.succeed(Option.none())
          if (!missNext) return real.transaction(hash)
          missNext = false
          return Effect.succeed(Option.none())
        })
    }
    return {
      get: (chain) => (chain === "BEP20" ? Option.some(client) : Option.none()),
      all: [client],
      nodes: Effect.succeed([])
    }
  })
)

const ConfigLive = Layer.effect(
  CustodyConfig,
  Effect.map(NodeFaults, (faults) => ({
    ...testCustodyConfig(),
    get feeBumpAfter() {
      return faults.feeBumpAfter
    }
  }))
)

const TestLive = TransferSender.Default.pipe(
  Layer.provideMerge(Layer.mergeAll(CustodyStore.Default, TransactionStore.Default, WithdrawalStore.Default)),
  Layer.provideMerge(ClientsLive),
  Layer.provideMerge(Layer.merge(ConfigLive, DevnetLive)),
  Layer.provideMerge(FaultsLive),
  Layer.provideMerge(SignerLive),
  Layer.provideMerge(TestDatabaseLive)
)

const customer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX })
const TOKEN = 10n ** 18n
const decodeOperations = Schema.decodeUnknown(Schema.Array(OperationRow))

/** An operation's attempts in order, as stored. */
const attemptsOf = (sql: SqlClient.SqlClient, operationId: string) =>
  Effect.orDie(sql<{ tx_hash: string; status: string; nonce: string | null; gas_price: string | null }>`
    SELECT tx_hash, status, nonce::text AS nonce, gas_price::text AS gas_price FROM custody_transactions WHERE operation_id = ${operationId} ORDER BY attempt`)

/**
 * A collection of ten tokens from a fresh address of key account 6 (`index`, funded with BNB and 100
 * tokens) to the next one: its operation row, the leg the sender is given, and both addresses.
 */
const collection = (id: string, index: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const devnet = yield* Devnet
    const from = yield* evmAddressOf(6, index)
    const to = yield* evmAddressOf(6, index + 1)
    yield* fundNative(devnet.rpcUrl, from, TOKEN)
    const wallet = createWalletClient({ account: customer, transport: http(devnet.rpcUrl) })
    yield* Effect.promise(() =>
      wallet.writeContract({
        address: devnet.usdt,
        abi: tokenAbi,
        functionName: "transfer",
        args: [from, 100n * TOKEN],
        chain: devnetChain(devnet.rpcUrl)
      })
    )
    yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
               VALUES ('m1', 'M1', 'a1', 'p', 'p', 'b', 'u', 'exchange_wallet', '{}', 'whsec_test') ON CONFLICT DO NOTHING`
    yield* sql`INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index) VALUES
               (${`wal_${index}`}, 'm1', 'receive', 'deposit', 'BEP20', 'EVM', ${from}, ${`m/44/60/6/0/${index}`}, 6, ${index}),
               (${`wal_${index + 1}`}, 'm1', 'receive', 'deposit', 'BEP20', 'EVM', ${to}, ${`m/44/60/6/0/${index + 1}`}, 6, ${index + 1})`
    yield* sql`INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address, to_wallet_id, to_address, amount)
               VALUES (${id}, 'collection', 'SWEEPING', 'm1', 'BEP20', 'USDT', ${`wal_${index}`}, ${from}, ${`wal_${index + 1}`}, ${to}, ${(10n * TOKEN).toString()})`
    const [operation] =
      yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeOperations)
      )
    if (operation === undefined) return yield* Effect.dieMessage("no operation")
    const leg = {
      from: { family: "EVM" as const, account: 6, index },
      to,
      currency: "USDT",
      amount: 10n * TOKEN,
      decimals: 18,
      walletId: `wal_${index}`
    }
    return { operation, leg, from, to }
  })

describe("a transfer in flight is never signed twice", () => {
  layer(TestLive, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect(
      "mined between the lookup and the nonce check: the sender finds it again and finishes with it — one transaction, the money moved once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Devnet
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          faults.missAfterBroadcast = true
          const { operation, leg, from, to } = yield* collection("op_1", 0)

          const outcome = yield* sender.send(operation, leg).pipe(
            Effect.ensuring(
              Effect.sync(() => {
                faults.missAfterBroadcast = false
              })
            )
          )
          // before the fix: the missed lookup read as "dead", a new transaction was signed each time, until
          // the sender held no more (ten transfers of ten tokens: all 100 sent; then "refused before signing")
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")

          const attempts = yield* sql<{
            tx_hash: string
            status: string
          }>`SELECT tx_hash, status FROM custody_transactions WHERE operation_id = 'op_1'`
          expect(attempts.length).toBe(1)
          expect(outcome._tag === "Final" ? outcome.txHash : "").toBe(attempts[0]?.tx_hash)
          // on chain: ten tokens moved, once
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
          expect(yield* devnet.client.balance(from, "USDT")).toBe(90n * TOKEN)
        })
    )

    // the review's double transfer: behind one URL, the node asked for the nonce has the block, the one asked
    // for the receipt does not (pruned, or lagging behind a load balancer). "Nonce used" + "not found" read
    // as "dead": a second transaction was signed with the next nonce and the payee got 20 tokens for 10.
    it.effect(
      "a used nonce and lookups that find nothing: the wallet halts, nothing is signed again, and the transfer is booked once a node finds it",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Devnet
          const sender = yield* TransferSender
          const store = yield* CustodyStore
          const faults = yield* NodeFaults
          const { operation, leg, from, to } = yield* collection("op_4", 6)
          faults.pruned = true
          const sending = yield* Effect.fork(sender.send(operation, leg))
          const [halted] = yield* until(
            "the wallet to halt",
            Effect.orDie(
              sql<{ halted_reason: string | null }>`SELECT halted_reason FROM custody_operations WHERE id = 'op_4'`
            ),
            ([row]) => row?.halted_reason !== null && row?.halted_reason !== undefined,
            10_000
          )
          expect(halted?.halted_reason).toMatch(/nonce 0 .* is used in final state, but no node finds/)
          expect((yield* store.stats()).halted.map((h) => h.id)).toEqual(["op_4"])
          // a while halted: still one transaction, mined once, and nothing else signed
          yield* Effect.sleep("500 millis")
          expect(Option.isNone(yield* Fiber.poll(sending))).toBe(true)
          expect(
            (yield* sql<{
              nonce: string
            }>`SELECT nonce::text AS nonce FROM custody_transactions WHERE operation_id = 'op_4'`).map((r) => r.nonce)
          ).toEqual(["0"])

          faults.pruned = false
          const outcome = yield* Fiber.join(sending)
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
          const attempts = yield* sql<{
            status: string
          }>`SELECT status FROM custody_transactions WHERE operation_id = 'op_4'`
          expect(attempts.map((a) => a.status)).toEqual(["included"])
          expect(
            (yield* sql<{
              halted_reason: string | null
            }>`SELECT halted_reason FROM custody_operations WHERE id = 'op_4'`)[0]?.halted_reason
          ).toBeNull()
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
          expect(yield* devnet.client.balance(from, "USDT")).toBe(90n * TOKEN)
        }).pipe(
          Effect.ensuring(
            Effect.flatMap(NodeFaults, (f) =>
              Effect.sync(() => {
                f.pruned = false
              })
            )
          )
        )
    )

    // a node's gas price is an answer, not an order: a spike (or a lying node) above the cap signs nothing;
    // the transfer waits for it to fall, and fails after FACET_FEE_WAIT_MINUTES (2 s here) if it does not
    it.effect(
      "a gas price above the chain's cap signs nothing: waited out when it falls, failed when it stays (nothing signed, nothing sent)",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Devnet
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          const { operation, leg, to } = yield* collection("op_5", 8)
          faults.gasPrice = 500n * 10n ** 9n // 500 gwei, the cap is 10
          const sending = yield* Effect.fork(sender.send(operation, leg))
          yield* until(
            "the fee wait",
            Effect.orDie(
              sql<{
                waiting_for: string | null
                fee_capped_since: Date | null
              }>`SELECT waiting_for, fee_capped_since FROM custody_operations WHERE id = 'op_5'`
            ),
            // the wait is recorded (since when, then in words) before the step's next poll
            ([row]) =>
              row?.fee_capped_since !== null &&
              row?.fee_capped_since !== undefined &&
              row.waiting_for?.includes("the network fee to fall under its cap") === true,
            10_000
          )
          expect(yield* sql`SELECT 1 FROM custody_transactions WHERE operation_id = 'op_5'`).toHaveLength(0)
          faults.gasPrice = undefined
          const outcome = yield* Fiber.join(sending)
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
          expect(outcome._tag === "Final" ? outcome.maxFee : 0n).toBeLessThanOrEqual(2n * 10n ** 15n)
          expect(
            (yield* sql<{
              fee_capped_since: Date | null
            }>`SELECT fee_capped_since FROM custody_operations WHERE id = 'op_5'`)[0]?.fee_capped_since
          ).toBeNull()
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)

          // a leg capped below any fee (a native withdrawal's quote): it never signs, and fails after the wait
          const capped = yield* collection("op_6", 10)
          const failed = yield* sender.send(capped.operation, { ...capped.leg, maxFee: 1n })
          expect(failed._tag).toBe("Failed")
          expect(failed._tag === "Failed" ? failed.reason : "").toMatch(
            /the network fee stayed above its cap for 2s: BEP20: the transfer would cost up to \d+ .* above its cap of 1 /
          )
          expect(yield* sql`SELECT 1 FROM custody_transactions WHERE operation_id = 'op_6'`).toHaveLength(0)
          expect(yield* devnet.client.balance(capped.to, "USDT")).toBe(0n)
        }).pipe(
          Effect.ensuring(
            Effect.flatMap(NodeFaults, (f) =>
              Effect.sync(() => {
                f.gasPrice = undefined
              })
            )
          )
        )
    )

    // A transfer priced under what blocks now ask waits in mempools for ever (and, before, a refused first
    // send left a nonce gap no node mines): it is replaced at its nonce with a higher gas price, within the cap.
    it.effect(
      "stuck underpriced: replaced at the same nonce with a higher gas price; the replacement lands, the first is dropped, the money moved once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Devnet
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          const { operation, leg, from, to } = yield* collection("op_7", 12)
          const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) })
          yield* Effect.acquireRelease(
            Effect.promise(() => anvil.setAutomine(false)),
            () => Effect.promise(() => anvil.setAutomine(true))
          )
          yield* Effect.promise(() => anvil.setNextBlockBaseFeePerGas({ baseFeePerGas: 10n ** 8n }))
          yield* mineBlocks(devnet.rpcUrl, 1)
          faults.feeBumpAfter = Duration.seconds(1)
          faults.gasPrice = 10n ** 9n // the node quotes 1 gwei; the next blocks ask for 5 (the node drops it from its pool)
          const sending = yield* Effect.fork(sender.send(operation, leg))
          const [first] = yield* until(
            "the first send",
            attemptsOf(sql, "op_7"),
            (rows) => rows[0]?.status === "broadcast",
            10_000
          )
          faults.gasPrice = undefined
          yield* Effect.promise(() => anvil.setNextBlockBaseFeePerGas({ baseFeePerGas: 5n * 10n ** 9n }))
          yield* mineBlocks(devnet.rpcUrl, 1)
          yield* until(
            "a replacement sent",
            attemptsOf(sql, "op_7"),
            (rows) => rows.length >= 2 && rows[0]?.status === "replaced" && rows.at(-1)?.status === "broadcast",
            10_000
          )
          yield* mineBlocks(devnet.rpcUrl, 1)
          const outcome = yield* Fiber.join(sending)
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
          const attempts = yield* attemptsOf(sql, "op_7")
          // one nonce, one landed attempt (the one booked), every other dropped
          expect(new Set(attempts.map((a) => a.nonce))).toEqual(new Set([first?.nonce]))
          expect(attempts.filter((a) => a.status === "included").map((a) => a.tx_hash)).toEqual([
            outcome._tag === "Final" ? outcome.txHash : ""
          ])
          expect(attempts.filter((a) => a.status !== "included").map((a) => a.status)).toEqual(
            attempts.slice(0, -1).map(() => "dropped")
          )
          expect(BigInt(attempts.at(-1)?.gas_price ?? "0")).toBeGreaterThan(BigInt(first?.gas_price ?? "0"))
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
          expect(yield* devnet.client.balance(from, "USDT")).toBe(90n * TOKEN)
          // the merchant-visible rows: the landed one pending until its operation completes, the others failed
          const rows = yield* sql<{
            status: string
          }>`SELECT status FROM transactions WHERE operation_id = 'op_7' ORDER BY created_at`
          expect(rows.map((r) => r.status).sort()).toEqual(
            [...attempts.slice(0, -1).map(() => "failed"), "pending"].sort()
          )
        }).pipe(
          Effect.ensuring(
            Effect.flatMap(NodeFaults, (f) =>
              Effect.sync(() => {
                f.gasPrice = undefined
                f.feeBumpAfter = Duration.minutes(1)
              })
            )
          ),
          Effect.scoped
        )
    )

    it.effect(
      "replaced, and then the first one lands after all (its replacement lost by the node): the first is found by its nonce and booked",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Devnet
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          const { operation, leg, to } = yield* collection("op_8", 14)
          const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) })
          yield* Effect.acquireRelease(
            Effect.promise(() => anvil.setAutomine(false)),
            () => Effect.promise(() => anvil.setAutomine(true))
          )
          faults.feeBumpAfter = Duration.seconds(1)
          // the first waits in the node's pool (nothing is mined); its replacement is taken by a node that loses it
          const sending = yield* Effect.fork(sender.send(operation, leg))
          const [first] = yield* until(
            "the first send",
            attemptsOf(sql, "op_8"),
            (rows) => rows[0]?.status === "broadcast",
            10_000
          )
          faults.swallowSends = true
          yield* until(
            "a replacement sent",
            attemptsOf(sql, "op_8"),
            (rows) => rows.length >= 2 && rows.at(-1)?.status === "broadcast",
            10_000
          )
          // the first, still in the pool, is mined
          yield* mineBlocks(devnet.rpcUrl, 1)
          const outcome = yield* Fiber.join(sending)
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
          expect(outcome._tag === "Final" ? outcome.txHash : "").toBe(first?.tx_hash)
          const attempts = yield* attemptsOf(sql, "op_8")
          expect(attempts.map((a) => a.status)).toEqual(["included", ...attempts.slice(1).map(() => "dropped")])
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
        }).pipe(
          Effect.ensuring(
            Effect.flatMap(NodeFaults, (f) =>
              Effect.sync(() => {
                f.swallowSends = false
                f.feeBumpAfter = Duration.minutes(1)
              })
            )
          ),
          Effect.scoped
        )
    )

    // before: the refused attempt kept nonce N; every later transfer from the address was signed at N + 1,
    // which no node mines, and waited for ever with its funds locked
    // issue 46: a refusal proves nothing, so it never releases money by itself; a refusal that says the transfer
    // cannot go (no funds for it) has its nonce filled by a cancellation, and only that, final, fails it
    it.effect(
      "refused at its first send (insufficient funds): its nonce is filled by a cancellation, the operation fails once that is final, and the next transfer takes the next nonce",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          const devnet = yield* Devnet
          const { operation, leg, from, to } = yield* collection("op_9", 16)
          faults.refuseNext = true
          const refused = yield* sender.send(operation, leg)
          expect(refused._tag).toBe("Failed")
          expect(refused._tag === "Failed" ? refused.reason : "").toMatch(
            /^cancelled: the node refused the transfer \(insufficient funds for gas \* price \+ value\), and 0x[0-9a-f]{64} filled its nonce 0 in block \d+; nothing moved but its fee$/
          )
          // the refused transfer and its cancellation at the same nonce: the cancellation landed, the transfer never will
          const attempts = yield* attemptsOf(sql, "op_9")
          expect(attempts.map((a) => [a.status, a.nonce])).toEqual([
            ["dropped", "0"],
            ["included", "0"]
          ])
          expect(refused._tag === "Failed" ? refused.burned : 0n).toBeGreaterThan(0n)
          yield* sql`UPDATE custody_operations SET status = 'FAILED' WHERE id = 'op_9'`
          yield* sql`INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address, to_wallet_id, to_address, amount)
                   VALUES ('op_9b', 'collection', 'SWEEPING', 'm1', 'BEP20', 'USDT', ${operation.wallet_id}, ${operation.from_address}, ${operation.to_wallet_id}, ${to}, ${(10n * TOKEN).toString()})`
          const [next] =
            yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = 'op_9b'`.pipe(
              Effect.flatMap(decodeOperations)
            )
          if (next === undefined) return yield* Effect.dieMessage("no operation")
          const outcome = yield* sender.send(next, leg)
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
          expect((yield* attemptsOf(sql, "op_9b")).map((a) => [a.status, a.nonce])).toEqual([["included", "1"]])
          // the tokens moved once: by the second operation
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
          expect(yield* devnet.client.balance(from, "USDT")).toBe(90n * TOKEN)
        })
    )

    // issue 46, defect 1: behind one URL a send is accepted by one backend and answered by another ("nonce too
    // low" from a balancer's retry, a gateway's "insufficient funds"), and the lookup right after lands on a
    // lagging backend. Before: refusal + "not found" → attempt rejected, operation FAILED, money released, while
    // the tokens moved — the merchant's next payout for the same invoice paid twice.
    it.effect(
      "refused at its first send by a node that passed it on, and not found after: nothing is released, the transfer is found and booked once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          const devnet = yield* Devnet
          const statusOf = (id: string) =>
            Effect.map(
              Effect.orDie(
                sql<{ halted_reason: string | null }>`SELECT halted_reason FROM custody_operations WHERE id = ${id}`
              ),
              ([row]) => row?.halted_reason ?? null
            )
          for (const [id, index, refusal] of [
            ["op_11", 22, "-32000: nonce too low"],
            ["op_12", 24, "-32000: insufficient funds for gas * price + value"]
          ] as const) {
            const { operation, leg, from, to } = yield* collection(id, index)
            faults.pruned = true
            faults.forwardThenRefuse = refusal
            const sending = yield* Effect.fork(sender.send(operation, leg))
            yield* until("the wallet to halt on its used nonce", statusOf(id), (halted) => halted !== null, 15_000)
            // the tokens moved; the operation is not failed and nothing was given back
            expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
            expect(Option.isNone(yield* Fiber.poll(sending))).toBe(true)
            faults.forwardThenRefuse = undefined
            faults.pruned = false
            const outcome = yield* Fiber.join(sending)
            expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
            const landed = (yield* attemptsOf(sql, id)).filter((a) => a.status === "included")
            expect(landed.map((a) => a.tx_hash)).toEqual([outcome._tag === "Final" ? outcome.txHash : ""])
            expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
            expect(yield* devnet.client.balance(from, "USDT")).toBe(90n * TOKEN)
          }

          // the rule before the fix, switched back on (SendRules): the same answers fail the operation while its
          // tokens moved
          const old = yield* collection("op_13", 26)
          faults.pruned = true
          faults.forwardThenRefuse = "-32000: nonce too low"
          const failed = yield* sender
            .send(old.operation, old.leg)
            .pipe(Effect.provideService(SendRules, { refusalIsNoEvidence: false, lowestFreeNonce: true }))
          expect(failed._tag).toBe("Failed")
          expect(yield* devnet.client.balance(old.to, "USDT")).toBe(10n * TOKEN)
        }).pipe(
          Effect.ensuring(
            Effect.flatMap(NodeFaults, (f) =>
              Effect.sync(() => {
                f.pruned = false
                f.forwardThenRefuse = undefined
              })
            )
          )
        )
    )

    // issue 46, defect 3: a transfer signed at nonce n but not yet sent (a crash between signing and sending; the
    // actor took another message first) while the address's next one got n+1. Before: n refused at its first
    // send → rejected, and the counter gave nothing back (it stood at n+2): nonce n never used again, n+1 and
    // every later transfer of the address waiting behind the gap forever — a frozen gas wallet.
    it.effect(
      "refused at its first send while the next nonce is out: the gap is filled, and the next transfer lands",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const sender = yield* TransferSender
          const store = yield* CustodyStore
          const faults = yield* NodeFaults
          const devnet = yield* Devnet
          const { operation, leg, from, to } = yield* collection("op_14", 28)
          // op_14 signed and stored at nonce 0, not sent
          const signed = yield* devnet.proxied.prepare({
            from: leg.from,
            to: leg.to,
            currency: leg.currency,
            amount: leg.amount,
            nonce: 0n
          })
          yield* store.recordSigned(operation, signed, leg)
          yield* sql`INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address, to_wallet_id, to_address, amount)
                   VALUES ('op_14b', 'gas_funding', 'SWEEPING', 'm1', 'BEP20', 'USDT', ${operation.wallet_id}, ${from}, ${operation.to_wallet_id}, ${to}, ${(10n * TOKEN).toString()})`
          const [next] =
            yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = 'op_14b'`.pipe(
              Effect.flatMap(decodeOperations)
            )
          if (next === undefined) return yield* Effect.dieMessage("no operation")
          // the next transfer is sent first, at nonce 1: no block takes it while nonce 0 is unused
          expect(yield* sender.sendOut(next, leg)).toEqual(Option.none())
          expect((yield* attemptsOf(sql, "op_14b")).map((a) => a.nonce)).toEqual(["1"])
          // op_14's first send is refused: its nonce is filled, and op_14b lands behind it
          faults.refuseNext = true
          const refused = yield* sender.send(operation, leg)
          expect(refused._tag === "Failed" ? refused.reason : "").toMatch(/^cancelled: the node refused the transfer/)
          const landed = yield* sender.send(next, leg)
          expect(landed._tag, landed._tag === "Failed" ? landed.reason : "").toBe("Final")
          expect(yield* devnet.client.finalNonce(from)).toBe(2n)
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
        })
    )

    // a node on another branch (or a lying one) says the transfer failed in a final block: before, the
    // operation failed and a withdrawal's money went back while the bytes, still in a mempool, could land
    it.effect(
      "a receipt saying 'failed in a final block' that the final block does not hold: waited out, the transfer lands and is booked once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Devnet
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          const { operation, leg, to } = yield* collection("op_10", 18)
          const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) })
          yield* Effect.acquireRelease(
            Effect.promise(() => anvil.setAutomine(false)),
            () => Effect.promise(() => anvil.setAutomine(true))
          )
          faults.fakeFailedReceipts = true
          const sending = yield* Effect.fork(sender.send(operation, leg))
          yield* until(
            "the lie to be weighed",
            Effect.orDie(
              sql<{ waiting_for: string | null }>`SELECT waiting_for FROM custody_operations WHERE id = 'op_10'`
            ),
            ([row]) => row?.waiting_for?.includes("the final block 1 as read does not hold it") === true,
            10_000
          )
          expect(Option.isNone(yield* Fiber.poll(sending))).toBe(true)
          // nothing failed, nothing given back, nothing signed again
          expect((yield* attemptsOf(sql, "op_10")).map((a) => a.status)).not.toContain("reverted")
          expect(yield* attemptsOf(sql, "op_10")).toHaveLength(1)
          faults.fakeFailedReceipts = false
          yield* until("the send", attemptsOf(sql, "op_10"), (rows) => rows[0]?.status === "broadcast", 10_000)
          yield* mineBlocks(devnet.rpcUrl, 1)
          const outcome = yield* Fiber.join(sending)
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
        }).pipe(
          Effect.ensuring(
            Effect.flatMap(NodeFaults, (f) =>
              Effect.sync(() => {
                f.fakeFailedReceipts = false
              })
            )
          ),
          Effect.scoped
        )
    )

    // the review's double withdrawal: sent to one node, then refused when sent again by a node that lags
    // behind it. Marked "rejected", the operation failed and a withdrawal's money went back to the
    // merchant while the first copy, still in a mempool, could land.
    it.effect(
      "refused when sent again by a lagging node after a node took it: it is waited for, lands, and finishes once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Devnet
          const sender = yield* TransferSender
          const faults = yield* NodeFaults
          const { operation, leg, from, to } = yield* collection("op_2", 2)
          const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) })
          // the first send stays in anvil's mempool until a block is mined by hand
          yield* Effect.acquireRelease(
            Effect.promise(() => anvil.setAutomine(false)),
            () => Effect.promise(() => anvil.setAutomine(true))
          )
          faults.lagging = true
          const sending = yield* Effect.fork(sender.send(operation, leg))
          // the refusal of the second send is recorded on the attempt, and the sender goes on waiting
          yield* until(
            "the second send's refusal",
            Effect.orDie(
              sql<{
                last_error: string | null
              }>`SELECT last_error FROM custody_transactions WHERE operation_id = 'op_2'`
            ),
            ([refused]) => refused?.last_error?.includes("nonce too low") === true,
            10_000
          )
          yield* Effect.sleep("300 millis")
          expect(Option.isNone(yield* Fiber.poll(sending))).toBe(true)
          expect(
            (yield* sql<{ status: string }>`SELECT status FROM custody_transactions WHERE operation_id = 'op_2'`).map(
              (r) => r.status
            )
          ).toEqual(["broadcast"])

          // the copy the first node took is mined; the node catches up
          faults.lagging = false
          yield* mineBlocks(devnet.rpcUrl, 1)
          const outcome = yield* Fiber.join(sending)
          expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")
          // one attempt, the one first sent (its operation, not the sender, marks it final)
          const attempts = yield* sql<{
            tx_hash: string
            status: string
          }>`SELECT tx_hash, status FROM custody_transactions WHERE operation_id = 'op_2'`
          expect(attempts.map((a) => a.status)).toEqual(["included"])
          expect(outcome._tag === "Final" ? outcome.txHash : "").toBe(attempts[0]?.tx_hash)
          expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
          expect(yield* devnet.client.balance(from, "USDT")).toBe(90n * TOKEN)
        }).pipe(
          Effect.ensuring(
            Effect.flatMap(NodeFaults, (f) =>
              Effect.sync(() => {
                f.lagging = false
              })
            )
          ),
          Effect.scoped
        )
    )
  })
})
