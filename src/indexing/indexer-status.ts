import { Context, Effect, Layer, Ref } from "effect"

export interface ChainIndexerStatus {
  readonly chain: string
  /** standby: the cluster runs this chain's indexer on another runner (or has not started it yet). */
  readonly state: "standby" | "starting" | "catching_up" | "following" | "retrying" | "halted"
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
  /**
   * Since when (epoch ms) every attempt to read on has failed, and the last failure: a node that answers
   * its head but cannot give the blocks (pruned, rate-limited) stalls the chain while it still "answers".
   */
  readonly failing?: { readonly since: number; readonly reason: string }
}

/** What each chain's indexer last reported, for /health and /metrics. */
export class IndexerStatus extends Context.Tag("facet/IndexerStatus")<
  IndexerStatus,
  Ref.Ref<ReadonlyMap<string, ChainIndexerStatus>>
>() {}

/** One status map per process, shared by the indexers that report and the HTTP handlers that read. */
export const IndexerStatusLive = Layer.effect(
  IndexerStatus,
  Ref.make<ReadonlyMap<string, ChainIndexerStatus>>(new Map())
)

/** A chain's indexer this runner does not run (yet): what the database says until it does. */
export const standbyStatus = (chain: string): ChainIndexerStatus => ({
  chain,
  state: "standby",
  head: "0",
  cursor: "0",
  lagBlocks: 0,
  lagSeconds: 0,
  watchedAddresses: 0,
  blocksPerSecond: 0,
  detail: "",
  nodeAnsweredAt: Date.now(),
  cursorStored: false
})

export const reportStatus = (status: ChainIndexerStatus) =>
  Effect.flatMap(IndexerStatus, (ref) => Ref.update(ref, (m) => new Map(m).set(status.chain, status)))

/** What this runner last reported for `chain`, if anything. */
export const currentStatus = (chain: string) => Effect.map(Effect.flatMap(IndexerStatus, Ref.get), (m) => m.get(chain))

/**
 * The chain's indexer stopped running here (the cluster moved it, or another took the chain over): its
 * last figures stay, marked standby.
 */
export const reportStandby = (chain: string, detail: string) =>
  Effect.flatMap(IndexerStatus, (ref) =>
    Ref.update(ref, (m) =>
      new Map(m).set(chain, {
        ...(m.get(chain) ?? standbyStatus(chain)),
        state: "standby",
        detail,
        lagBlocks: 0,
        lagSeconds: 0,
        blocksPerSecond: 0
      })
    )
  )

/**
 * A standby chain's figures from the database (the stored cursor, how long ago it last moved, who holds
 * the chain); never over the status of an indexer running here, in one update so it cannot race one that
 * starts meanwhile.
 */
export const refreshStandby = (
  chain: string,
  stored: { readonly cursor: string | null; readonly idleMs: number | null; readonly holder: string | null }
) =>
  Effect.flatMap(IndexerStatus, (ref) =>
    Ref.update(ref, (m) => {
      const current = m.get(chain) ?? standbyStatus(chain)
      if (current.state !== "standby") return m
      // a runner that does not index the chain knows its head only as far as the stored cursor
      const cursor = stored.cursor ?? "0"
      return new Map(m).set(chain, {
        // standing by, "answered" is when the chain's indexer, wherever it runs, last moved the cursor
        ...current,
        head: cursor,
        cursor,
        cursorStored: stored.cursor !== null,
        nodeAnsweredAt: Date.now() - (stored.idleMs ?? 0),
        detail: stored.holder === null ? "no runner indexes this chain at the moment" : `indexed by ${stored.holder}`
      })
    })
  )

const STATES: ReadonlyArray<ChainIndexerStatus["state"]> = [
  "standby",
  "starting",
  "catching_up",
  "following",
  "retrying",
  "halted"
]

/** Seconds since the chain's node last answered, 0 while another runner indexes the chain. */
const unreachableSeconds = (s: ChainIndexerStatus, now: number) =>
  s.state === "standby" ? 0 : Math.max(0, Math.floor((now - s.nodeAnsweredAt) / 1000))

/**
 * A chain whose cursor is not stored yet, by the indexer here or by the one on another runner: until
 * then an address paid now might be skipped.
 */
export const indexersNotStarted = (statuses: ReadonlyArray<ChainIndexerStatus>): ReadonlyArray<string> =>
  statuses.flatMap((s) => (s.cursorStored ? [] : [`${s.chain} indexer has not stored where it starts yet`]))

/**
 * Why the indexers make the service degraded: a halted indexer (it waits for an operator), a node that
 * has not answered for longer than `unreachableAfterMs`, an indexer whose every read has failed that long
 * (the node answers, but not with the blocks: pruned, rate-limited), or, for a chain another runner indexes, a cursor
 * nobody has moved for that long (its holder halted or stuck, or no runner can run it): every runner then
 * says so, not only the one holding it.
 */
export const indexerProblems = (
  statuses: ReadonlyArray<ChainIndexerStatus>,
  now: number,
  unreachableAfterMs: number
): ReadonlyArray<string> =>
  statuses.flatMap((s) =>
    s.state === "halted"
      ? [`${s.chain} indexer halted: ${s.detail}`]
      : s.state === "standby"
        ? s.cursorStored && now - s.nodeAnsweredAt > unreachableAfterMs
          ? [
              `${s.chain} indexer on another runner has not moved for ${Math.floor((now - s.nodeAnsweredAt) / 1000)} s (${s.detail})`
            ]
          : []
        : now - s.nodeAnsweredAt > unreachableAfterMs
          ? [`${s.chain} node unreachable for ${unreachableSeconds(s, now)} s${s.detail === "" ? "" : `: ${s.detail}`}`]
          : s.failing !== undefined && now - s.failing.since > unreachableAfterMs
            ? [
                `${s.chain} indexer has not read past block ${s.cursor} for ${Math.floor((now - s.failing.since) / 1000)} s: ${s.failing.reason}`
              ]
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
    ...statuses.flatMap((s) =>
      STATES.map((state) => `facet_indexer_state{chain="${s.chain}",state="${state}"} ${s.state === state ? 1 : 0}`)
    ),
    "# HELP facet_indexer_node_unreachable_seconds Seconds since the chain's node last answered the indexer.",
    "# TYPE facet_indexer_node_unreachable_seconds gauge",
    ...statuses.map((s) => `facet_indexer_node_unreachable_seconds{chain="${s.chain}"} ${unreachableSeconds(s, now)}`)
  ]
  return `${lines.join("\n")}\n`
}
