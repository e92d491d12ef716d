import { Effect } from "effect"
import { type ProblemFilter, WebhookStore } from "../stores/webhook-store.js"

/** Operators' view of webhook delivery: what is failing or dead, and replays. */
export class WebhookAdmin extends Effect.Service<WebhookAdmin>()("facet/WebhookAdmin", {
  effect: Effect.gen(function* () {
    const store = yield* WebhookStore

    const problems = Effect.fn("WebhookAdmin.problems")(function* (filter: ProblemFilter, merchantId?: string) {
      return yield* store.problems(filter, merchantId)
    })

    /**
     * Makes events due now again: one event by id (whatever its state), or every failing and dead event of
     * a merchant. An event that had no destination takes the merchant's current webhook_url.
     */
    const replay = Effect.fn("WebhookAdmin.replay")(function* (
      target: { readonly eventId: string } | { readonly merchantId: string }
    ) {
      return yield* store.replay(target)
    })

    return { problems, replay } as const
  }),
  dependencies: [WebhookStore.Default]
}) {}
