import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { createPublicClient, createTestClient, createWalletClient, encodeFunctionData, http, type Address } from "viem"
import { mnemonicToAccount } from "viem/accounts"
import {
  ANVIL_CHAIN_ID,
  ANVIL_MNEMONIC,
  CUSTOMER_INDEX,
  devnetChain,
  fundNative,
  reorgAnvil,
  startAnvilDevnet,
  tokenAbi
} from "../../devnet/evm/anvil-devnet.js"
import { masterSeedFromMnemonic } from "../../keys/master-seed.js"
import { LocalSignerLive } from "../../keys/signer.js"
import { type ChainClient, sendTransfer } from "../chain-client.js"
import { makeBep20Client } from "./bep20-client.js"
import { bloomMayContain, TRANSFER_TOPIC } from "./evm-decoding.js"
import { evmAddressOf } from "../../../test/evm-addresses.js"
import { asRecord } from "../../../test/json.js"
import { rpcId, rpcMethod, rpcParams, startNodeProxy } from "../../../test/node-proxy.js"

class Devnet extends Context.Tag("test/Bep20Devnet")<
  Devnet,
  { readonly rpcUrl: string; readonly client: ChainClient; readonly usdt: Address; readonly velnx: Address }
>() {}

const SignerLive = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

const DevnetLive = Layer.scoped(
  Devnet,
  Effect.gen(function* () {
    const devnet = yield* startAnvilDevnet()
    const client = yield* makeBep20Client({
      rpcUrl: devnet.rpcUrl,
      chainId: devnet.chainId,
      tokens: new Map([
        ["USDT", devnet.tokens.USDT],
        ["VELNX", devnet.tokens.VELNX]
      ]),
      confirmations: 3
    })
    return { rpcUrl: devnet.rpcUrl, client, usdt: devnet.tokens.USDT, velnx: devnet.tokens.VELNX }
  })
).pipe(Layer.provideMerge(SignerLive))

const customer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX })

