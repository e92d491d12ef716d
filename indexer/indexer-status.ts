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
}

/** What each chain's indexer last reported, for /health and /metrics. */
export class IndexerStatus extends Context.Tag("facet/IndexerStatus")<IndexerStatus, Ref.Ref<ReadonlyMap<string, ChainIndexerStatus>>>() {
  static readonly layer = Layer.effect(IndexerStatus, Ref.make<ReadonlyMap<string, ChainIndexerStatus>>(new Map()))
}

export const reportStatus = (status: ChainIndexerStatus) =>
  Effect.flatMap(IndexerStatus, (ref) => Ref.update(ref, (m) => new Map(m).set(status.chain, status)))

/** Prometheus text exposition of the indexers' lag. */
export const prometheusMetrics = (statuses: ReadonlyArray<ChainIndexerStatus>): string => {
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
    ...statuses.map((s) => `facet_indexer_up{chain="${s.chain}",state="${s.state}"} ${s.state === "halted" ? 0 : 1}`)
  ]
  return `${lines.join("\n")}\n`
}
