import { Effect, Layer, Option, Redacted } from "effect"
import { UnauthorizedError } from "../src/domain/errors.js"
import { ApiKeys } from "../src/merchants/api-keys.js"
import { Authentication } from "./api.js"

/** X-API-Key → the merchant it belongs to; the contract's two 401 messages. */
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const keys = yield* ApiKeys
    return {
      apiKey: (key) =>
        Effect.gen(function* () {
          if (Redacted.value(key).trim() === "") {
            return yield* new UnauthorizedError({
              error: "merchant authentication is required: send the X-API-Key header"
            })
          }
          const principal = yield* keys.authenticate(key)
          return yield* Option.match(principal, {
            onNone: () => new UnauthorizedError({ error: "API key is invalid or inactive" }),
            onSome: Effect.succeed
          })
        })
    }
  })
)
