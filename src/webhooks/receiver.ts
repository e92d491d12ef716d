import { Either, Schema } from "effect"
import { OrderWebhook, RefundWebhook, WalletDepositWebhook, WithdrawalWebhook } from "../domain/webhook-events.js"
import { isValidSignature } from "./signature.js"

/**
 * For our tests (merchants use `@facet-pay/client/webhooks`, the same checks): verify X-FACET-SIGNATURE over the
 * raw body in constant time, then parse the body into a typed event. Verify before parsing; persist the
 * idempotency key and skip duplicates before touching any balance. The bodies are declared once, in
 * src/domain/webhook-events.ts.
 */
export { OrderWebhook, Payment, WalletDepositWebhook, WithdrawalWebhook } from "../domain/webhook-events.js"

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
