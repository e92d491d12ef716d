import { Effect, Layer } from "effect"
import { ConsoleStore } from "../stores/console-store.js"
import { MerchantStore } from "../stores/merchant-store.js"
import { SecretBox } from "./secret-box.js"

/**
 * At start: every webhook secret and TOTP seed not sealed under the current key (stored before sealing
 * existed, or under a rotated-out key version) is sealed now, row by row, so a dump never shows one.
 */
export const SealSecretsLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const box = yield* SecretBox
    const consoleStore = yield* ConsoleStore
    const merchants = yield* MerchantStore
    let sealed = 0
    // only what is not sealed under the current key is read: a start with nothing to do reads no secret
    const current = `sbx${box.version}:%`
    for (const row of yield* merchants.webhookSecretsNotLike(current)) {
      yield* merchants.replaceWebhookSecret(row.id, row.secret, box.seal(box.open(row.secret)))
      sealed += 1
    }
    for (const row of yield* consoleStore.totpSecretsNotLike(current)) {
      yield* consoleStore.replaceTotpSecret(row.id, row.secret, box.seal(box.open(row.secret)))
      sealed += 1
    }
    if (sealed > 0) yield* Effect.logInfo(`sealed ${sealed} stored secret(s) under key version ${box.version}`)
  }).pipe(Effect.orDie)
)
