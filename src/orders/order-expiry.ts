import { Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../config.js"
import { Orders } from "./orders.js"

const BATCH = 500

/**
 * Expires orders without a request touching them: a fiber that, every FACET_ORDER_EXPIRY_INTERVAL_MS,
 * drains every due order in batches. Failures (a database blip) are logged and retried on the next tick.
 */
export const OrderExpiryLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const orders = yield* Orders
    const { orderExpiryInterval } = yield* AppConfig
    const drain: Effect.Effect<number> = Effect.flatMap(orders.expireDue(BATCH), (n) =>
      n === BATCH ? Effect.map(drain, (rest) => n + rest) : Effect.succeed(n)
    )
    const tick = drain.pipe(
      Effect.tap((n) => (n > 0 ? Effect.logInfo(`expired ${n} orders`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logWarning("order expiry failed; retrying next tick", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(tick, Schedule.spaced(orderExpiryInterval)))
  })
).pipe(Layer.provide(Orders.Default))
