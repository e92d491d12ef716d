import { Schema } from "effect"

/** The idempotency key came back with a different request. */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  endpoint: Schema.String
}) {
  override get message() {
    return "X-Service-Idempotency-Key was already used with a different request; use a new key for a new request"
  }
}
