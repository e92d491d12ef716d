import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either } from "effect"
import { member, MEMBER_PASSWORD } from "../../test/console-members.js"
import { TestAppLive } from "../../test/http-harness.js"
import { onboardMerchant } from "../../test/merchants.js"
import { ConsoleAccounts } from "./console-accounts.js"
import { newTotpSecret, totpCode } from "./totp.js"

const STRANGER = "203.0.113.7"
const OFFICE = "198.51.100.20"

/** The refusal's status and sentence, or "ok". */
const outcome = <A, E extends { readonly status: number; readonly message: string }, R>(
  attempt: Effect.Effect<A, E, R>
) =>
  Effect.map(Effect.either(attempt), (result) =>
    Either.isLeft(result) ? `${result.left.status} ${result.left.message}` : "ok"
  )

describe("console credentials: throttled per address and account, codes used once", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    // before: five failures for a name locked that name out for 15 minutes, from everywhere — a stranger
    // could keep a named approver from logging in or approving
    it.effect(
      "a stranger's failures lock the stranger out, not the account's owner; failures spread over addresses only slow the account down",
      () =>
        Effect.gen(function* () {
          const accounts = yield* ConsoleAccounts
          const sql = yield* SqlClient.SqlClient
          const { merchantId } = yield* onboardMerchant()
          yield* member(merchantId, "alice-t", "approver")
          const login = (password: string, address: string) =>
            outcome(accounts.login("alice-t", password, address, "", "test"))

          for (let i = 0; i < 5; i++) expect(yield* login(`guess-${i}-xxxxxxxx`, STRANGER)).toMatch(/^401/)
          expect(yield* login(MEMBER_PASSWORD, STRANGER)).toMatch(/^429 Too many failed attempts from here/)
          // the owner, from where she works: one second of backoff after five failures, then in
          yield* sql`UPDATE console_login_failures SET at = at - interval '2 seconds' WHERE login_name = 'alice-t'`
          expect(yield* login(MEMBER_PASSWORD, OFFICE)).toBe("ok")

          // a guess spread over many addresses: from a new address each attempt waits longer, never more
          // than a minute; from where the owner logged in before, and inside her session, not at all
          for (let i = 0; i < 20; i++)
            yield* sql`INSERT INTO console_login_failures (login_name, address) VALUES ('alice-t', ${`192.0.2.${i}`})`
          const elsewhere = "198.51.100.99"
          const waiting = yield* login(MEMBER_PASSWORD, elsewhere)
          expect(waiting).toMatch(/^429 Too many failed attempts for this account\. Wait (\d+) seconds/)
          expect(Number(/Wait (\d+) seconds/.exec(waiting)?.[1])).toBeLessThanOrEqual(60)
          expect(yield* login(MEMBER_PASSWORD, OFFICE)).toBe("ok")
          const [alice] = yield* sql<{ id: string }>`SELECT id FROM console_users WHERE login_name = 'alice-t'`
          expect(yield* outcome(accounts.confirmPassword(alice?.id ?? "", MEMBER_PASSWORD, "", elsewhere))).toBe("ok")
          yield* sql`UPDATE console_login_failures SET at = at - interval '61 seconds' WHERE login_name = 'alice-t'`
          expect(yield* login(MEMBER_PASSWORD, elsewhere)).toBe("ok")
        })
    )

    // before: the re-confirmation behind approvals and policy changes had no limit (40 wrong, then right: in)
    it.effect(
      "the password asked again before an approval counts its failures: five wrong, then even the right one waits; each is audited",
      () =>
        Effect.gen(function* () {
          const accounts = yield* ConsoleAccounts
          const sql = yield* SqlClient.SqlClient
          const { merchantId } = yield* onboardMerchant()
          const bob = yield* member(merchantId, "bob-t", "approver")
          const confirm = (password: string) => outcome(accounts.confirmPassword(bob, password, "", OFFICE))
          for (let i = 0; i < 5; i++)
            expect(yield* confirm(`wrong-${i}-xxxxxxxx`)).toBe("403 The password is not right: nothing was approved.")
          expect(yield* confirm(MEMBER_PASSWORD)).toMatch(/^429/)
          const audited = yield* sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM audit_log WHERE action = 'console.reconfirm_failed' AND subject = ${bob}`
          expect(audited[0]?.n).toBe(5)
          // and they count with logins: a login from the same address waits too
          expect(yield* outcome(accounts.login("bob-t", MEMBER_PASSWORD, OFFICE, "", "test"))).toMatch(/^429/)
        })
    )

    // before: a TOTP code was accepted again within its window (a shoulder-surfed or phished code replayed)
    it.effect("a TOTP code is accepted once: at enrollment, login and re-confirmation; the next step's code is", () =>
      Effect.gen(function* () {
        const accounts = yield* ConsoleAccounts
        const { merchantId } = yield* onboardMerchant()
        const carol = yield* member(merchantId, "carol-t", "admin")
        const session = { userId: carol, merchantId, loginName: "carol-t", role: "admin", csrfToken: "x", totp: false }
        const secret = newTotpSecret()
        const now = Date.now()
        // enrolling asks for the password
        expect(
          yield* outcome(accounts.enrollTotp(session, secret, totpCode(secret, now), "wrong-password-xx", OFFICE))
        ).toMatch(/^403 The password is not right/)
        expect(
          yield* outcome(accounts.enrollTotp(session, secret, totpCode(secret, now), MEMBER_PASSWORD, OFFICE))
        ).toBe("ok")
        expect(
          yield* outcome(accounts.login("carol-t", MEMBER_PASSWORD, OFFICE, totpCode(secret, now), "test"))
        ).toMatch(/^401 .*already used/)
        expect(
          yield* outcome(accounts.login("carol-t", MEMBER_PASSWORD, OFFICE, totpCode(secret, now + 30_000), "test"))
        ).toBe("ok")
        expect(
          yield* outcome(accounts.confirmPassword(carol, MEMBER_PASSWORD, totpCode(secret, now + 30_000), OFFICE))
        ).toMatch(/^403 .*already used/)
      })
    )
  })
})
