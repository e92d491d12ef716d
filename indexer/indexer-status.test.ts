import { describe, expect, it } from "@effect/vitest"
import { type ChainIndexerStatus, indexerProblems, prometheusMetrics } from "./indexer-status.js"

const status = (patch: Partial<ChainIndexerStatus>): ChainIndexerStatus => ({
  chain: "BEP20", state: "following", head: "10", cursor: "10", lagBlocks: 0, lagSeconds: 0, watchedAddresses: 1, blocksPerSecond: 0,
  detail: "", nodeAnsweredAt: 0, cursorStored: true, ...patch
})

describe("indexer health", () => {
  it("a node that has not answered for longer than the limit degrades the service; a shorter outage does not", () => {
    const now = 100_000
    expect(indexerProblems([status({ state: "retrying", nodeAnsweredAt: now - 30_000, detail: "eth_blockNumber: fetch failed" })], now, 60_000)).toEqual([])
    expect(indexerProblems([status({ state: "retrying", nodeAnsweredAt: now - 61_000, detail: "eth_blockNumber: fetch failed" })], now, 60_000))
      .toEqual(["BEP20 node unreachable for 61 s: eth_blockNumber: fetch failed"])
    // another runner indexes the chain: this one does not talk to the node, nothing is wrong
    expect(indexerProblems([status({ state: "standby", nodeAnsweredAt: 0 })], now, 60_000)).toEqual([])
    expect(prometheusMetrics([status({ state: "retrying", nodeAnsweredAt: now - 61_000 })], now))
      .toContain(`facet_indexer_node_unreachable_seconds{chain="BEP20"} 61`)
  })

  it("a halted indexer is always a problem", () => {
    expect(indexerProblems([status({ state: "halted", detail: "BEP20: the node's chain is not the one this database indexed", nodeAnsweredAt: 99_000 })], 100_000, 60_000))
      .toEqual(["BEP20 indexer halted: BEP20: the node's chain is not the one this database indexed"])
  })
})
