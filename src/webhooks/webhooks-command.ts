import { Command, Options } from "@effect/cli"
import { DateTime, Effect, Layer, Option } from "effect"
import { refused, subcommandNeeded, unreachedAsFailure } from "../operator/cli.js"
import { operatorConfig, operatorDatabaseLive } from "../operator/operator-database.js"
import { type ProblemFilter, WebhookStore } from "../stores/webhook-store.js"
import { WebhookAdmin } from "./webhook-admin.js"

/**
 * `npm run webhooks`: list failing and dead deliveries, replay one or all for a merchant. One JSON line
 * each. Exit codes: docs/operating/cli.md.
 */

/**
 * `body` with the webhook admin on the service's database (DATABASE_URL, or the embedded PostgreSQL of the
 * service running in FACET_DATA_DIR, beside it); no configuration or no database is exit 1.
 */
const withAdmin = <A, E>(body: Effect.Effect<A, E, WebhookAdmin>) =>
  Effect.gen(function* () {
    const config = yield* operatorConfig([])
    return yield* body.pipe(
      Effect.provide(
        WebhookAdmin.Default.pipe(Layer.provide(WebhookStore.Default), Layer.provide(operatorDatabaseLive(config)))
      )
    )
  }).pipe(unreachedAsFailure)

const merchant = Options.text("merchant").pipe(Options.withPseudoName("MERCHANT_ID"), Options.optional)

const list = Command.make(
  "list",
  {
    dead: Options.boolean("dead").pipe(Options.withDescription("only dead deliveries (retries exhausted)")),
    failing: Options.boolean("failing").pipe(Options.withDescription("only deliveries still being retried")),
    merchant: merchant.pipe(Options.withDescription("only this merchant's"))
  },
  ({ dead, failing, merchant }) =>
    Effect.gen(function* () {
      if (dead && failing) return yield* refused("--dead and --failing: one or the other (neither for both)")
      const filter: ProblemFilter = dead ? "dead" : failing ? "failing" : "problems"
      const rows = yield* withAdmin(
        Effect.flatMap(WebhookAdmin, (admin) => admin.problems(filter, Option.getOrUndefined(merchant)))
      )
      for (const row of rows) {
        console.log(
          JSON.stringify({
            ...row,
            next_attempt_at: DateTime.formatIso(DateTime.unsafeFromDate(row.next_attempt_at)),
            created_at: DateTime.formatIso(DateTime.unsafeFromDate(row.created_at))
          })
        )
      }
    })
).pipe(Command.withDescription("failing and dead deliveries, one JSON line each"))

const replay = Command.make(
  "replay",
  {
    event: Options.text("event").pipe(
      Options.withPseudoName("EVENT_ID"),
      Options.optional,
      Options.withDescription("make this event due now again, whatever its state")
    ),
    merchant: merchant.pipe(Options.withDescription("make every failing and dead event of this merchant due now again"))
  },
  ({ event, merchant }) =>
    Effect.gen(function* () {
      // one or the other: both named is as wrong as neither
      const which: Option.Option<{ readonly eventId: string } | { readonly merchantId: string }> =
        Option.isSome(event) && Option.isNone(merchant)
          ? Option.some({ eventId: event.value })
          : Option.isSome(merchant) && Option.isNone(event)
            ? Option.some({ merchantId: merchant.value })
            : Option.none()
      if (Option.isNone(which)) return yield* refused("replay takes one of --event EVENT_ID or --merchant MERCHANT_ID")
      const replayed = yield* withAdmin(Effect.flatMap(WebhookAdmin, (admin) => admin.replay(which.value)))
      console.log(JSON.stringify({ replayed }))
    })
).pipe(Command.withDescription("deliver again: one event, or every failing and dead event of a merchant"))

export const webhooksCommand = Command.make("webhooks", {}, () =>
  subcommandNeeded("npm run webhooks --", ["list", "replay"])
).pipe(
  Command.withDescription("webhook deliveries that fail: list them, replay them"),
  Command.withSubcommands([list, replay])
)
