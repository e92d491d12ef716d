import { Config, Duration, Effect } from "effect"

/**
 * How long a stop (SIGINT, SIGTERM) may take: FACET_STOP_SECONDS (30, a container's usual grace period).
 * Past it the process says so and exits with 1; its children (PostgreSQL, anvil) follow by their lifelines.
 * Finalizers can wait for ever on a database that is gone: @effect/cluster retries its shard release until
 * it succeeds. A service that ignores Ctrl-C is worse than one that stops without releasing: the shard
 * locks and the indexer leases expire, and the next start takes them over.
 */
export const stopDeadline = Effect.gen(function* () {
  const seconds = yield* Config.number("FACET_STOP_SECONDS").pipe(
    Config.withDefault(30),
    // setTimeout holds at most ~24.8 days; an hour is more than any stop should take
    Config.validate({
      message: "FACET_STOP_SECONDS must be a number of seconds between 0 and 3600",
      validation: (n) => Number.isFinite(n) && n > 0 && n <= 3600
    })
  )
  const deadline = Duration.seconds(seconds)
  const arm = (signal: NodeJS.Signals) => () => {
    // unref'd: a stop that finishes in time exits as it would have
    setTimeout(() => {
      process.stderr.write(
        `the stop (${signal}) did not finish within ${seconds} s (FACET_STOP_SECONDS): exiting without the rest of it\n`
      )
      process.exit(1)
    }, Duration.toMillis(deadline)).unref()
  }
  yield* Effect.sync(() => {
    process.once("SIGINT", arm("SIGINT"))
    process.once("SIGTERM", arm("SIGTERM"))
  })
})
