import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Ref } from "effect"
import {
  IndexerStatus,
  indexerProblems,
  indexersNotStarted,
  prometheusMetrics
} from "../../src/indexing/indexer-status.js"
import { Reconciliation, reconciliationMetrics, reconciliationProblems } from "../../indexer/reconciliation.js"
import { untracedMetrics, untracedReasons } from "../../indexer/untraced-blocks.js"
import { UntracedBlockStore } from "../../src/stores/untraced-block-store.js"
import { AppConfig } from "../../src/config.js"
import { Readiness } from "../../src/readiness.js"
import { CustodyHealth } from "../../custody/custody-health.js"
import { ChainClients } from "../../src/chains/chain-clients.js"
import { ChainEndpoints } from "../../src/chains/chain-endpoints.js"
import { processMetrics } from "../../src/processes/process-metrics.js"
import { exportTurnsMetrics } from "../../src/ledger/export-turns.js"
import { LedgerExports } from "../../src/ledger/ledger-export.js"
import { FacetApi } from "../api.js"

export const SystemHandlers = HttpApiBuilder.group(FacetApi, "system", (handlers) =>
  Effect.gen(function* () {
    const readiness = yield* Readiness
    const statuses = yield* IndexerStatus
    const reconciliation = yield* Reconciliation
    const custody = yield* CustodyHealth
    const exports = yield* LedgerExports
    // a deliberate setting, not a fault: said in the checks, without degrading the service
    const tracing = (yield* ChainEndpoints).bep20.traces
    const traceCheck: Record<string, string> =
      tracing === "off"
        ? {
            bep20_internal_transfers:
              "off: BNB sent to deposit addresses by contracts is not credited (FACET_BEP20_TRACES)"
          }
        : { bep20_internal_transfers: tracing }
    // a database that does not answer is the readiness check's to report
    const custodyReport = custody.report.pipe(Effect.orElseSucceed(() => undefined))
    // a database that does not answer is the readiness check's to report
    const latestRuns = reconciliation.latest.pipe(Effect.orElseSucceed(() => []))
    const untraced = yield* UntracedBlockStore
    const untracedNow = untraced.summary().pipe(Effect.orElseSucceed(() => []))
    const chainNodes = Effect.map((yield* ChainClients).nodes, (chains) =>
      chains.length === 0
        ? {}
        : {
            nodes: chains.map((c) => ({
              chain: c.chain,
              endpoints: c.endpoints.map((e) => ({
                endpoint: e.endpoint,
                state: e.state,
                consecutive_failures: e.consecutiveFailures,
                last_error: e.lastError
              }))
            }))
          }
    )
    // what the clients learned of their nodes (TRON: whether it records internal transactions)
    const chainClients = yield* ChainClients
    const nodeChecks = Effect.map(
      Effect.forEach(chainClients.all, (c) => c.nodeChecks ?? Effect.succeed<Readonly<Record<string, string>>>({})),
      (all) => Object.assign({}, ...all)
    )
    const unreachableAfterMs = Duration.toMillis((yield* AppConfig).indexer.nodeUnreachableAfter)
    const indexerHealth = Effect.map(Ref.get(statuses), (m) =>
      [...m.values()].map((s) => ({
        chain: s.chain,
        state: s.state,
        head: s.head,
        cursor: s.cursor,
        lag_blocks: s.lagBlocks,
        lag_seconds: s.lagSeconds,
        watched_addresses: s.watchedAddresses,
        detail: s.detail
      }))
    )
    return handlers
      .handle("health", () =>
        Effect.gen(function* () {
          const report = yield* readiness.report
          const indexers = yield* indexerHealth
          const current = [...(yield* Ref.get(statuses)).values()]
          const starting = indexersNotStarted(current)
          const ready = report.ready && starting.length === 0
          const checks = { ...report.checks, ...traceCheck, ...(yield* nodeChecks) }
          const custodyNow = yield* custodyReport
          const reasons = ready
            ? [
                ...indexerProblems(current, Date.now(), unreachableAfterMs),
                ...untracedReasons(yield* untracedNow),
                ...reconciliationProblems(yield* latestRuns),
                ...(custodyNow?.reasons ?? [])
              ]
            : starting
          const detail = {
            ...(yield* chainNodes),
            ...(custodyNow === undefined ? {} : { custody: custodyNow.custody })
          }
          if (ready && reasons.length === 0) return { status: "ok" as const, checks, indexers, reasons, ...detail }
          // 503 with what is wrong, so a load balancer stops routing and an operator sees why
          const body = ready
            ? {
                error: `service is degraded: ${reasons.join("; ")}`,
                status: "degraded",
                checks,
                indexers,
                reasons,
                ...detail
              }
            : { error: "service is not ready", status: "unavailable", checks, indexers, reasons, ...detail }
          return yield* HttpServerResponse.json(body, { status: 503 }).pipe(Effect.orDie)
        })
      )
      .handle("metrics", () =>
        Effect.gen(function* () {
          const indexers = prometheusMetrics([...(yield* Ref.get(statuses)).values()], Date.now())
          return (
            indexers +
            untracedMetrics(yield* untracedNow) +
            reconciliationMetrics(yield* latestRuns) +
            (yield* custody.metrics.pipe(Effect.orElseSucceed(() => ""))) +
            exportTurnsMetrics(yield* exports.turns) +
            processMetrics()
          )
        })
      )
  })
)
