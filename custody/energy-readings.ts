import { Effect, Layer, Option, Ref, Schedule } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { EnergySource, type EnergyStatus } from "./energy.js"

export interface EnergyReading {
  readonly status: EnergyStatus
  readonly readAt: Date
}

/**
 * The platform's TRON stake as last read (EnergySource.status), so /health and /metrics answer from memory
 * instead of asking the node on every scrape. A read that fails (the node does not answer) keeps the last
 * reading, its time telling how old it is.
 */
export class EnergyReadings extends Effect.Service<EnergyReadings>()("facet/EnergyReadings", {
  effect: Effect.gen(function* () {
    const energy = yield* EnergySource
    const clients = yield* ChainClients
    const last = yield* Ref.make(Option.none<EnergyReading>())
    // without a TRON client that reads Stake 2.0 there is no stake to read (status would die)
    const readable = Option.isSome(Option.flatMap(clients.get("TRC20"), (c) => Option.fromNullable(c.energy)))

    /** Reads the stake now; on a failure the last reading stands. */
    const refresh = Effect.fn("EnergyReadings.refresh")(function* () {
      if (!readable) return
      const status = yield* energy.status().pipe(Effect.timeout("10 seconds"))
      yield* Ref.set(last, Option.some({ status, readAt: new Date() }))
    })

    /** The last reading, without touching a node (none before the first one succeeds). */
    const cached = Ref.get(last)

    return { refresh, cached } as const
  }),
  dependencies: [EnergySource.Default]
}) {}

/** Reads the stake every 15 s in the background, as GasWalletsRefreshLive does the gas wallets. */
export const EnergyReadingsRefreshLive = Layer.scopedDiscard(
  Effect.flatMap(EnergyReadings, (readings) =>
    Effect.forkScoped(
      Effect.repeat(readings.refresh().pipe(Effect.catchAllCause(() => Effect.void)), Schedule.spaced("15 seconds"))
    )
  )
).pipe(Layer.provide(EnergyReadings.Default))
