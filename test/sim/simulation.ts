import { Statement } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, Option } from "effect"
import { CustodyBooks } from "../../custody/custody-books.js"
import { CustodyConfig } from "../../custody/custody-config.js"
import { SendPacer } from "../../custody/send-pacer.js"
import { SendRules } from "../../custody/send-rules.js"
import { TransferSender } from "../../custody/transfer-sender.js"
import { ChainClients } from "../../src/chains/chain-clients.js"
import { Ledger } from "../../src/ledger/ledger.js"
import { CustodyStore } from "../../src/stores/custody-store.js"
import { TransactionStore } from "../../src/stores/transaction-store.js"
import { WithdrawalStore } from "../../src/stores/withdrawal-store.js"
import { seededRandom } from "../faults/seeded-random.js"
import { makeAdversary } from "./adversary.js"
import { makeDrivers } from "./drivers.js"
import { runSteps, type StepWorld } from "./sim-steps.js"
import { makeScheduler } from "./scheduler.js"
import { makeSimChain, type SimChain } from "./sim-chain.js"
import { makeSimClient } from "./sim-client.js"
import { simCustodyConfig } from "./sim-config.js"
import type { SimChainId } from "./sim-tx.js"
import { BASE_PRICE, fundChains, installWorkload, planWorkload, removeWorkload } from "./workload.js"

/** What one run of seeds shares: the rules the lifecycle runs under, its namespace in the database, tracing. */
export interface SimSettings {
  readonly rules: SendRules
  /** Keeps two runs in one database apart (ids, keys and addresses carry it). */
  readonly run: number
  /** Keep every step's line (a replay); otherwise the last ones, for a violation's report. */
  readonly trace: boolean
  /** Leave the seed's rows in the database afterwards (to look at a replay); otherwise they are removed. */
  readonly keepRows: boolean
}

export interface Violation {
  readonly seed: number
  readonly step: number
  readonly what: string
}

export interface SeedReport {
  readonly seed: number
  readonly steps: number
  readonly healedAt: number
  readonly operations: number
  readonly violations: ReadonlyArray<Violation>
  readonly trace: ReadonlyArray<string>
  /** Every adversary move and crash point exercised, by name. */
  readonly moves: ReadonlyMap<string, number>
  /** Final status per operation kind ("withdrawal COMPLETED"). */
  readonly outcomes: ReadonlyMap<string, number>
}

/** The real stores and books on the run's PostgreSQL: shared by every seed (they hold no state). */
export const SimServicesLive = Layer.mergeAll(
  CustodyStore.Default,
  TransactionStore.Default,
  WithdrawalStore.Default,
  CustodyBooks.Default,
  Ledger.Default
)

/** A statement that changes rows (a `SELECT … FOR UPDATE` too: one read more, never one less). */
const WRITES = /\b(insert|update|delete)\b/i

/** How hostile the seed's network is and how often its custody process crashes, drawn from the seed. */
const seedShape = (seed: number) => {
  const random = seededRandom(seed).fork("shape")
  return {
    hostility: {
      lag: random.pick([0.1, 0.3, 0.6]),
      lookupMiss: random.pick([0.1, 0.3, 0.6]),
      rpcError: random.pick([0, 0.05, 0.15]),
      pruned: random.pick([0, 0.1, 0.3]),
      dishonestSend: random.pick([0.2, 0.5, 0.9])
    },
    healAt: 40 + random.int(400),
    crashWeight: random.pick([0, 0.05, 0.2, 0.6]),
    bumpAlways: random.next() < 0.5
  }
}

/**
 * One seed: its workload stored as the real services store it, its chains and adversary, the real
 * TransferSender driven by the deterministic scheduler until every operation is final once the network
 * healed (or a step bound), every invariant checked after every step.
 */
export const runSeed = (seed: number, settings: SimSettings) =>
  Effect.gen(function* () {
    const shape = seedShape(seed)
    const root = seededRandom(seed)
    const workload = planWorkload(seed, settings.run, root.fork("workload"))
    const chains = new Map<SimChainId, SimChain>(
      workload.chains.map((id) => [id, makeSimChain(id, { quote: BASE_PRICE[id], floor: BASE_PRICE[id] })])
    )
    fundChains(workload, chains)
    const adversary = makeAdversary(root.fork("adversary"), shape.hostility)
    const actorIds = [...new Set(workload.operations.map((o) => o.row.wallet_id))]
    const scheduler = yield* makeScheduler(actorIds)
    yield* installWorkload(workload)
    const addressOf = workload.addressOf
    const clients = new Map(
      [...chains.values()].map((chain) => [
        chain.id,
        makeSimClient(chain, adversary, scheduler.park, (key) => addressOf(key) ?? `unknown-key-${key.index}`)
      ])
    )
    const seedLayer = TransferSender.DefaultWithoutDependencies.pipe(
      Layer.provideMerge(
        Layer.mergeAll(
          Layer.succeed(ChainClients, {
            get: (chain) => Option.fromNullable(clients.get(chain === "POLYGON" ? "BEP20" : chain)),
            all: [...clients.values()],
            nodes: Effect.succeed([])
          }),
          Layer.succeed(CustodyConfig, simCustodyConfig(shape.bumpAlways)),
          Layer.succeed(SendPacer, { pause: (operationId) => scheduler.park(`pause ${operationId}`) }),
          Layer.succeed(SendRules, settings.rules)
        )
      )
    )
    // every statement the seed's fibers run is looked at as it is compiled: the step watch reads the
    // statuses again only after a turn that wrote
    let wrote = false
    const noticeWrites: Statement.Statement.Transformer = (statement) =>
      Effect.sync(() => {
        if (!wrote && WRITES.test(statement.compile()[0])) wrote = true
        return statement
      })
    const world: StepWorld = {
      seed,
      workload,
      chains,
      adversary,
      scheduler,
      healAt: shape.healAt,
      crashWeight: shape.crashWeight,
      random: root.fork("scheduler"),
      keepTrace: settings.trace,
      wrote: () => {
        const was = wrote
        wrote = false
        return was
      }
    }
    return yield* Effect.gen(function* () {
      const handOver = (walletId: string, operationId: string) =>
        Effect.sync(() => {
          const mailbox = scheduler.actor(walletId).mailbox
          if (!mailbox.includes(operationId)) mailbox.push(operationId)
        })
      const drivers = yield* makeDrivers(new Map(workload.operations.map((o) => [o.row.id, o])), handOver)
      return yield* runSteps(world, drivers.drive)
    }).pipe(
      Effect.provide(seedLayer),
      Statement.withTransformer(noticeWrites),
      Effect.ensuring(scheduler.shutdown),
      Effect.tap(() => (settings.keepRows ? Effect.void : Effect.orDie(removeWorkload(workload)))),
      Effect.provideService(SendRules, settings.rules),
      Logger.withMinimumLogLevel(LogLevel.None)
    )
  })
