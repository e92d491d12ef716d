import { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { AppConfig } from "../src/config.js"
import type { Chain } from "../src/domain/chain.js"
import { fromBaseUnits, MoneyDecimal } from "../src/money.js"

/** A receive address whose balance on chain is not what the ledger explains. */
export const Difference = Schema.Struct({
  address: Schema.String,
  currency: Schema.String,
  on_chain: Schema.String,
  explained: Schema.String,
  /** On chain minus explained: positive when something reached the address unrecorded. */
  difference: Schema.String,
  /** The blocks to look at (rescan): from where indexing started to the final height read. */
  from_block: Schema.String,
  to_block: Schema.String
})
export type Difference = typeof Difference.Type

export interface ChainReconciliation {
  readonly chain: Chain
  readonly height: bigint | undefined
  readonly checked: number
  readonly skipped: number
  readonly differences: ReadonlyArray<Difference>
}

const LatestRun = Schema.Struct({ chain: Schema.String, finished_at: Schema.DateFromSelf, differences: Schema.parseJson(Schema.Array(Difference)) })

/**
 * The backstop behind the indexers: for every receive address of a chain and every asset of that
 * chain, the balance in the chain's final state against what the ledger explains there (deposits
 * recorded up to that height, and what custody itself moved in and out: its transfers and the fees the
 * address paid). Tokens and native balances must match exactly. A difference is logged, stored as the
 * chain's latest run (for /health and /metrics) and returned. A balance read above the indexer's cursor is
 * skipped: the indexer has not read that far yet.
 */
export class Reconciliation extends Effect.Service<Reconciliation>()("facet/Reconciliation", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clients = yield* ChainClients

    const reconcileChain = Effect.fn("Reconciliation.reconcileChain")(function*(chain: Chain) {
      const started = new Date()
      const client = clients.get(chain)
      if (Option.isNone(client)) return { chain, height: undefined, checked: 0, skipped: 0, differences: [] } satisfies ChainReconciliation
      const assets = yield* sql<{ currency: string; decimals: number }>`
        SELECT currency, decimals FROM wallet_asset_policies
        WHERE chain = ${chain} AND can_deposit AND status IN ('live', 'deposit_live') ORDER BY currency`
      const [cursor] = yield* sql<{ block: string; started: string | null }>`
        SELECT block_number::text AS block, started_at_block::text AS started FROM indexer_cursors WHERE chain = ${chain}`
      if (cursor === undefined) return { chain, height: undefined, checked: 0, skipped: 0, differences: [] } satisfies ChainReconciliation
      const indexed = BigInt(cursor.block)
      const wallets = yield* sql<{ address: string }>`SELECT address FROM wallets WHERE network = ${chain} AND kind = 'receive' ORDER BY seq`
      const pairs = wallets.flatMap((w) => assets.map((a) => ({ address: w.address, ...a })))
      const results = yield* Effect.forEach(pairs, (pair) =>
        Effect.gen(function*() {
          const final = yield* client.value.finalBalance(pair.address, pair.currency)
          if (final.height > indexed) return { skipped: true as const, height: final.height }
          // EVM addresses in any case; the others exactly
          // deposits recorded up to that height, plus what custody itself moved in and out there (its
          // transfers in blocks up to that height, and the fees the address paid in its native asset)
          const [row] = yield* sql<{ explained: string }>`
            WITH same AS (SELECT CASE WHEN ${chain} = 'BEP20' THEN lower(x) ELSE x END AS v FROM (VALUES (${pair.address}::text)) t (x)),
            custody AS (
              SELECT ct.* FROM custody_transactions ct
              WHERE ct.chain = ${chain} AND ct.block_number <= ${final.height.toString()}::bigint
                AND ct.status IN ('included', 'final', 'reverted'))
            SELECT trim_scale(
              (SELECT coalesce(sum(amount), 0) FROM transactions
                WHERE chain = ${chain} AND currency = ${pair.currency} AND type = 'deposit' AND status IN ('pending', 'confirmed')
                  AND block_number <= ${final.height.toString()}::bigint
                  AND (to_address = ${pair.address} OR (${chain} = 'BEP20' AND lower(to_address) = lower(${pair.address}))))
              + (SELECT coalesce(sum(c.amount), 0) FROM custody c, same
                  WHERE c.status <> 'reverted' AND c.currency = ${pair.currency}
                    AND (CASE WHEN ${chain} = 'BEP20' THEN lower(c.to_address) ELSE c.to_address END) = same.v) / (10::numeric ^ ${pair.decimals})
              - (SELECT coalesce(sum(c.amount), 0) FROM custody c, same
                  WHERE c.status <> 'reverted' AND c.currency = ${pair.currency}
                    AND (CASE WHEN ${chain} = 'BEP20' THEN lower(c.from_address) ELSE c.from_address END) = same.v) / (10::numeric ^ ${pair.decimals})
              - (SELECT coalesce(sum(c.fee), 0) FROM custody c, same, wallet_asset_policies p
                  WHERE p.chain = ${chain} AND p.currency = ${pair.currency} AND p.is_native
                    AND (CASE WHEN ${chain} = 'BEP20' THEN lower(c.fee_payer) ELSE c.fee_payer END) = same.v) / (10::numeric ^ ${pair.decimals})
            )::text AS explained`
          const onChain = new MoneyDecimal(fromBaseUnits(final.balance, pair.decimals))
          const explained = new MoneyDecimal(row?.explained ?? "0")
          if (onChain.eq(explained)) return { skipped: false as const, height: final.height }
          const difference: Difference = {
            address: pair.address,
            currency: pair.currency,
            on_chain: onChain.toFixed(),
            explained: explained.toFixed(),
            difference: onChain.minus(explained).toFixed(),
            from_block: ((cursor.started === null ? 0n : BigInt(cursor.started)) + 1n).toString(),
            to_block: final.height.toString()
          }
          return { skipped: false as const, height: final.height, difference }
        }), { concurrency: 8 })
      const differences = results.flatMap((r) => ("difference" in r && r.difference !== undefined ? [r.difference] : []))
      const skipped = results.filter((r) => r.skipped).length
      const height = results.reduce<bigint | undefined>((h, r) => (h === undefined || r.height > h ? r.height : h), undefined)
      for (const d of differences) {
        yield* Effect.logError(
          `${chain} RECONCILIATION DIFFERENCE at ${d.address}: ${d.currency} on chain ${d.on_chain}, ledger explains ${d.explained} ` +
            `(${d.difference}); look at blocks ${d.from_block}–${d.to_block} (npm run indexer -- --chain ${chain} --rescan-from ${d.from_block} --to ${d.to_block})`
        )
      }
      yield* sql`INSERT INTO reconciliation_runs (chain, started_at, height, checked, skipped, differences)
                 VALUES (${chain}, ${started}, ${height?.toString() ?? null}, ${results.length - skipped}, ${skipped}, ${JSON.stringify(differences)}::jsonb)`
      return { chain, height, checked: results.length - skipped, skipped, differences } satisfies ChainReconciliation
    })

    /** The latest run of each chain that has one: what /health and /metrics report. */
    const latest = Effect.gen(function*() {
      const rows = yield* sql`
        SELECT DISTINCT ON (chain) chain, finished_at, differences::text AS differences FROM reconciliation_runs ORDER BY chain, id DESC`
      return yield* Schema.decodeUnknown(Schema.Array(LatestRun))(rows)
    })

    return { reconcileChain, latest } as const
  })
}) {}

