import { describe, expect, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import {
  type ChainIndexerStatus,
  IndexerStatus,
  IndexerStatusLive,
  indexerProblems,
  indexersNotStarted,
  prometheusMetrics,
  refreshStandby,
  reportStandby,
  reportStatus,
  standbyStatus
} from "./indexer-status.js"

const status = (patch: Partial<ChainIndexerStatus>): ChainIndexerStatus => ({
  chain: "BEP20",
  state: "following",
  head: "10",
  cursor: "10",
  lagBlocks: 0,
  lagSeconds: 0,
  watchedAddresses: 1,
  blocksPerSecond: 0,
  detail: "",
  nodeAnsweredAt: 0,
  cursorStored: true,
  ...patch
})

describe("indexer health", () => {
  it("a node that has not answered for longer than the limit degrades the service; a shorter outage does not", () => {
    const now = 100_000
    expect(
      indexerProblems(
        [status({ state: "retrying", nodeAnsweredAt: now - 30_000, detail: "eth_blockNumber: fetch failed" })],
        now,
        60_000
      )
    ).toEqual([])
    expect(
      indexerProblems(
        [status({ state: "retrying", nodeAnsweredAt: now - 61_000, detail: "eth_blockNumber: fetch failed" })],
        now,
        60_000
      )
    ).toEqual(["BEP20 node unreachable for 61 s: eth_blockNumber: fetch failed"])
    // another runner indexes the chain and moved its cursor 5 s ago: this one does not talk to the node, nothing is wrong
    expect(indexerProblems([status({ state: "standby", nodeAnsweredAt: now - 5_000 })], now, 60_000)).toEqual([])
    expect(prometheusMetrics([status({ state: "standby", nodeAnsweredAt: 0 })], now)).toContain(
      `facet_indexer_node_unreachable_seconds{chain="BEP20"} 0`
    )
    expect(prometheusMetrics([status({ state: "retrying", nodeAnsweredAt: now - 61_000 })], now)).toContain(
      `facet_indexer_node_unreachable_seconds{chain="BEP20"} 61`
    )
  })

  // a node that answers its head but cannot give the blocks (its ledger pruned, rate-limited) kept the
  // chain's deposits stopped while /health said nothing was wrong (#32 item 2)
  it("an indexer whose every read has failed for longer than the limit degrades the service, even while its node answers its head", () => {
    const now = 100_000
    const reason = "ChainRpcError: slots 10–19 cannot be read from this node: its ledger starts at slot 20"
    expect(
      indexerProblems(
        [
          status({
            state: "retrying",
            cursor: "9",
            nodeAnsweredAt: now - 1_000,
            failing: { since: now - 30_000, reason }
          })
        ],
        now,
        60_000
      )
    ).toEqual([])
    expect(
      indexerProblems(
        [
          status({
            state: "starting",
            cursor: "9",
            nodeAnsweredAt: now - 1_000,
            failing: { since: now - 61_000, reason }
          })
        ],
        now,
        60_000
      )
    ).toEqual([`BEP20 indexer has not read past block 9 for 61 s: ${reason}`])
  })

  it.effect(
    "a chain another runner indexes is standby, with the stored cursor; ready once some runner stored it; degraded only when nobody moves it; never shown over an indexer running here",
    () =>
      Effect.gen(function* () {
        const current = Effect.map(Effect.flatMap(IndexerStatus, Ref.get), (m) => m.get("TRC20"))
        yield* reportStatus(standbyStatus("TRC20"))
        expect(indexersNotStarted([standbyStatus("TRC20")])).toEqual([
          "TRC20 indexer has not stored where it starts yet"
        ])
        yield* refreshStandby("TRC20", { cursor: "42", idleMs: 1_000, holder: "host:7:ab" })
        const standby = yield* current
        expect(standby).toMatchObject({
          state: "standby",
          cursor: "42",
          head: "42",
          cursorStored: true,
          detail: "indexed by host:7:ab"
        })
        expect(indexersNotStarted(standby === undefined ? [] : [standby])).toEqual([])
        expect(indexerProblems(standby === undefined ? [] : [standby], Date.now(), 60_000)).toEqual([])
        // nobody has moved the chain's cursor for longer than the limit: every runner says so
        yield* refreshStandby("TRC20", { cursor: "42", idleMs: 75_000, holder: "host:7:ab" })
        expect(
          indexerProblems([...(yield* Effect.map(current, (s) => (s === undefined ? [] : [s])))], Date.now(), 60_000)
        ).toEqual(["TRC20 indexer on another runner has not moved for 75 s (indexed by host:7:ab)"])

        // the cluster starts it here: what the database says no longer replaces what it reports
        yield* reportStatus(status({ chain: "TRC20", state: "following", cursor: "50", head: "50" }))
        yield* refreshStandby("TRC20", { cursor: "42", idleMs: 0, holder: "host:7:ab" })
        expect(yield* current).toMatchObject({ state: "following", cursor: "50" })
        // and moves it away: standby again, its last figures kept until the next read
        yield* reportStandby("TRC20", "")
        expect(yield* current).toMatchObject({ state: "standby", cursor: "50", lagBlocks: 0 })
      }).pipe(Effect.provide(IndexerStatusLive))
  )

  it("a halted indexer is always a problem", () => {
    expect(
      indexerProblems(
        [
          status({
            state: "halted",
            detail: "BEP20: the node's chain is not the one this database indexed",
            nodeAnsweredAt: 99_000
          })
        ],
        100_000,
        60_000
      )
    ).toEqual(["BEP20 indexer halted: BEP20: the node's chain is not the one this database indexed"])
  })
})
