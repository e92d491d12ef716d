import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { AuditLog, type AuditActor } from "../src/audit/audit-log.js"
import { AppConfig } from "../src/config.js"
import { newId } from "../src/ids.js"
import { PolicyClock } from "../src/policy-clock.js"
import { ConsoleAccounts, LOGIN_NAME } from "../src/console/console-accounts.js"
import { ConsoleRefusal } from "../src/console/console-refusal.js"
import { hashPassword, passwordProblem } from "../src/console/passwords.js"

/** The roles an invite can give; there is one owner, bound through the onboarding's setup link. */
export const InvitedRole = Schema.Literal("admin", "approver", "viewer")
export type InvitedRole = typeof InvitedRole.Type

const INVITE_HOURS = 72
const sha256 = (value: string) => createHash("sha256").update(value).digest("hex")

const UserRow = Schema.Struct({
  id: Schema.String,
  login_name: Schema.String,
  role: Schema.String,
  totp: Schema.Boolean,
  approver_from: Schema.NullOr(Schema.DateFromSelf),
  invited_by: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf
})
export type ConsoleUser = typeof UserRow.Type
const InviteRow = Schema.Struct({
  id: Schema.String,
  login_name: Schema.String,
  role: Schema.String,
  invited_by: Schema.String,
  expires_at: Schema.DateFromSelf
})
export type ConsoleInvite = typeof InviteRow.Type

/**
 * The merchant's console users beyond the owner: one-time invite links (the owner's setup flow, with the
 * login name and role chosen by the inviter), their approval right starting after the cooling-off in force
 * (a new approver is a loosening too), and removal (sessions end at once). Every act is in the audit log.
 */
export class ConsoleUsers extends Effect.Service<ConsoleUsers>()("facet/ConsoleUsers", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
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
            const [merchant] = yield* sql<{ id: string }>`SELECT id FROM merchants WHERE id = ${merchantId} FOR UPDATE`
            if (merchant === undefined)
              return yield* new ConsoleRefusal({ status: 404, message: `There is no merchant ${merchantId}.` })
            const taken = yield* sql<{ id: string }>`
          SELECT id FROM console_users WHERE login_name = ${name}
          UNION ALL SELECT id FROM console_invites WHERE login_name = ${name} AND used_at IS NULL AND expires_at > now()`
            if (taken.length > 0)
              return yield* new ConsoleRefusal({
                status: 409,
                message: `The login name ${name} is taken. Choose another.`
              })
            const id = newId("inv")
            const [created] = yield* sql<{ expires_at: Date }>`INSERT INTO console_invites ${sql.insert({
              id,
              merchant_id: merchantId,
              token_hash: sha256(token),
              login_name: name,
              role: request.role,
              invited_by: actor.name,
              expires_at: new Date(Date.now() + INVITE_HOURS * 3600_000)
            })} RETURNING expires_at`
            yield* audit.record(merchantId, actor, "user.invited", id, `${name} as ${request.role}`)
            return {
              url: `${config.consoleBaseUrl}/invite?token=${token}`,
              loginName: name,
              role: request.role,
              expiresAt: created?.expires_at ?? new Date()
            }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    const findInvite = (token: string, lock: boolean) =>
      Effect.map(
        sql<{
          id: string
          merchant_id: string
          login_name: string
          role: string
          invited_by: string
          used: boolean
          expired: boolean
          project_name: string
        }>`
          SELECT i.id, i.merchant_id, i.login_name, i.role, i.invited_by, i.used_at IS NOT NULL AS used, i.expires_at <= now() AS expired, m.project_name
          FROM console_invites i JOIN merchants m ON m.id = i.merchant_id WHERE i.token_hash = ${sha256(token)} ${lock ? sql`FOR UPDATE OF i` : sql``}`,
        (rows) => rows[0]
      )

    const usableInvite = Effect.fn("ConsoleUsers.usableInvite")(function* (token: string, lock: boolean) {
      const found = yield* Effect.orDie(findInvite(token, lock))
      if (found === undefined)
        return yield* new ConsoleRefusal({
          status: 400,
          message: "This invite link is not valid. Ask the owner for a new one."
        })
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
            const taken = yield* sql<{
              id: string
            }>`SELECT id FROM console_users WHERE login_name = ${found.login_name}`
            if (taken.length > 0)
              return yield* new ConsoleRefusal({
                status: 409,
                message: `The login name ${found.login_name} is taken. Ask the owner for a new invite.`
              })
            const { coolingOffSeconds } = yield* policy.effective(found.merchant_id)
            const approverFrom = new Date(now.getTime() + coolingOffSeconds * 1000)
            const userId = newId("usr")
            yield* sql`INSERT INTO console_users ${sql.insert({
              id: userId,
              merchant_id: found.merchant_id,
              login_name: found.login_name,
              password_hash: hash,
              role: found.role,
              invited_by: found.invited_by,
              approver_from: approverFrom
            })}`
            yield* sql`UPDATE console_invites SET used_at = now() WHERE id = ${found.id}`
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
      const users =
        yield* sql`SELECT id, login_name, role, totp_secret IS NOT NULL AS totp, approver_from, invited_by, created_at
                               FROM console_users WHERE merchant_id = ${merchantId} AND removed_at IS NULL ORDER BY created_at`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(UserRow))),
          Effect.orDie
        )
      const invites = yield* sql`SELECT id, login_name, role, invited_by, expires_at FROM console_invites
                                 WHERE merchant_id = ${merchantId} AND used_at IS NULL AND expires_at > now() ORDER BY created_at`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(InviteRow))),
        Effect.orDie
      )
      return { users, invites }
    })

    /** Removes a user (never the owner): their sessions end at once and their approvals of still-pending withdrawals stop counting. */
    const remove = Effect.fn("ConsoleUsers.remove")(function* (merchantId: string, userId: string, actor: AuditActor) {
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const [user] = yield* sql<{ login_name: string; role: string }>`
          SELECT login_name, role FROM console_users WHERE id = ${userId} AND merchant_id = ${merchantId} AND removed_at IS NULL FOR UPDATE`
            if (user === undefined) return yield* new ConsoleRefusal({ status: 404, message: "There is no such user." })
            if (user.role === "owner")
              return yield* new ConsoleRefusal({ status: 400, message: "The owner cannot be removed." })
            yield* sql`UPDATE console_users SET removed_at = now(), updated_at = now() WHERE id = ${userId}`
            yield* sql`UPDATE console_sessions SET ended_at = now() WHERE user_id = ${userId} AND ended_at IS NULL`
            yield* audit.record(merchantId, actor, "user.removed", userId, `${user.login_name} (${user.role})`)
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    return { invite, inviteOffer, accept, list, remove } as const
  })
}) {}
