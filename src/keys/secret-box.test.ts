import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { TestDatabaseLive } from "../../test/database.js"
import { ConsoleStore } from "../stores/console-store.js"
import { MerchantStore } from "../stores/merchant-store.js"
import { masterSeedFromMnemonic } from "./master-seed.js"
import { SealSecretsLive } from "./sealed-secrets.js"
import { SecretBox, SecretBoxLive } from "./secret-box.js"

const MNEMONIC = "test test test test test test test test test test test junk"
const boxAt = (version: number) =>
  SecretBoxLive.pipe(
    Layer.provide(masterSeedFromMnemonic(MNEMONIC)),
    Layer.provide(
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["FACET_SECRET_BOX_VERSION", String(version)]])))
    )
  )
const withBox = <A>(version: number, use: (box: SecretBox["Type"]) => A) =>
  Effect.map(Effect.provide(SecretBox, boxAt(version)), use)

describe("secret box (stored secrets sealed with a key from the master seed)", () => {
  layer(TestDatabaseLive, { excludeTestServices: true })((it) => {
    it.effect(
      "seals with a fresh nonce, opens, refuses a tampered value, passes a legacy plain value, and opens an older key version",
      () =>
        Effect.gen(function* () {
          const [one, two, plain, tampered] = yield* withBox(1, (box) => {
            const sealed = box.seal("whsec_abc")
            // one character of the ciphertext changed (the last but one: all six of its bits are data)
            const flipped = `${sealed.slice(0, -2)}${sealed.at(-2) === "A" ? "B" : "A"}${sealed.slice(-1)}`
            return [
              sealed,
              box.seal("whsec_abc"),
              box.open("legacy-plain"),
              (() => {
                try {
                  return box.open(flipped)
                } catch {
                  return "refused"
                }
              })()
            ]
          })
          expect(one).toMatch(/^sbx1:[\w-]+$/)
          expect(one).not.toContain("whsec_abc")
          expect(one).not.toBe(two)
          expect(plain).toBe("legacy-plain")
          expect(tampered).toBe("refused")
          // after a key rotation (version 2), values sealed under version 1 still open, and are not current
          const [opened, current, fresh] = yield* withBox(
            2,
            (box) => [box.open(one), box.isCurrent(one), box.isCurrent(box.seal("x"))] as const
          )
          expect([opened, current, fresh]).toEqual(["whsec_abc", false, true])
        })
    )

    it.effect("at start, plain and older-key secrets in the database are sealed under the current key", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
                   VALUES ('m1', 'M1', 'a1', 'p', 'p', 'b', 'u', 'checkout', '{}', 'whsec_plain')`
        yield* sql`INSERT INTO console_users (id, merchant_id, login_name, password_hash, totp_secret) VALUES ('u1', 'm1', 'owner-1', 'x', 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP')`
        yield* Effect.scoped(
          Layer.build(
            SealSecretsLive.pipe(
              Layer.provide(boxAt(1)),
              Layer.provide(Layer.merge(ConsoleStore.Default, MerchantStore.Default))
            )
          )
        )
        const [merchant] = yield* sql<{
          secret: string
        }>`SELECT webhook_secret AS secret FROM merchants WHERE id = 'm1'`
        const [user] = yield* sql<{ secret: string }>`SELECT totp_secret AS secret FROM console_users WHERE id = 'u1'`
        expect(merchant?.secret).toMatch(/^sbx1:/)
        expect(user?.secret).toMatch(/^sbx1:/)
        expect(yield* withBox(1, (box) => [box.open(merchant?.secret ?? ""), box.open(user?.secret ?? "")])).toEqual([
          "whsec_plain",
          "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
        ])
        // rotated to version 2: resealed once more, same plain values
        yield* Effect.scoped(
          Layer.build(
            SealSecretsLive.pipe(
              Layer.provide(boxAt(2)),
              Layer.provide(Layer.merge(ConsoleStore.Default, MerchantStore.Default))
            )
          )
        )
        const [again] = yield* sql<{ secret: string }>`SELECT webhook_secret AS secret FROM merchants WHERE id = 'm1'`
        expect(again?.secret).toMatch(/^sbx2:/)
        expect(yield* withBox(2, (box) => box.open(again?.secret ?? ""))).toBe("whsec_plain")
      })
    )
  })
})
