import { Context, Effect, Layer } from "effect"

/**
 * The time the withdrawal policy reads: cooling-off periods, pending policy changes, velocity windows and
 * approval rights. Its own service so tests move it forward (no sleeping through a 24 h cooling-off);
 * the service itself always runs on the system clock.
 */
export class PolicyClock extends Context.Tag("facet/PolicyClock")<
  PolicyClock,
  {
    readonly now: Effect.Effect<Date>
  }
>() {}

/** The service's policy clock: the system's. */
export const SystemClockLive = Layer.succeed(PolicyClock, { now: Effect.sync(() => new Date()) })
