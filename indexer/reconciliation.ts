import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { AppConfig } from "../src/config.js"
import type { Chain } from "../src/domain/chain.js"
import { fromBaseUnits, MoneyDecimal } from "../src/money.js"
import type { Difference, LatestRun } from "../src/domain/reconciliation.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { IndexerStore } from "../src/stores/indexer-store.js"
import { ReconciliationStore } from "../src/stores/reconciliation-store.js"
import { UntracedBlockStore } from "../src/stores/untraced-block-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"

export interface ChainReconciliation {
  readonly chain: Chain
  readonly height: bigint | undefined
  readonly checked: number
  readonly skipped: number
  readonly differences: ReadonlyArray<Difference>
}

/**
 * The backstop behind the indexers: for every receive and main address of a chain and every asset of that
 * chain, the balance in the chain's final state against what the ledger explains there (deposits
 * recorded up to that height, and what custody itself moved in and out: its transfers and the fees the
 * address paid). Tokens and native balances must match exactly. A difference is logged, stored as the
 * chain's latest run (for /health and /metrics) and returned. A balance read above the indexer's cursor is
 * skipped: the indexer has not read that far yet.
 */
export class Reconciliation extends Effect.Service<Reconciliation>()("facet/Reconciliation", {
  effect: Effect.gen(function* () {
    const indexerStore = yield* IndexerStore
    const runs = yield* ReconciliationStore
    const assetStore = yield* AssetStore
    const walletStore = yield* WalletStore
    const clients = yield* ChainClients
    const untraced = yield* UntracedBlockStore
    // addresses per page of a run: their balances read from the node, then one statement for the ledger's side
    const pageSize = yield* Config.integer("FACET_RECONCILE_PAGE").pipe(Config.withDefault(500))

    const reconcileChain = Effect.fn("Reconciliation.reconcileChain")(function* (chain: Chain) {
      const started = new Date()
      const client = clients.get(chain)
      if (Option.isNone(client))
        return { chain, height: undefined, checked: 0, skipped: 0, differences: [] } satisfies ChainReconciliation
      const assets = yield* assetStore.depositAssets(chain)
      const storedCursor = yield* indexerStore.cursor(chain)
      if (Option.isNone(storedCursor))
        return { chain, height: undefined, checked: 0, skipped: 0, differences: [] } satisfies ChainReconciliation
      const cursor = storedCursor.value
      // page by page (keyset on seq): balances read from the node, then what the ledger explains for the
      // whole page in one statement — one query per address made a run quadratic (the soak found it:
      // minutes of CPU and API latency in seconds at 90,000 addresses)
      const results: Array<{ readonly skipped: boolean; readonly height: bigint; readonly difference?: Difference }> =
        []
      let afterSeq = "0"
      for (;;) {
        const wallets = yield* walletStore.watchedAddressesAfter(chain, afterSeq, pageSize)
        const lastWallet = wallets[wallets.length - 1]
        if (lastWallet === undefined) break
        afterSeq = lastWallet.seq
        const pairs = wallets.flatMap((w) => assets.map((a) => ({ address: w.address, ...a })))
        const balances = yield* Effect.forEach(
          pairs,
          (pair) =>
            Effect.map(client.value.finalBalance(pair.address, pair.currency), (final) => ({ ...pair, ...final })),
          { concurrency: 8 }
        )
        // the indexer's cursor as it is now, after the balances were read: a run takes a while and the
        // cursor moves on with the chain (read once at the start, most of a long run was skipped)
        const now = yield* indexerStore.cursor(chain)
        const indexed = Option.getOrElse(
          Option.map(now, (c) => c.number),
          () => cursor.number
        )
        const readable = balances.filter((b) => b.height <= indexed)
        for (const b of balances) if (b.height > indexed) results.push({ skipped: true, height: b.height })
        if (readable.length === 0) continue
        const explained = yield* runs.explain(chain, readable)
        for (const [i, pair] of readable.entries()) {
          const onChain = new MoneyDecimal(fromBaseUnits(pair.balance, pair.decimals))
          const ledger = new MoneyDecimal(explained[i] ?? "0")
          if (onChain.eq(ledger)) {
            results.push({ skipped: false, height: pair.height })
            continue
          }
          results.push({
            skipped: false,
            height: pair.height,
            difference: {
              address: pair.address,
              currency: pair.currency,
              on_chain: onChain.toFixed(),
              explained: ledger.toFixed(),
              difference: onChain.minus(ledger).toFixed(),
              from_block: ((cursor.started_at_block ?? 0n) + 1n).toString(),
              to_block: pair.height.toString()
            }
          })
        }
      }
      const found = results.flatMap((r) => ("difference" in r && r.difference !== undefined ? [r.difference] : []))
      // what the untraced blocks of the range may hide is named with the difference
      const differences = yield* Effect.forEach(found, (d) =>
        Effect.map(untraced.countIn(chain, BigInt(d.from_block), BigInt(d.to_block)), (n) =>
          n === 0 ? d : { ...d, untraced_blocks: n }
        )
      )
      const skipped = results.filter((r) => r.skipped).length
      const height = results.reduce<bigint | undefined>(
        (h, r) => (h === undefined || r.height > h ? r.height : h),
        undefined
      )
      for (const d of differences) {
        yield* Effect.logError(
          `${chain} RECONCILIATION DIFFERENCE at ${d.address}: ${d.currency} on chain ${d.on_chain}, ledger explains ${d.explained} ` +
            `(${d.difference}); look at blocks ${d.from_block}–${d.to_block} (npm run indexer -- --chain ${chain} --rescan-from ${d.from_block} --to ${d.to_block})` +
            (d.untraced_blocks === undefined
              ? ""
              : `; ${d.untraced_blocks} block(s) there could not be traced and may hide it (npm run indexer -- --chain ${chain} --rescan-untraced, against a node that can trace them)`)
        )
      }
      yield* runs.record({ chain, started, height, checked: results.length - skipped, skipped, differences })
      yield* Effect.logInfo(
        `${chain} reconciliation: ${results.length - skipped} balances checked, ${skipped} above the indexer's cursor, ${differences.length} differences, in ${((Date.now() - started.getTime()) / 1000).toFixed(1)} s`
      )
      return { chain, height, checked: results.length - skipped, skipped, differences } satisfies ChainReconciliation
    })

    /** The latest run of each chain that has one: what /health and /metrics report. */
    const latest = runs.latest

    return { reconcileChain, latest } as const
  }),
  dependencies: [
    AssetStore.Default,
    WalletStore.Default,
    IndexerStore.Default,
    ReconciliationStore.Default,
    UntracedBlockStore.Default
  ]
}) {}

