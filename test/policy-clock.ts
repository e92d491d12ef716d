import { Context, Duration, Effect, Layer, Ref } from "effect"
import { PolicyClock } from "../src/policy-clock.js"

/** Moves the policy clock of the service under test forward. */
export class ClockControl extends Context.Tag("test/ClockControl")<
  ClockControl,
  {
    readonly advance: (by: Duration.DurationInput) => Effect.Effect<void>
  }
>() {}

/** The system clock plus an offset the test controls (one instance per layer build). */
export const AdjustableClockLive = Layer.effectContext(
  Effect.map(Ref.make(0), (offset) =>
    Context.make(PolicyClock, { now: Effect.map(Ref.get(offset), (ms) => new Date(Date.now() + ms)) }).pipe(
      Context.add(ClockControl, { advance: (by) => Ref.update(offset, (ms) => ms + Duration.toMillis(by)) })
    )
  )
)
