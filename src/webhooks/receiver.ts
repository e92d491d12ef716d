import { Either, Schema } from "effect"
import { Order } from "../domain/order.js"
import { isValidSignature } from "./signature.js"
import { RefundWebhook } from "../domain/refund.js"

/**
 * For merchants' receivers (and our tests): verify X-FACET-SIGNATURE over the raw body in constant time,
 * then parse the body into a typed event. Verify before parsing; persist the idempotency key and skip
 * duplicates before touching any balance.
 */
export const Payment = Schema.Struct({
  chain: Schema.String,
  currency: Schema.String,
  tx_hash: Schema.String,
  to_address: Schema.String,
  event_index: Schema.Number,
  amount: Schema.String,
  block_number: Schema.Number,
  confirmations: Schema.Number
})

export const OrderWebhook = Schema.Struct({
  event: Schema.Literal(
    "payment.detected",
    "payment.confirmed",
    "payment.reversed",
    "payment.restored",
    "order.expired",
    "order.partially_paid"
  ),
  order: Order,
  payment: Schema.optional(Payment),
  created_at: Schema.String
})

export const WalletDepositWebhook = Schema.Struct({
  event: Schema.Literal("wallet.deposit.confirmed"),
  deposit_address_id: Schema.String,
  external_user_id: Schema.String,
  wallet_id: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  amount: Schema.String,
  tx_hash: Schema.String,
  from_address: Schema.NullOr(Schema.String),
  to_address: Schema.String,
  event_index: Schema.Number,
  block_number: Schema.Number,
  confirmations: Schema.Number,
  confirmed_at: Schema.String,
  created_at: Schema.String
})

export const WithdrawalWebhook = Schema.Struct({
  event: Schema.Literal("wallet.withdrawal.completed", "wallet.withdrawal.failed"),
  withdrawal: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  created_at: Schema.String
})

export type FacetWebhook =
  | { readonly type: "order.updated"; readonly idempotencyKey: string; readonly body: typeof OrderWebhook.Type }
  | {
      readonly type: "wallet.deposit.confirmed"
      readonly idempotencyKey: string
      readonly body: typeof WalletDepositWebhook.Type
    }
  | {
      readonly type: "wallet.withdrawal.completed" | "wallet.withdrawal.failed"
      readonly idempotencyKey: string
      readonly body: typeof WithdrawalWebhook.Type
    }
  | { readonly type: "refund.updated"; readonly idempotencyKey: string; readonly body: typeof RefundWebhook.Type }

export interface ReceivedWebhook {
  readonly rawBody: Uint8Array | string
  /** Header names in any case. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly secret: string
}

const header = (headers: ReceivedWebhook["headers"], name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return typeof value === "string" ? value : value?.[0]
  }
  return undefined
}

const decodeJson = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknownEither(Schema.parseJson(schema))

export const verifyWebhook = (received: ReceivedWebhook): Either.Either<FacetWebhook, string> => {
  if (!isValidSignature(received.secret, received.rawBody, header(received.headers, "x-facet-signature"))) {
    return Either.left("invalid signature")
  }
  const idempotencyKey = header(received.headers, "x-facet-idempotency-key")
  if (idempotencyKey === undefined || idempotencyKey === "") return Either.left("missing X-FACET-IDEMPOTENCY-KEY")
  const text = typeof received.rawBody === "string" ? received.rawBody : Buffer.from(received.rawBody).toString("utf8")
  const type = header(received.headers, "x-facet-event")
  const invalid = (e: unknown) => `invalid ${type} body: ${String(e)}`
  switch (type) {
    case "order.updated":
      return Either.map(Either.mapLeft(decodeJson(OrderWebhook)(text), invalid), (body) => ({
        type,
        idempotencyKey,
        body
      }))
    case "wallet.deposit.confirmed":
      return Either.map(Either.mapLeft(decodeJson(WalletDepositWebhook)(text), invalid), (body) => ({
        type,
        idempotencyKey,
        body
      }))
    case "wallet.withdrawal.completed":
    case "wallet.withdrawal.failed":
      return Either.map(Either.mapLeft(decodeJson(WithdrawalWebhook)(text), invalid), (body) => ({
        type,
        idempotencyKey,
        body
      }))
    case "refund.updated":
      return Either.map(Either.mapLeft(decodeJson(RefundWebhook)(text), invalid), (body) => ({
        type,
        idempotencyKey,
        body
      }))
    default:
      return Either.left(`unknown X-FACET-EVENT ${type ?? "(missing)"}`)
  }
}
