import type { UntracedSummary } from "../src/stores/untraced-block-store.js"

/** Why /health is degraded: a chain with blocks whose contract calls nobody could trace yet. */
export const untracedReasons = (summary: ReadonlyArray<UntracedSummary>) =>
  summary.map(
    (s) =>
      `${s.chain}: ${s.blocks} block(s) from ${s.first} to ${s.last} could not be traced (${s.reason}): their token and top-level deposits are credited, BNB sent by contracts in them is not until a rescan against a node that can trace them: npm run indexer -- --chain ${s.chain} --rescan-untraced`
  )

/** The same for /metrics. */
export const untracedMetrics = (summary: ReadonlyArray<UntracedSummary>) =>
  [
    "# HELP facet_indexer_untraced_blocks Blocks whose contract calls could not be traced (BNB sent by contracts in them not yet credited).",
    "# TYPE facet_indexer_untraced_blocks gauge",
    ...summary.map((s) => `facet_indexer_untraced_blocks{chain="${s.chain}"} ${s.blocks}`)
  ].join("\n") + "\n"