type LatestRun = typeof LatestRun.Type

/** Why the latest reconciliation makes the service degraded: a chain with differences. */
export const reconciliationProblems = (runs: ReadonlyArray<LatestRun>): ReadonlyArray<string> =>
  runs.flatMap((run) => {
    const [first] = run.differences
    return first === undefined
      ? []
      : [`${run.chain} reconciliation: ${run.differences.length} balance(s) the ledger does not explain (first: ${first.address} ${first.currency} on chain ${first.on_chain}, ledger ${first.explained}; blocks ${first.from_block}–${first.to_block})`]
  })

/** Prometheus gauges of the latest reconciliation per chain. */
export const reconciliationMetrics = (runs: ReadonlyArray<LatestRun>): string =>
  [
    "# HELP facet_reconciliation_differences Receive balances the ledger does not explain, at the latest reconciliation.",
    "# TYPE facet_reconciliation_differences gauge",
    ...runs.map((r) => `facet_reconciliation_differences{chain="${r.chain}"} ${r.differences.length}`),
    "# HELP facet_reconciliation_last_run_timestamp_seconds When the latest reconciliation of the chain finished.",
    "# TYPE facet_reconciliation_last_run_timestamp_seconds gauge",
    ...runs.map((r) => `facet_reconciliation_last_run_timestamp_seconds{chain="${r.chain}"} ${Math.floor(r.finished_at.getTime() / 1000)}`)
  ].join("\n") + "\n"

/**
 * The periodic job: every FACET_RECONCILE_INTERVAL_MS (default 10 minutes; 0 turns it off), the chains this
 * process indexes are reconciled. A failure (a node down) is logged and tried again next time.
 */
export const ReconciliationLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const reconciliation = yield* Reconciliation
    const intervalMs = yield* Config.integer("FACET_RECONCILE_INTERVAL_MS").pipe(Config.withDefault(600_000))
    if (intervalMs <= 0 || config.indexer.chains.length === 0) return
    const run = Effect.forEach(config.indexer.chains, (chain) =>
      reconciliation.reconcileChain(chain).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning(`${chain} reconciliation failed; trying again next time`, cause))
      ), { discard: true })
    yield* Effect.forkScoped(Effect.schedule(run, Schedule.spaced(Duration.millis(intervalMs))))
  })
)
