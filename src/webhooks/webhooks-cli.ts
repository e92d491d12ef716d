import { NodeRuntime } from "@effect/platform-node"
import { DateTime, Effect, Either, Layer } from "effect"
import { AppConfig, loadAppConfig } from "../config.js"
import { DatabaseLive } from "../database/database.js"
import { type ProblemFilter, WebhookAdmin } from "./webhook-admin.js"

const USAGE = `usage:
  npm run webhooks -- list [--dead | --failing] [--merchant MERCHANT_ID]
  npm run webhooks -- replay --event EVENT_ID
  npm run webhooks -- replay --merchant MERCHANT_ID      (every failing and dead event of the merchant)`

const option = (args: ReadonlyArray<string>, name: string): string | undefined => {
  const i = args.indexOf(name)
  return i === -1 ? undefined : args[i + 1]
}

/** `npm run webhooks`: list failing and dead deliveries, replay one or all for a merchant. One JSON line each. */
const main = Effect.gen(function* () {
  const args = process.argv.slice(2)
  const config = yield* loadAppConfig
  if (Either.isLeft(config)) return yield* Effect.logError(`invalid configuration:\n${config.left}`)
  const run = Effect.gen(function* () {
    const admin = yield* WebhookAdmin
    const merchantId = option(args, "--merchant")
    switch (args[0]) {
      case "list": {
        const filter: ProblemFilter = args.includes("--dead")
          ? "dead"
          : args.includes("--failing")
            ? "failing"
            : "problems"
        for (const row of yield* admin.problems(filter, merchantId)) {
          console.log(
            JSON.stringify({
              ...row,
              next_attempt_at: DateTime.formatIso(DateTime.unsafeFromDate(row.next_attempt_at)),
              created_at: DateTime.formatIso(DateTime.unsafeFromDate(row.created_at))
            })
          )
        }
        return
      }
      case "replay": {
        const eventId = option(args, "--event")
        if (eventId === undefined && merchantId === undefined) return console.error(USAGE)
        const replayed = yield* admin.replay(eventId !== undefined ? { eventId } : { merchantId: merchantId ?? "" })
        console.log(JSON.stringify({ replayed }))
        return
      }
      default:
        console.error(USAGE)
    }
  })
  yield* run.pipe(
    Effect.provide(
      WebhookAdmin.Default.pipe(Layer.provide(DatabaseLive), Layer.provide(Layer.succeed(AppConfig, config.right)))
    )
  )
})

NodeRuntime.runMain(main)
