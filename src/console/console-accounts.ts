import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { AuditLog } from "../audit/audit-log.js"
import { SecretBox } from "../keys/secret-box.js"
import { newId } from "../ids.js"
import { ConsoleStore, type HandoffRow } from "../stores/console-store.js"
import { MerchantStore } from "../stores/merchant-store.js"
import { hashPassword, passwordProblem, verifyPassword } from "./passwords.js"
import { ConsoleRefusal } from "./console-refusal.js"
import { SignInThrottle } from "./sign-in-throttle.js"
import { totpStep } from "./totp.js"

export interface ConsoleSession {
  readonly userId: string
  readonly merchantId: string
  readonly loginName: string
  readonly role: string
  readonly csrfToken: string
  /** A TOTP second factor is enrolled: asked at login and for every approval. */
  readonly totp: boolean
}

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex")
const token = () => randomBytes(32).toString("base64url")

/** Session lifetimes: idle and absolute (a session never outlives 12 hours, however busy). */
const IDLE_MINUTES = 30
const ABSOLUTE_HOURS = 12

export const LOGIN_NAME = /^[a-z0-9][a-z0-9._-]{2,63}$/

/**
 * The console's human accounts: binding the owner through the onboarding's one-time token (which dies
 * with it), password login limited per account and address, sessions known only by their hash with idle
 * and absolute expiry, and a CSRF token per session.
 */
