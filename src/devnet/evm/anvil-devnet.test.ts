import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as path from "node:path"
import { createPublicClient, createTestClient, createWalletClient, http } from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { tempDir } from "../../../test/temp-dir.js"
import { makeBep20Client } from "../../chains/evm/bep20-client.js"
import { masterSeedFromMnemonic } from "../../keys/master-seed.js"
import { LocalSignerLive } from "../../keys/signer.js"
import { ANVIL_MNEMONIC, CUSTOMER_INDEX, devnetChain, startAnvilDevnet, tokenAbi } from "./anvil-devnet.js"

describe("the anvil devnet across a restart", () => {
  it.scopedLive(
    "a block mined before it stopped can still be traced after it resumed: an indexer behind it reads it, token transfer and all; the resumed chain's blocks are stamped after the last one",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir("facet-anvil-restart-")
        const stateFile = path.join(dir, "bep20-anvil-state.json")
        const first = yield* Scope.make()
        const devnet = yield* startAnvilDevnet({ stateFile }).pipe(Scope.extend(first))
        const to = "0x00000000000000000000000000000000000000a1"
        const wallet = createWalletClient({
          account: mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX }),
          transport: http(devnet.rpcUrl)
        })
        const hash = yield* Effect.promise(() =>
          wallet.writeContract({
            address: devnet.tokens.USDT,
            abi: tokenAbi,
            functionName: "transfer",
            args: [to, 7n],
            chain: devnetChain(devnet.rpcUrl)
          })
        )
        const receipt = yield* Effect.promise(() =>
          createPublicClient({ transport: http(devnet.rpcUrl) }).waitForTransactionReceipt({
            hash,
            pollingInterval: 50
          })
        )
        // blocks mined faster than one a second are stamped ahead of the clock
        yield* Effect.promise(() =>
          createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 })
        ).pipe(Effect.repeatN(4))
        const before = yield* Effect.promise(() =>
          createPublicClient({ transport: http(devnet.rpcUrl) }).getBlock({ blockTag: "latest" })
        )
        // stopped as the service's death stops it (its lifeline sends SIGTERM, anvil saves its state), then resumed
        yield* Scope.close(first, Exit.void)

        const again = yield* startAnvilDevnet({ stateFile, tokens: devnet.tokens })
        expect(again.tokens.USDT).toBe(devnet.tokens.USDT)
        const resumed = createTestClient({ mode: "anvil", transport: http(again.rpcUrl) })
        yield* Effect.promise(() => resumed.mine({ blocks: 1 }))
        const after = yield* Effect.promise(() =>
          createPublicClient({ transport: http(again.rpcUrl) }).getBlock({ blockTag: "latest" })
        )
        expect(after.number).toBe(before.number + 1n)
        expect(after.timestamp).toBeGreaterThan(before.timestamp)
        const client = yield* makeBep20Client({
          rpcUrl: again.rpcUrl,
          chainId: again.chainId,
          tokens: new Map([["USDT", again.tokens.USDT]]),
          confirmations: 0,
          traces: "callTracer"
        })
        const [block] = yield* client.blocks(receipt.blockNumber, receipt.blockNumber)
        expect(block?.transfers.map((t) => [t.txHash, t.to.toLowerCase(), t.amount])).toContainEqual([hash, to, 7n])
      }).pipe(Effect.provide(LocalSignerLive.pipe(Layer.provide(masterSeedFromMnemonic(ANVIL_MNEMONIC))))),
    { timeout: 60_000 }
  )
})
