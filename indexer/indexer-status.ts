import { Context, Effect, Layer, Ref } from "effect"

export interface ChainIndexerStatus {
  readonly chain: string
  readonly state: "starting" | "waiting_for_lease" | "catching_up" | "following" | "retrying" | "halted"
  readonly head: string
  readonly cursor: string
  readonly lagBlocks: number
  readonly lagSeconds: number
  readonly watchedAddresses: number
  readonly blocksPerSecond: number
  readonly detail: string
  /** When the chain's node last answered (epoch ms): how long it has been unreachable. */
  readonly nodeAnsweredAt: number
  /** Whether the indexer has a stored cursor: until then an address paid now might be skipped. */
  readonly cursorStored: boolean
}

/** What each chain's indexer last reported, for /health and /metrics. */
export class IndexerStatus extends Context.Tag("facet/IndexerStatus")<IndexerStatus, Ref.Ref<ReadonlyMap<string, ChainIndexerStatus>>>() {
  static readonly layer = Layer.effect(IndexerStatus, Ref.make<ReadonlyMap<string, ChainIndexerStatus>>(new Map()))
}

/** A chain's indexer before it has its lease and a stored cursor. */
export const startingStatus = (chain: string): ChainIndexerStatus => ({
  chain, state: "starting", head: "0", cursor: "0", lagBlocks: 0, lagSeconds: 0, watchedAddresses: 0, blocksPerSecond: 0, detail: "",
  nodeAnsweredAt: Date.now(), cursorStored: false
})

export const reportStatus = (status: ChainIndexerStatus) =>
  Effect.flatMap(IndexerStatus, (ref) => Ref.update(ref, (m) => new Map(m).set(status.chain, status)))

const STATES: ReadonlyArray<ChainIndexerStatus["state"]> = ["starting", "waiting_for_lease", "catching_up", "following", "retrying", "halted"]

/** Seconds since the chain's node last answered, 0 while another process holds the chain's lease. */
const unreachableSeconds = (s: ChainIndexerStatus, now: number) =>
  s.state === "waiting_for_lease" ? 0 : Math.max(0, Math.floor((now - s.nodeAnsweredAt) / 1000))

/** An indexer of this process that has no stored cursor yet (not one waiting while another process indexes). */
export const indexersNotStarted = (statuses: ReadonlyArray<ChainIndexerStatus>): ReadonlyArray<string> =>
  statuses.flatMap((s) => (s.cursorStored || s.state === "waiting_for_lease" ? [] : [`${s.chain} indexer has not stored where it starts yet`]))

/**
 * Why the indexers make the service degraded: a halted indexer (it waits for an operator), or a node
 * that has not answered for longer than `unreachableAfterMs`.
 */
export const indexerProblems = (statuses: ReadonlyArray<ChainIndexerStatus>, now: number, unreachableAfterMs: number): ReadonlyArray<string> =>
  statuses.flatMap((s) =>
    s.state === "halted"
      ? [`${s.chain} indexer halted: ${s.detail}`]
      : s.state !== "waiting_for_lease" && now - s.nodeAnsweredAt > unreachableAfterMs
      ? [`${s.chain} node unreachable for ${unreachableSeconds(s, now)} s${s.detail === "" ? "" : `: ${s.detail}`}`]
      : []
  )

/** Prometheus text exposition of the indexers' state and lag. */
export const prometheusMetrics = (statuses: ReadonlyArray<ChainIndexerStatus>, now: number): string => {
  const lines = [
    "# HELP facet_indexer_lag_blocks Chain head minus the indexer's cursor, in blocks.",
    "# TYPE facet_indexer_lag_blocks gauge",
    ...statuses.map((s) => `facet_indexer_lag_blocks{chain="${s.chain}"} ${s.lagBlocks}`),
    "# HELP facet_indexer_lag_seconds Age of the last indexed block, in seconds.",
    "# TYPE facet_indexer_lag_seconds gauge",
    ...statuses.map((s) => `facet_indexer_lag_seconds{chain="${s.chain}"} ${s.lagSeconds}`),
    "# HELP facet_indexer_cursor_block Last block written by the indexer.",
    "# TYPE facet_indexer_cursor_block gauge",
    ...statuses.map((s) => `facet_indexer_cursor_block{chain="${s.chain}"} ${s.cursor}`),
    "# HELP facet_indexer_watched_addresses Addresses in the indexer's watch list.",
    "# TYPE facet_indexer_watched_addresses gauge",
    ...statuses.map((s) => `facet_indexer_watched_addresses{chain="${s.chain}"} ${s.watchedAddresses}`),
    "# HELP facet_indexer_up 1 when the chain's indexer is running (not halted).",
    "# TYPE facet_indexer_up gauge",
    ...statuses.map((s) => `facet_indexer_up{chain="${s.chain}",state="${s.state}"} ${s.state === "halted" ? 0 : 1}`),
    "# HELP facet_indexer_state 1 for the state the chain's indexer is in (halted: an operator must look at it).",
    "# TYPE facet_indexer_state gauge",
    ...statuses.flatMap((s) => STATES.map((state) => `facet_indexer_state{chain="${s.chain}",state="${state}"} ${s.state === state ? 1 : 0}`)),
    "# HELP facet_indexer_node_unreachable_seconds Seconds since the chain's node last answered the indexer.",
    "# TYPE facet_indexer_node_unreachable_seconds gauge",
    ...statuses.map((s) => `facet_indexer_node_unreachable_seconds{chain="${s.chain}"} ${unreachableSeconds(s, now)}`)
  ]
  return `${lines.join("\n")}\n`
}
