import { Effect, Option } from "effect"
import { createHash } from "node:crypto"
import type { ChainBlock, ChainClient, NormalizedTransfer } from "../src/chains/chain-client.js"
import { ChainRpcError, LandingEvidence, TransferRejected } from "../src/chains/chain-client.js"
import type { Chain } from "../src/domain/chain.js"

/**
 * A chain held in memory behind the ChainClient interface: for the attribution benchmark (no RPC in the
 * way) and for tests that need exact control of forks. Transfers are given per block; hashes chain up.
 */
export class MemoryChain {
  readonly blocks: Array<ChainBlock> = []
  private fork = 0

  /** `network` names another chain of the same family: another genesis. */
  constructor(
    readonly chain: Chain,
    readonly finalityDepth: number,
    network = ""
  ) {
    this.blocks.push({
      number: 0n,
      hash: this.hashOf(0n, `genesis${network}`),
      parentHash: "",
      timestamp: 0,
      transfers: []
    })
  }

  private hashOf(number: bigint, salt: string) {
    return createHash("sha256").update(`${this.chain}:${number}:${salt}:${this.fork}`).digest("hex")
  }

  get head(): bigint {
    return BigInt(this.blocks.length - 1)
  }

  get finalHeight(): bigint {
    return this.head > BigInt(this.finalityDepth) ? this.head - BigInt(this.finalityDepth) : 0n
  }

  /** Appends a block whose transfers are made by `make` (given the new block's number and hash). */
  append(make: (number: bigint, hash: string, parentHash: string) => ReadonlyArray<NormalizedTransfer>) {
    const parent = this.blocks[this.blocks.length - 1]
    const number = BigInt(this.blocks.length)
    const hash = this.hashOf(number, parent?.hash ?? "")
    const parentHash = parent?.hash ?? ""
    this.blocks.push({
      number,
      hash,
      parentHash,
      timestamp: Math.floor(Date.now() / 1000),
      transfers: make(number, hash, parentHash)
    })
  }

  /** Drops the last `depth` blocks and appends as many empty ones on a new branch. */
  reorg(depth: number) {
    this.blocks.splice(this.blocks.length - depth, depth)
    this.fork += 1
    for (let i = 0; i < depth; i++) this.append(() => [])
  }

  client(): ChainClient {
    return {
      chain: this.chain,
      skipsNumbers: false,
      genesis: Effect.sync(() => this.blocks[0]?.hash ?? ""),
      head: Effect.sync(() => this.head),
      finalized: Effect.sync(() => this.finalHeight),
      tip: Effect.sync(() => ({ head: this.head, finalized: this.finalHeight })),
      blockHash: (number) => Effect.sync(() => Option.fromNullable(this.blocks[Number(number)]?.hash)),
      blocks: (from, to) => Effect.sync(() => this.blocks.slice(Number(from), Number(to) + 1)),
      balance: () => Effect.fail(new ChainRpcError({ chain: this.chain, message: "no balances in a memory chain" })),
      finalBalance: () =>
        Effect.fail(new ChainRpcError({ chain: this.chain, message: "no balances in a memory chain" })),
      prepare: () =>
        Effect.fail(new TransferRejected({ chain: this.chain, message: "no transfers in a memory chain" })),
      broadcast: () =>
        Effect.fail(new TransferRejected({ chain: this.chain, message: "no transfers in a memory chain" })),
      landing: () => Effect.succeed(LandingEvidence.Open()),
      feeEstimate: () => Effect.succeed(0n),
      finalNonce: () => Effect.succeed(0n),
      transaction: () => Effect.succeed(Option.none()),
      finalInclusion: () => Effect.succeed(false)
    }
  }
}
