import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"
import { OrderStatus } from "./order.js"

/** What the hosted checkout page shows a paying customer: no merchant id, key, secret or other order. */
export const CheckoutStatus = Schema.Struct({
  status: OrderStatus,
  amount: DecimalString,
  paid_amount: DecimalString,
  currency: Schema.String,
  /** What is still due (0 once paid). */
  due: DecimalString,
  late_payment: Schema.Boolean,
  /** Paid short, within the merchant's underpayment tolerance: what was not asked of the customer after all. */
  underpaid_amount: Schema.optional(DecimalString),
  expire_at: Schema.String,
  /** The latest payment seen: confirmations counted against what the network needs. */
  payment: Schema.NullOr(
    Schema.Struct({
      tx_hash: Schema.String,
      chain: Chain,
      currency: Schema.String,
      amount: DecimalString,
      confirmations: Schema.Number,
      required: Schema.Number,
      final: Schema.Boolean
    })
  ),
  return_url: Schema.NullOr(Schema.String)
}).annotations({ identifier: "CheckoutStatus" })
export type CheckoutStatus = typeof CheckoutStatus.Type