/** Why the latest reconciliation makes the service degraded: a chain with differences. */
export const reconciliationProblems = (runs: ReadonlyArray<LatestRun>): ReadonlyArray<string> =>
  runs.flatMap((run) => {
    const [first] = run.differences
    return first === undefined
      ? []
      : [
          `${run.chain} reconciliation: ${run.differences.length} balance(s) the ledger does not explain (first: ${first.address} ${first.currency} on chain ${first.on_chain}, ledger ${first.explained}; blocks ${first.from_block}–${first.to_block}${first.untraced_blocks === undefined ? "" : `, of which ${first.untraced_blocks} could not be traced`})`
        ]
  })

/** Prometheus gauges of the latest reconciliation per chain. */
export const reconciliationMetrics = (runs: ReadonlyArray<LatestRun>): string =>
  [
    "# HELP facet_reconciliation_differences Receive balances the ledger does not explain, at the latest reconciliation.",
    "# TYPE facet_reconciliation_differences gauge",
    ...runs.map((r) => `facet_reconciliation_differences{chain="${r.chain}"} ${r.differences.length}`),
    "# HELP facet_reconciliation_last_run_timestamp_seconds When the latest reconciliation of the chain finished.",
    "# TYPE facet_reconciliation_last_run_timestamp_seconds gauge",
    ...runs.map(
      (r) =>
        `facet_reconciliation_last_run_timestamp_seconds{chain="${r.chain}"} ${Math.floor(r.finished_at.getTime() / 1000)}`
    )
  ].join("\n") + "\n"

/**
 * The periodic job: every FACET_RECONCILE_INTERVAL_MS (default 10 minutes; 0 turns it off), the chains this
 * process indexes are reconciled. A failure (a node down) is logged and tried again next time.
 */
export const ReconciliationLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const reconciliation = yield* Reconciliation
    const intervalMs = yield* Config.integer("FACET_RECONCILE_INTERVAL_MS").pipe(Config.withDefault(600_000))
    if (intervalMs <= 0 || config.indexer.chains.length === 0) return
    const run = Effect.forEach(
      config.indexer.chains,
      (chain) =>
        reconciliation
          .reconcileChain(chain)
          .pipe(
            Effect.catchAllCause((cause) =>
              Effect.logWarning(`${chain} reconciliation failed; trying again next time`, cause)
            )
          ),
      { discard: true }
    )
    yield* Effect.forkScoped(Effect.schedule(run, Schedule.spaced(Duration.millis(intervalMs))))
  })
).pipe(Layer.provide(Reconciliation.Default))