describe("BEP20 client on the anvil devnet", () => {
  layer(DevnetLive, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("moves tokens and BNB out and back, signed by our keys, and sees them in balances and blocks", () =>
      Effect.gen(function* () {
        const { client, rpcUrl, usdt } = yield* Devnet
        const a = yield* evmAddressOf(4, 0)
        const b = yield* evmAddressOf(4, 1)
        yield* fundNative(rpcUrl, a, 10n ** 18n)
        yield* fundNative(rpcUrl, b, 10n ** 18n)
        const wallet = createWalletClient({ account: customer, transport: http(rpcUrl) })
        const funded = yield* Effect.promise(() =>
          wallet.writeContract({
            address: usdt,
            abi: tokenAbi,
            functionName: "transfer",
            args: [a, 50n * 10n ** 18n],
            chain: devnetChain(rpcUrl)
          })
        )
        expect(yield* client.balance(a, "USDT")).toBe(50n * 10n ** 18n)

        const start = yield* client.head
        const out = yield* sendTransfer(client, {
          from: { family: "EVM", account: 4, index: 0 },
          to: b,
          currency: "USDT",
          amount: 12n * 10n ** 18n
        })
        const back = yield* sendTransfer(client, {
          from: { family: "EVM", account: 4, index: 1 },
          to: a,
          currency: "USDT",
          amount: 2n * 10n ** 18n
        })
        const native = yield* sendTransfer(client, {
          from: { family: "EVM", account: 4, index: 0 },
          to: b,
          currency: "BNB",
          amount: 10n ** 15n
        })
        expect(yield* client.balance(a, "USDT")).toBe(40n * 10n ** 18n)
        expect(yield* client.balance(b, "USDT")).toBe(10n * 10n ** 18n)

        const lookup = yield* client.transaction(out)
        expect(Option.map(lookup, (l) => l.status)).toEqual(Option.some("success"))
        const tip = yield* client.head
        const blocks = yield* client.blocks(start + 1n, tip)
        const transfers = blocks.flatMap((bl) => bl.transfers)
        expect(transfers.find((t) => t.txHash === out)).toMatchObject({
          currency: "USDT",
          from: a,
          to: b,
          amount: 12n * 10n ** 18n,
          success: true
        })
        expect(transfers.find((t) => t.txHash === back)).toMatchObject({ from: b, to: a, amount: 2n * 10n ** 18n })
        expect(transfers.find((t) => t.txHash === native)).toMatchObject({
          currency: "BNB",
          eventIndex: -1,
          to: b,
          amount: 10n ** 15n,
          success: true
        })
        for (let i = 1; i < blocks.length; i++) expect(blocks[i]?.parentHash).toBe(blocks[i - 1]?.hash)
        expect(transfers.some((t) => t.txHash === funded)).toBe(false)
        expect(yield* client.finalized).toBe(tip - 3n)
      })
    )

    it.effect("refuses an overdraft before signing, reports failed and unknown transactions", () =>
      Effect.gen(function* () {
        const { client, rpcUrl, usdt } = yield* Devnet
        const poor = yield* evmAddressOf(4, 7)
        yield* fundNative(rpcUrl, poor, 10n ** 17n)
        const refused = yield* Effect.flip(
          sendTransfer(client, {
            from: { family: "EVM", account: 4, index: 7 },
            to: poor,
            currency: "USDT",
            amount: 1n
          })
        )
        expect(refused._tag).toBe("TransferRejected")

        // a reverting transfer forced on chain with a fixed gas limit is mined as failed
        const wallet = createWalletClient({ account: customer, transport: http(rpcUrl) })
        const failed = yield* Effect.promise(() =>
          wallet.sendTransaction({
            to: usdt,
            gas: 100_000n,
            chain: devnetChain(rpcUrl),
            data: encodeFunctionData({ abi: tokenAbi, functionName: "transfer", args: [poor, 10n ** 40n] })
          })
        )
        const publicClient = createPublicClient({ transport: http(rpcUrl) })
        yield* Effect.promise(() => publicClient.waitForTransactionReceipt({ hash: failed, pollingInterval: 50 }))
        expect(Option.map(yield* client.transaction(failed), (l) => l.status)).toEqual(Option.some("failed"))
        expect(yield* client.transaction(`0x${"ab".repeat(32)}`)).toEqual(Option.none())
      })
    )

    it.effect("an injected reorg shows as a changed block hash", () =>
      Effect.gen(function* () {
        const { client, rpcUrl } = yield* Devnet
        const tip = yield* client.head
        const [before] = yield* client.blocks(tip, tip)
        yield* reorgAnvil(rpcUrl, 2)
        const [after] = yield* client.blocks(tip, tip)
        expect(after?.number).toBe(tip)
        expect(after?.hash).not.toBe(before?.hash)
      })
    )

    it.effect(
      "a log index behind its node ([] for the block): the block's receipts give its token deposit; a node without the block's receipts fails the read",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { rpcUrl, usdt } = yield* Devnet
            const to = yield* evmAddressOf(4, 7)
            const wallet = createWalletClient({ account: customer, transport: http(rpcUrl) })
            const hash = yield* Effect.promise(() =>
              wallet.writeContract({
                address: usdt,
                abi: tokenAbi,
                functionName: "transfer",
                args: [to, 5n * 10n ** 18n],
                chain: devnetChain(rpcUrl)
              })
            )
            const receipt = yield* Effect.promise(() =>
              createPublicClient({ transport: http(rpcUrl) }).waitForTransactionReceipt({ hash, pollingInterval: 50 })
            )
            const noLogs = (body: unknown) =>
              rpcMethod(body) === "eth_getLogs" ? { jsonrpc: "2.0", id: rpcId(body), result: [] } : undefined
            const proxy = yield* startNodeProxy(rpcUrl, noLogs)
            const lagging = yield* makeBep20Client({
              rpcUrl: proxy.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3
            })
            const [block] = yield* lagging.blocks(receipt.blockNumber, receipt.blockNumber)
            expect(block?.transfers.map((t) => [t.txHash, t.to, t.amount])).toEqual([[hash, to, 5n * 10n ** 18n]])
            // the receipts asked of a node that does not hold the block (null): no proof either way, read again
            const without = yield* startNodeProxy(
              rpcUrl,
              (call) =>
                noLogs(call.body) ??
                (rpcMethod(call.body) === "eth_getBlockReceipts"
                  ? { jsonrpc: "2.0", id: rpcId(call.body), result: null }
                  : undefined)
            )
            const behind = yield* makeBep20Client({
              rpcUrl: without.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3
            })
            const failed = yield* Effect.flip(behind.blocks(receipt.blockNumber, receipt.blockNumber))
            expect(failed.message).toMatch(/eth_getLogs gave none and its receipts are not all there; read it again/)
            // a node without eth_getBlockReceipts: each transaction's receipt
            const old = yield* startNodeProxy(
              rpcUrl,
              (call) =>
                noLogs(call.body) ??
                (rpcMethod(call.body) === "eth_getBlockReceipts"
                  ? {
                      jsonrpc: "2.0",
                      id: rpcId(call.body),
                      error: {
                        code: -32601,
                        message: "the method eth_getBlockReceipts does not exist/is not available"
                      }
                    }
                  : undefined)
            )
            const older = yield* makeBep20Client({
              rpcUrl: old.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3
            })
            const [again] = yield* older.blocks(receipt.blockNumber, receipt.blockNumber)
            expect(again?.transfers.map((t) => [t.txHash, t.amount])).toEqual([[hash, 5n * 10n ** 18n]])
          })
        )
    )

    // a bloom cannot say the Transfer topic and a watched token's address came from one log: another token's
    // Transfer and the watched token's own Approval in one block match it, eth_getLogs rightly answers [],
    // and the read used to be retried for ever, stopping every deposit after it (#32 item 1)
    it.effect(
      "a block whose bloom matches a watched token only by chance (its Approval beside another token's Transfer) is read as it is",
      () =>
        Effect.gen(function* () {
          const { rpcUrl, usdt, velnx } = yield* Devnet
          const to = yield* evmAddressOf(4, 9)
          const wallet = createWalletClient({ account: customer, transport: http(rpcUrl) })
          const anvil = createTestClient({ mode: "anvil", transport: http(rpcUrl) })
          yield* Effect.promise(() => anvil.setAutomine(false))
          const other = yield* Effect.promise(() =>
            wallet.writeContract({
              address: velnx,
              abi: tokenAbi,
              functionName: "transfer",
              args: [to, 10n ** 18n],
              chain: devnetChain(rpcUrl)
            })
          )
          yield* Effect.promise(() =>
            wallet.writeContract({
              address: usdt,
              abi: tokenAbi,
              functionName: "approve",
              args: [to, 10n ** 18n],
              chain: devnetChain(rpcUrl)
            })
          )
          yield* Effect.promise(() => anvil.mine({ blocks: 1 }))
          yield* Effect.promise(() => anvil.setAutomine(true))
          const publicClient = createPublicClient({ transport: http(rpcUrl) })
          const receipt = yield* Effect.promise(() =>
            publicClient.waitForTransactionReceipt({ hash: other, pollingInterval: 50 })
          )
          const body = yield* Effect.promise(() => publicClient.getBlock({ blockNumber: receipt.blockNumber }))
          expect(body.transactions).toHaveLength(2)
          expect([
            bloomMayContain(body.logsBloom ?? "0x", TRANSFER_TOPIC),
            bloomMayContain(body.logsBloom ?? "0x", usdt)
          ]).toEqual([true, true])
          const usdtOnly = yield* makeBep20Client({
            rpcUrl,
            chainId: ANVIL_CHAIN_ID,
            tokens: new Map([["USDT", usdt]]),
            confirmations: 3
          })
          const [block] = yield* usdtOnly.blocks(receipt.blockNumber, receipt.blockNumber)
          expect(block?.number).toBe(receipt.blockNumber)
          expect(block?.transfers).toEqual([])
          // and the next block's USDT deposit is read as ever
          const paid = yield* Effect.promise(() =>
            wallet.writeContract({
              address: usdt,
              abi: tokenAbi,
              functionName: "transfer",
              args: [to, 2n * 10n ** 18n],
              chain: devnetChain(rpcUrl)
            })
          )
          const next = yield* Effect.promise(() =>
            publicClient.waitForTransactionReceipt({ hash: paid, pollingInterval: 50 })
          )
          const read = yield* usdtOnly.blocks(receipt.blockNumber, next.blockNumber)
          expect(read.flatMap((b) => b.transfers).map((t) => [t.txHash, t.amount])).toEqual([[paid, 2n * 10n ** 18n]])
        })
    )

    // "limit exceeded", "too many" and 10000 inside a hex number all read as a range refusal: a rate-limited
    // 50-block read was split down to single blocks, 236 eth_getLogs in 6.5 s (#32 item 6)
    it.effect(
      "a rate limit on eth_getLogs is not a range refusal: no splitting into more calls; a provider's range refusal still splits",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { client, rpcUrl, usdt } = yield* Devnet
            const tip = yield* client.head
            const from = tip > 50n ? tip - 49n : 1n
            let asked = 0
            const limited = yield* startNodeProxy(rpcUrl, ({ body }) => {
              if (rpcMethod(body) !== "eth_getLogs") return undefined
              asked += 1
              return {
                jsonrpc: "2.0",
                id: rpcId(body),
                error: { code: -32005, message: "rate limit exceeded: 0x10000 requests in 10s" }
              }
            })
            const throttled = yield* makeBep20Client({
              rpcUrl: limited.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3
            })
            const failed = yield* Effect.flip(throttled.blocks(from, tip))
            expect(failed.message).toContain("eth_getLogs")
            expect(asked).toBeLessThanOrEqual(4)
            // BNB Chain's own words for a range too large: split until the ranges pass
            const ranges: Array<number> = []
            const picky = yield* startNodeProxy(rpcUrl, ({ body }) => {
              if (rpcMethod(body) !== "eth_getLogs") return undefined
              const filter = asRecord(rpcParams(body)[0])
              const size = Number(BigInt(String(filter.toBlock)) - BigInt(String(filter.fromBlock))) + 1
              ranges.push(size)
              return size > 10
                ? {
                    jsonrpc: "2.0",
                    id: rpcId(body),
                    error: { code: -32000, message: "exceed maximum block range: 10" }
                  }
                : undefined
            })
            const splitting = yield* makeBep20Client({
              rpcUrl: picky.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3
            })
            const read = yield* splitting.blocks(from, tip)
            expect(read).toHaveLength(Number(tip - from) + 1)
            expect(ranges.filter((n) => n <= 10).reduce((a, b) => a + b, 0)).toBe(Number(tip - from) + 1)
          })
        )
    )

    // a fixed 15-block depth is too shallow when BSC's fast finality stalls (#32 item 8)
    it.effect(
      "finality: the lower of the node's `finalized` block and the configured depth; the depth alone where the tag is not served",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { client, rpcUrl, usdt } = yield* Devnet
            const head = yield* client.head
            let tag: bigint | "refused" = head - 10n
            const finalizing = yield* startNodeProxy(rpcUrl, ({ body }) => {
              if (rpcMethod(body) !== "eth_getBlockByNumber" || rpcParams(body)[0] !== "finalized") return undefined
              return tag === "refused"
                ? { jsonrpc: "2.0", id: rpcId(body), error: { code: -32000, message: "finalized block not found" } }
                : {
                    jsonrpc: "2.0",
                    id: rpcId(body),
                    result: {
                      number: `0x${tag.toString(16)}`,
                      hash: `0x${"11".repeat(32)}`,
                      parentHash: `0x${"22".repeat(32)}`,
                      timestamp: "0x1",
                      transactions: []
                    }
                  }
            })
            const fast = yield* makeBep20Client({
              rpcUrl: finalizing.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3,
              finality: "finalized"
            })
            expect(yield* fast.tip).toEqual({ head, finalized: head - 10n })
            expect(yield* fast.finalized).toBe(head - 10n)
            // the tag ahead of the depth: the depth is the floor
            tag = head - 1n
            expect((yield* fast.tip).finalized).toBe(head - 3n)
            // a node that does not serve the tag: the depth alone
            tag = "refused"
            expect((yield* fast.tip).finalized).toBe(head - 3n)
            const byDepth = yield* makeBep20Client({
              rpcUrl: finalizing.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3
            })
            tag = head - 10n
            expect((yield* byDepth.tip).finalized).toBe(head - 3n)
          })
        )
    )

    // a full node keeps the state to trace only its newest ~128 blocks: asked of an older block, the answer is
    // the same for ever, and a read that failed on it stopped every deposit after it (#31 item 13)
    it.effect(
      "a node whose state for a block is gone (anvil's 'Resource not found'): the block is read with its logs, marked untraced; any other trace failure fails the read",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { rpcUrl, usdt } = yield* Devnet
            const to = yield* evmAddressOf(4, 8)
            const wallet = createWalletClient({ account: customer, transport: http(rpcUrl) })
            const hash = yield* Effect.promise(() =>
              wallet.writeContract({
                address: usdt,
                abi: tokenAbi,
                functionName: "transfer",
                args: [to, 1n],
                chain: devnetChain(rpcUrl)
              })
            )
            const receipt = yield* Effect.promise(() =>
              createPublicClient({ transport: http(rpcUrl) }).waitForTransactionReceipt({ hash, pollingInterval: 50 })
            )
            const traceAnswer = (error: string) => (body: unknown) =>
              rpcMethod(body) === "debug_traceBlockByNumber"
                ? { jsonrpc: "2.0", id: rpcId(body), result: [{ error, txHash: hash }] }
                : undefined
            // what anvil answers after a restart without the states behind its blocks
            const pruned = yield* startNodeProxy(rpcUrl, ({ body }) => traceAnswer("Resource not found")(body))
            const tracing = yield* makeBep20Client({
              rpcUrl: pruned.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3,
              traces: "callTracer"
            })
            const [block] = yield* tracing.blocks(receipt.blockNumber, receipt.blockNumber)
            expect(block?.untraced).toContain(`${hash} (Resource not found)`)
            expect(block?.transfers.map((t) => [t.txHash, t.to, t.amount])).toContainEqual([hash, to, 1n])
            // a failure that may pass (another node, a later try) is no reason to read past the block
            const failing = yield* startNodeProxy(rpcUrl, ({ body }) => traceAnswer("execution timeout")(body))
            const flaky = yield* makeBep20Client({
              rpcUrl: failing.url,
              chainId: ANVIL_CHAIN_ID,
              tokens: new Map([["USDT", usdt]]),
              confirmations: 3,
              traces: "callTracer"
            })
            const failed = yield* Effect.flip(flaky.blocks(receipt.blockNumber, receipt.blockNumber))
            expect(failed.message).toContain(`could not trace transaction ${hash} (execution timeout)`)
          })
        )
    )
  })
})
