import { Effect, Option, Ref } from "effect"
import { IndexerStatus } from "../indexing/indexer-status.js"
import { type LatestPayment, TransactionStore } from "../stores/transaction-store.js"
import { ChainSettings } from "../assets/chain-settings.js"
import { ChainEndpoints } from "../chains/chain-endpoints.js"
import type { Chain } from "../domain/chain.js"
import type { CheckoutStatus } from "../domain/checkout.js"
import { MoneyDecimal, normalizeDecimal } from "../money.js"
import { OrderStore } from "../stores/order-store.js"
import { OrderNotFound } from "./order-errors.js"

// declared in the domain: the API declaration (and the client built from it) needs no checkout service
export { CheckoutStatus } from "../domain/checkout.js"

export interface CheckoutAsset {
  readonly chain: Chain
  readonly currency: string
  readonly network: string
  readonly amount: string
  readonly address: string
  readonly paymentUri: string
  readonly tokenContract: Option.Option<string>
}

export interface CheckoutView extends CheckoutStatus {
  readonly orderId: string
  readonly merchantName: string
  readonly productName: string | null
  readonly checkoutMode: "single_asset" | "multi_asset"
  readonly assets: ReadonlyArray<CheckoutAsset>
}

export const NETWORK_NAMES: Record<Chain, string> = {
  TRC20: "TRON (TRC20)",
  BEP20: "BNB Smart Chain (BEP20)",
  SOLANA: "Solana",
  POLYGON: "Polygon"
}

/**
 * The hosted checkout's read model, by order id alone (the page is public): the order's public fields,
 * its payable assets with network names and token contracts, and the latest payment's confirmations
 * counted from the indexer's head.
 */
export class Checkout extends Effect.Service<Checkout>()("facet/Checkout", {
  effect: Effect.gen(function* () {
    const transactionStore = yield* TransactionStore
    const store = yield* OrderStore
    const settings = yield* ChainSettings
    const endpoints = yield* ChainEndpoints
    const statuses = yield* IndexerStatus

    const required = (chain: Chain) =>
      chain === "BEP20" ? endpoints.bep20.confirmations : chain === "TRC20" ? endpoints.tron.confirmations : 32

    const view = Effect.fn("Checkout.view")(function* (orderId: string) {
      const found = yield* Effect.orDie(store.checkoutOrder(orderId))
      if (Option.isNone(found)) return yield* new OrderNotFound({ orderId })
      const order = found.value
      const assets = yield* Effect.orDie(store.checkoutAssets(orderId))
      const payment = Option.getOrUndefined(yield* transactionStore.latestOrderPayment(orderId))
      const heads = yield* Ref.get(statuses)
      const confirmationsOf = (p: LatestPayment) => {
        const head = BigInt(heads.get(p.chain)?.head ?? "0")
        const block = p.block_number === null ? head : BigInt(p.block_number)
        return p.status === "confirmed"
          ? required(p.chain)
          : Math.max(0, Math.min(required(p.chain), Number(head - block + 1n)))
      }
      // a PAID order asks nothing more, even one accepted within the merchant's tolerance
      const due =
        order.status === "PAID" ? 0 : MoneyDecimal.max(0, new MoneyDecimal(order.amount).minus(order.paid_amount))
      const result: CheckoutView = {
        orderId: order.id,
        merchantName: order.merchant_name,
        productName: order.product_name,
        checkoutMode: order.checkout_mode,
        status: order.status,
        amount: normalizeDecimal(order.amount),
        paid_amount: normalizeDecimal(order.paid_amount),
        currency: order.currency,
        due: normalizeDecimal(due),
        late_payment: order.late_payment,
        ...(order.underpaid_amount === null ? {} : { underpaid_amount: normalizeDecimal(order.underpaid_amount) }),
        expire_at: order.expire_at.toISOString(),
        payment:
          payment === undefined
            ? null
            : {
                tx_hash: payment.tx_hash,
                chain: payment.chain,
                currency: payment.currency,
                amount: normalizeDecimal(payment.amount),
                confirmations: confirmationsOf(payment),
                required: required(payment.chain),
                final: payment.status === "confirmed"
              },
        return_url: order.return_url,
        assets: assets.map((a) => ({
          chain: a.chain,
          currency: a.currency,
          network: NETWORK_NAMES[a.chain],
          amount: normalizeDecimal(a.amount),
          address: a.pay_address,
          paymentUri: a.pay_qrcode ?? a.pay_address,
          tokenContract: settings.tokenContract(a)
        }))
      }
      return result
    })

    /** The part the page polls. */
    const status = Effect.fn("Checkout.status")(function* (orderId: string) {
      const v = yield* view(orderId)
      const shown: CheckoutStatus = {
        status: v.status,
        amount: v.amount,
        paid_amount: v.paid_amount,
        currency: v.currency,
        due: v.due,
        late_payment: v.late_payment,
        ...(v.underpaid_amount === undefined ? {} : { underpaid_amount: v.underpaid_amount }),
        expire_at: v.expire_at,
        payment: v.payment,
        return_url: v.return_url
      }
      return shown
    })

    return { view, status } as const
  }),
  dependencies: [TransactionStore.Default, OrderStore.Default]
}) {}
