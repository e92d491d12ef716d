import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { AuditLog, type AuditActor } from "../src/audit/audit-log.js"
import { AppConfig } from "../src/config.js"
import { newId } from "../src/ids.js"
import { PolicyClock } from "../src/policy-clock.js"
import { ConsoleAccounts, LOGIN_NAME } from "../src/console/console-accounts.js"
import { ConsoleRefusal } from "../src/console/console-refusal.js"
import { hashPassword, passwordProblem } from "../src/console/passwords.js"
import { ConsoleStore } from "../src/stores/console-store.js"
import { MerchantStore } from "../src/stores/merchant-store.js"

export type { ConsoleInvite, ConsoleUser } from "../src/stores/console-store.js"

/** The roles an invite can give; there is one owner, bound through the onboarding's setup link. */
export const InvitedRole = Schema.Literal("admin", "approver", "viewer")
export type InvitedRole = typeof InvitedRole.Type

const INVITE_HOURS = 72
const sha256 = (value: string) => createHash("sha256").update(value).digest("hex")

/**
 * The merchant's console users beyond the owner: one-time invite links (the owner's setup flow, with the
 * login name and role chosen by the inviter), their approval right starting after the cooling-off in force
 * (a new approver is a loosening too), and removal (sessions end at once). Every act is in the audit log.
 */
export class ConsoleUsers extends Effect.Service<ConsoleUsers>()("facet/ConsoleUsers", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* ConsoleStore
    const merchants = yield* MerchantStore
    const audit = yield* AuditLog
    const accounts = yield* ConsoleAccounts
    const policy = yield* WithdrawalPolicy
    const clock = yield* PolicyClock
    const config = yield* AppConfig

    const invite = Effect.fn("ConsoleUsers.invite")(function* (
      merchantId: string,
      request: { readonly loginName: string; readonly role: string },
      actor: AuditActor
    ) {
      const name = request.loginName.trim().toLowerCase()
      if (!LOGIN_NAME.test(name))
        return yield* new ConsoleRefusal({
          status: 400,
          message: "The login name must be 3 to 64 characters: letters, digits, dot, dash or underscore."
        })
      if (!Schema.is(InvitedRole)(request.role))
        return yield* new ConsoleRefusal({ status: 400, message: "The role must be admin, approver or viewer." })
      const token = randomBytes(32).toString("base64url")
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            if (!(yield* merchants.lockMerchant(merchantId)))
              return yield* new ConsoleRefusal({ status: 404, message: `There is no merchant ${merchantId}.` })
            if (yield* store.loginNameTakenOrInvited(name))
              return yield* new ConsoleRefusal({
                status: 409,
                message: `The login name ${name} is taken. Choose another.`
              })
            const id = newId("inv")
            const expiresAt = yield* store.insertInvite({
              id,
              merchantId,
              tokenHash: sha256(token),
              loginName: name,
              role: request.role,
              invitedBy: actor.name,
              expiresAt: new Date(Date.now() + INVITE_HOURS * 3600_000)
            })
            yield* audit.record(merchantId, actor, "user.invited", id, `${name} as ${request.role}`)
            return {
              url: `${config.consoleBaseUrl}/invite?token=${token}`,
              loginName: name,
              role: request.role,
              expiresAt: Option.getOrElse(expiresAt, () => new Date())
            }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    const usableInvite = Effect.fn("ConsoleUsers.usableInvite")(function* (token: string, lock: boolean) {
      const invite = yield* Effect.orDie(store.findInvite(sha256(token), lock))
      if (Option.isNone(invite))
        return yield* new ConsoleRefusal({
          status: 400,
          message: "This invite link is not valid. Ask the owner for a new one."
        })
      const found = invite.value
      if (found.used)
        return yield* new ConsoleRefusal({ status: 400, message: "This invite link was already used: log in instead." })
      if (found.expired)
        return yield* new ConsoleRefusal({
          status: 400,
          message: "This invite link has expired. Ask the owner for a new one."
        })
      return found
    })

    /** What the invite page shows: who invites, to what, with which login name and role. */
    const inviteOffer = Effect.fn("ConsoleUsers.inviteOffer")(function* (token: string) {
      const found = yield* usableInvite(token, false)
      return {
        merchantName: found.project_name,
        loginName: found.login_name,
        role: found.role,
        invitedBy: found.invited_by
      }
    })

    /** The invited person chooses a password: the account exists, the link dies, a session opens. */
    const accept = Effect.fn("ConsoleUsers.accept")(function* (
      token: string,
      password: string,
      from: string,
      userAgent: string
    ) {
      const offer = yield* inviteOffer(token)
      const problem = passwordProblem(password, offer.loginName)
      if (problem !== undefined)
        return yield* new ConsoleRefusal({ status: 400, message: `Choose another password: ${problem}.` })
      const hash = yield* hashPassword(password)
      const now = yield* clock.now
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const found = yield* usableInvite(token, true)
            if (yield* store.loginNameTaken(found.login_name))
              return yield* new ConsoleRefusal({
                status: 409,
                message: `The login name ${found.login_name} is taken. Ask the owner for a new invite.`
              })
            const { coolingOffSeconds } = yield* policy.effective(found.merchant_id)
            const approverFrom = new Date(now.getTime() + coolingOffSeconds * 1000)
            const userId = newId("usr")
            yield* store.insertUser({
              id: userId,
              merchantId: found.merchant_id,
              loginName: found.login_name,
              passwordHash: hash,
              role: found.role,
              invited: { by: found.invited_by, approverFrom }
            })
            yield* store.markInviteUsed(found.id)
            yield* audit.record(
              found.merchant_id,
              { kind: "console_user", name: found.login_name, from, userAgent },
              "user.joined",
              userId,
              `${found.role}, invited by ${found.invited_by}${found.role === "viewer" ? "" : `; approvals count from ${approverFrom.toISOString()}`}`
            )
            return yield* accounts.openSession(userId)
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    const list = Effect.fn("ConsoleUsers.list")(function* (merchantId: string) {
      const users = yield* Effect.orDie(store.activeUsers(merchantId))
      const invites = yield* Effect.orDie(store.openInvites(merchantId))
      return { users, invites }
    })

    /** Removes a user (never the owner): their sessions end at once and their approvals of still-pending withdrawals stop counting. */
    const remove = Effect.fn("ConsoleUsers.remove")(function* (merchantId: string, userId: string, actor: AuditActor) {
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const found = yield* store.lockActiveUser(merchantId, userId)
            if (Option.isNone(found))
              return yield* new ConsoleRefusal({ status: 404, message: "There is no such user." })
            const user = found.value
            if (user.role === "owner")
              return yield* new ConsoleRefusal({ status: 400, message: "The owner cannot be removed." })
            yield* store.removeUser(userId)
            yield* audit.record(merchantId, actor, "user.removed", userId, `${user.login_name} (${user.role})`)
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    return { invite, inviteOffer, accept, list, remove } as const
  }),
  dependencies: [
    MerchantStore.Default,
    ConsoleStore.Default,
    AuditLog.Default,
    ConsoleAccounts.Default,
    WithdrawalPolicy.Default
  ]
}) {}