export class ConsoleAccounts extends Effect.Service<ConsoleAccounts>()("facet/ConsoleAccounts", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* ConsoleStore
    const merchants = yield* MerchantStore
    const audit = yield* AuditLog
    // TOTP seeds are stored sealed (a database dump shows none)
    const box = yield* SecretBox
    const throttle = yield* SignInThrottle

    /**
     * A TOTP code for the user: right for a time step later than the last one accepted, which it then
     * becomes (in one statement, so two requests with the same code cannot both pass).
     */
    const acceptTotp = (userId: string, sealedSecret: string, code: string) =>
      Effect.gen(function* () {
        const step = totpStep(box.open(sealedSecret), code)
        if (step === undefined) return false
        return yield* Effect.orDie(store.takeTotpStep(userId, step))
      })

    /** The setup link of a token, if it can still be used (else why not). */
    const usable = (found: Option.Option<HandoffRow>) =>
      Option.isNone(found)
        ? Effect.fail(new ConsoleRefusal({ status: 400, message: "This setup link is not valid. Ask for a new one." }))
        : found.value.used
          ? Effect.fail(
              new ConsoleRefusal({
                status: 400,
                message: "This setup link was already used: the console account exists. Log in instead."
              })
            )
          : found.value.expired
            ? Effect.fail(
                new ConsoleRefusal({ status: 400, message: "This setup link has expired. Ask for a new one." })
              )
            : Effect.succeed(found.value)

    /** What the setup page offers for a token (a suggested login name), or why it cannot be used. */
    const setupOffer = Effect.fn("ConsoleAccounts.setupOffer")(function* (consoleToken: string) {
      const found = yield* usable(yield* Effect.orDie(store.findHandoff(sha256(consoleToken), false)))
      return {
        merchantName: found.project_name,
        suggestedLoginName:
          found.project_name
            .toLowerCase()
            .replace(/[^a-z0-9]+/g, "-")
            .replace(/^-+|-+$/g, "")
            .slice(0, 40) || "owner"
      }
    })

    const openSession = (userId: string) =>
      Effect.gen(function* () {
        const cookie = token()
        yield* store.openSession({
          idHash: sha256(cookie),
          userId,
          csrfToken: token(),
          expiresAt: new Date(Date.now() + ABSOLUTE_HOURS * 3600_000)
        })
        return cookie
      })

    /** Binds the owner: one transaction checks the token, creates the account, kills the token, opens a session. */
    const setup = Effect.fn("ConsoleAccounts.setup")(function* (
      consoleToken: string,
      loginName: string,
      password: string
    ) {
      const name = loginName.trim().toLowerCase()
      if (!LOGIN_NAME.test(name))
        return yield* new ConsoleRefusal({
          status: 400,
          message: "The login name must be 3 to 64 characters: letters, digits, dot, dash or underscore."
        })
      const problem = passwordProblem(password, name)
      if (problem !== undefined)
        return yield* new ConsoleRefusal({ status: 400, message: `Choose another password: ${problem}.` })
      const hash = yield* hashPassword(password)
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const found = yield* usable(yield* store.findHandoff(sha256(consoleToken), true))
            if (yield* store.loginNameTaken(name))
              return yield* new ConsoleRefusal({
                status: 400,
                message: `The login name ${name} is taken. Choose another.`
              })
            const userId = newId("usr")
            yield* store.insertUser({
              id: userId,
              merchantId: found.merchant_id,
              loginName: name,
              passwordHash: hash,
              role: "owner"
            })
            yield* store.markHandoffUsed(found.id)
            yield* audit.record(
              found.merchant_id,
              { kind: "console_user", name },
              "user.joined",
              userId,
              "owner (console setup link)"
            )
            yield* merchants.markConsoleBound(found.merchant_id)
            return yield* openSession(userId)
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    /**
     * Password login, throttled per address and per account (SignInThrottle: a stranger's failures slow an
     * account down, never lock its owner out); a TOTP code is accepted once.
     */
    const login = Effect.fn("ConsoleAccounts.login")(function* (
      loginName: string,
      password: string,
      address: string,
      code: string,
      userAgent: string
    ) {
      const name = loginName.trim().toLowerCase()
      yield* throttle.gate(name, address)
      const user = Option.getOrUndefined(yield* Effect.orDie(store.findSignIn(name)))
      const actor = { kind: "console_user", name, from: address, userAgent } as const
      const failed = (why: string) =>
        Effect.orDie(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* throttle.failed(name, address, "login")
              yield* audit.record(user?.merchant_id ?? null, actor, "console.login_failed", user?.id ?? "", why)
            })
          )
        )
      // a missing account costs the same as a wrong password, and looks the same
      const ok = yield* verifyPassword(
        password,
        user?.password_hash ?? "scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
      )
      if (user === undefined || !ok) {
        yield* failed(user === undefined ? "no such login" : "wrong password")
        return yield* new ConsoleRefusal({ status: 401, message: "Wrong login name or password." })
      }
      if (user.totp_secret !== null && !(yield* acceptTotp(user.id, user.totp_secret, code))) {
        yield* failed("wrong, missing or already used authenticator code")
        return yield* new ConsoleRefusal({
          status: 401,
          message:
            "The 6-digit code from your authenticator app is missing, wrong or already used: wait for the next one."
        })
      }
      return yield* Effect.orDie(
        sql.withTransaction(
          Effect.gen(function* () {
            yield* audit.record(user.merchant_id, actor, "console.login", user.id)
            return yield* openSession(user.id)
          })
        )
      )
    })

    /** The session of a cookie, if it is alive (and now touched); idle or absolute expiry ends it. */
    const session = Effect.fn("ConsoleAccounts.session")(function* (cookie: string | undefined) {
      if (cookie === undefined || cookie === "") return Option.none<ConsoleSession>()
      const row = yield* Effect.orDie(store.touchSession(sha256(cookie), IDLE_MINUTES))
      return Option.map(row, (r) => ({
        userId: r.user_id,
        merchantId: r.merchant_id,
        loginName: r.login_name,
        role: r.role,
        csrfToken: r.csrf_token,
        totp: r.totp
      }))
    })

    const logout = Effect.fn("ConsoleAccounts.logout")(function* (cookie: string | undefined) {
      if (cookie === undefined) return
      yield* Effect.orDie(store.endSession(sha256(cookie)))
    })

    /**
     * The password (and the TOTP code, once enrolled) asked again before an approval, a change to the
     * address book or the policy, a new API key: failures count with failed logins and are throttled the same
     * way (a session proves who asks, not that they know the password).
     */
    const confirmPassword = Effect.fn("ConsoleAccounts.confirmPassword")(function* (
      userId: string,
      password: string,
      code: string,
      address: string,
      done = "approved"
    ) {
      const found = yield* Effect.orDie(store.findCredentials(userId))
      if (Option.isNone(found))
        return yield* new ConsoleRefusal({ status: 403, message: `This account is gone: nothing was ${done}.` })
      const user = found.value
      yield* throttle.gate(user.login_name, address, true)
      const failed = (why: string) =>
        Effect.orDie(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* throttle.failed(user.login_name, address, "reconfirm")
              yield* audit.record(
                user.merchant_id,
                { kind: "console_user", name: user.login_name, from: address },
                "console.reconfirm_failed",
                userId,
                why
              )
            })
          )
        )
      if (!(yield* verifyPassword(password, user.password_hash))) {
        yield* failed("wrong password")
        return yield* new ConsoleRefusal({ status: 403, message: `The password is not right: nothing was ${done}.` })
      }
      if (user.totp_secret !== null && !(yield* acceptTotp(userId, user.totp_secret, code))) {
        yield* failed("wrong, missing or already used authenticator code")
        return yield* new ConsoleRefusal({
          status: 403,
          message: `The 6-digit code is missing, wrong or already used (wait for the next one): nothing was ${done}.`
        })
      }
    })

    /**
     * TOTP enrollment, with the password asked again: the secret offered on the page is stored only once a
     * code made from it is right (so a mistyped setup never locks the owner out), and that code's step is
     * the last one accepted.
     */
    const enrollTotp = Effect.fn("ConsoleAccounts.enrollTotp")(function* (
      session: ConsoleSession,
      secret: string,
      code: string,
      password: string,
      from: string
    ) {
      yield* confirmPassword(session.userId, password, "", from, "changed")
      const step = /^[A-Z2-7]{32}$/.test(secret) ? totpStep(secret, code) : undefined
      if (step === undefined) {
        return yield* new ConsoleRefusal({
          status: 400,
          message: "That code does not match: scan the QR code again and enter the current code."
        })
      }
      yield* Effect.orDie(
        sql.withTransaction(
          Effect.gen(function* () {
            if (yield* store.enrollTotp(session.userId, box.seal(secret), step))
              yield* audit.record(
                session.merchantId,
                { kind: "console_user", name: session.loginName, from },
                "totp.enabled",
                session.userId
              )
          })
        )
      )
    })

    return { setupOffer, setup, login, session, logout, confirmPassword, enrollTotp, openSession } as const
  }),
  dependencies: [MerchantStore.Default, AuditLog.Default, ConsoleStore.Default, SignInThrottle.Default]
}) {}
