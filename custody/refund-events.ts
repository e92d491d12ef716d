import { DateTime, Effect, Option } from "effect"
import { MerchantStore } from "../src/stores/merchant-store.js"
import { OrderStore } from "../src/stores/order-store.js"
import { RefundStore } from "../src/stores/refund-store.js"
import { refundEventKey } from "../src/stores/webhook-store.js"
import { WebhookOutbox } from "../src/webhooks/outbox.js"
import { renderRefund } from "./refund-view.js"

/**
 * A refund's status changes as webhooks, and a claimed refund following its withdrawal's end. Everything
 * here runs in the caller's transaction: the status change, its `refund.updated` outbox row (and the
 * withdrawal's own change and ledger transfers, when a withdrawal's end moves it) commit together.
 */
export class RefundEvents extends Effect.Service<RefundEvents>()("facet/RefundEvents", {
  effect: Effect.gen(function* () {
    const store = yield* RefundStore
    const orders = yield* OrderStore
    const merchants = yield* MerchantStore
    const outbox = yield* WebhookOutbox

    /**
     * `refund.updated` for the status the refund is in now, keyed `refund.updated:{refund_id}:{STATUS}`, to where
     * the order's events go (its notify_url, else the merchant's webhook_url).
     */
    const announce = Effect.fn("RefundEvents.announce")(function* (refundId: string) {
      const found = yield* store.find({ id: refundId })
      if (Option.isNone(found)) return
      const row = found.value
      const order = yield* Effect.orDie(orders.find(row.merchant_id, row.order_id))
      const notifyUrl = Option.flatMap(order, (o) => Option.fromNullable(o.notify_url))
      const destination = Option.isSome(notifyUrl) ? notifyUrl : yield* merchants.webhookUrl(row.merchant_id)
      yield* outbox.enqueue({
        merchantId: row.merchant_id,
        event: "refund.updated",
        idempotencyKey: refundEventKey(row.id, row.status),
        destination: Option.getOrNull(destination),
        body: {
          event: "refund.updated",
          refund: renderRefund(row),
          created_at: DateTime.formatIso(yield* DateTime.now)
        }
      })
    })

    /**
     * A withdrawal ended: if it is a claimed refund's, the refund follows (COMPLETED; or FAILED with why, the
     * withdrawal's own unlock having returned the money: the refund never unlocks a second time).
     */
    const withdrawalEnded = Effect.fn("RefundEvents.withdrawalEnded")(function* (
      withdrawalId: string,
      outcome: "COMPLETED" | "FAILED",
      reason: string | null
    ) {
      const followed = yield* store.followWithdrawal(withdrawalId, outcome, reason)
      for (const id of followed) yield* announce(id)
    })

    return { announce, withdrawalEnded } as const
  }),
  dependencies: [RefundStore.Default, OrderStore.Default, MerchantStore.Default, WebhookOutbox.Default]
}) {}
