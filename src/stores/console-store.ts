import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { decodeAll, decodeFirst } from "./rows.js"

/** A console user as the people page lists them. */
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

/** An invite not used and not expired, as the people page lists it. */
const InviteRow = Schema.Struct({
  id: Schema.String,
  login_name: Schema.String,
  role: Schema.String,
  invited_by: Schema.String,
  expires_at: Schema.DateFromSelf
})
export type ConsoleInvite = typeof InviteRow.Type

/** An owner's setup link (the onboarding's handoff) by its token, with the merchant's name. */
const HandoffRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  used: Schema.Boolean,
  expired: Schema.Boolean,
  project_name: Schema.String
})
export type HandoffRow = typeof HandoffRow.Type

/** An invite link by its token, with the merchant's name. */
const InviteLinkRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  login_name: Schema.String,
  role: Schema.String,
  invited_by: Schema.String,
  used: Schema.Boolean,
  expired: Schema.Boolean,
  project_name: Schema.String
})
export type InviteLinkRow = typeof InviteLinkRow.Type

/** What a password login checks. */
const SignInRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  password_hash: Schema.String,
  totp_secret: Schema.NullOr(Schema.String)
})

/** What a password re-confirmation checks. */
const CredentialsRow = Schema.Struct({
  merchant_id: Schema.String,
  login_name: Schema.String,
  password_hash: Schema.String,
  totp_secret: Schema.NullOr(Schema.String)
})

/** A live session with its user. */
const SessionRow = Schema.Struct({
  user_id: Schema.String,
  merchant_id: Schema.String,
  login_name: Schema.String,
  role: Schema.String,
  csrf_token: Schema.String,
  totp: Schema.Boolean
})

/** A console user deciding on a withdrawal: what the policy needs to know of them. */
const DeciderRow = Schema.Struct({
  id: Schema.String,
  login_name: Schema.String,
  role: Schema.String,
  approver_from: Schema.NullOr(Schema.DateFromSelf),
  removed_at: Schema.NullOr(Schema.DateFromSelf)
})
export type DeciderRow = typeof DeciderRow.Type

const MemberRow = Schema.Struct({ login_name: Schema.String, role: Schema.String })
const SecretRow = Schema.Struct({ id: Schema.String, secret: Schema.String })
const ExpiryRow = Schema.Struct({ expires_at: Schema.DateFromSelf })

/** The sign-in failures in the throttle's window: from an address, for an account from it, for an account. */
const FailureCountsRow = Schema.Struct({
  by_address: Schema.Number,
  by_pair: Schema.Number,
  by_name: Schema.Number,
  /** Seconds since the account's last failure in the window; null with none. */
  since_last: Schema.NullOr(Schema.Number)
})
export type FailureCountsRow = typeof FailureCountsRow.Type

/**
 * Every statement on the console's tables: `console_users`, `console_sessions`, `console_invites`,
 * `console_handoffs` (the onboarding's owner setup links) and `console_login_failures`. Tokens and cookies
 * arrive hashed; a statement runs in the caller's transaction when it has one.
 */
export class ConsoleStore extends Effect.Service<ConsoleStore>()("facet/ConsoleStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // ---- users

    /** Whether a login name belongs to a user (removed ones too: a login name is never reused). */
    const loginNameTaken = Effect.fn("ConsoleStore.loginNameTaken")(function* (loginName: string) {
      const taken = yield* sql`SELECT id FROM console_users WHERE login_name = ${loginName}`
      return taken.length > 0
    })

    /** Whether a login name belongs to a user, or to an invite still open. */
    const loginNameTakenOrInvited = Effect.fn("ConsoleStore.loginNameTakenOrInvited")(function* (loginName: string) {
      const taken = yield* sql`
        SELECT id FROM console_users WHERE login_name = ${loginName}
        UNION ALL SELECT id FROM console_invites WHERE login_name = ${loginName} AND used_at IS NULL AND expires_at > now()`
      return taken.length > 0
    })

    /** A new user: the owner (no inviter, approving at once) or an invited one. */
    const insertUser = Effect.fn("ConsoleStore.insertUser")(function* (user: {
      readonly id: string
      readonly merchantId: string
      readonly loginName: string
      readonly passwordHash: string
      readonly role: string
      readonly invited?: { readonly by: string; readonly approverFrom: Date } | undefined
    }) {
      yield* sql`INSERT INTO console_users ${sql.insert({
        id: user.id,
        merchant_id: user.merchantId,
        login_name: user.loginName,
        password_hash: user.passwordHash,
        role: user.role,
        ...(user.invited === undefined ? {} : { invited_by: user.invited.by, approver_from: user.invited.approverFrom })
      })}`
    })

    /** The user a password login is for (not a removed one). */
    const findSignIn = Effect.fn("ConsoleStore.findSignIn")(function* (loginName: string) {
      return yield* sql`
        SELECT id, merchant_id, password_hash, totp_secret FROM console_users WHERE login_name = ${loginName} AND removed_at IS NULL`.pipe(
        Effect.flatMap(decodeFirst(SignInRow))
      )
    })

    /** A user's password hash and TOTP seed, for a re-confirmation inside their session. */
    const findCredentials = Effect.fn("ConsoleStore.findCredentials")(function* (userId: string) {
      return yield* sql`
        SELECT merchant_id, login_name, password_hash, totp_secret FROM console_users WHERE id = ${userId}`.pipe(
        Effect.flatMap(decodeFirst(CredentialsRow))
      )
    })

    /**
     * Takes a TOTP time step for a user when it is later than the last one taken: true when it was (one
     * statement, so two requests with the same code cannot both pass).
     */
    const takeTotpStep = Effect.fn("ConsoleStore.takeTotpStep")(function* (userId: string, step: number) {
      const taken = yield* sql`
        UPDATE console_users SET totp_last_step = ${step} WHERE id = ${userId} AND (totp_last_step IS NULL OR totp_last_step < ${step}) RETURNING id`
      return taken.length > 0
    })

    /** Stores a sealed TOTP seed and its first accepted step, unless one is enrolled: true when it was stored. */
    const enrollTotp = Effect.fn("ConsoleStore.enrollTotp")(function* (
      userId: string,
      sealedSecret: string,
      step: number
    ) {
      const enrolled =
        yield* sql`UPDATE console_users SET totp_secret = ${sealedSecret}, totp_last_step = ${step}, updated_at = now()
                                    WHERE id = ${userId} AND totp_secret IS NULL RETURNING id`
      return enrolled.length > 0
    })

    /** The merchant's users, not removed, oldest first. */
    const activeUsers = Effect.fn("ConsoleStore.activeUsers")(function* (merchantId: string) {
      return yield* sql`SELECT id, login_name, role, totp_secret IS NOT NULL AS totp, approver_from, invited_by, created_at
                               FROM console_users WHERE merchant_id = ${merchantId} AND removed_at IS NULL ORDER BY created_at`.pipe(
        Effect.flatMap(decodeAll(UserRow))
      )
    })

    /** One of the merchant's users, not removed, locked for the caller's transaction (a removal). */
    const lockActiveUser = Effect.fn("ConsoleStore.lockActiveUser")(function* (merchantId: string, userId: string) {
      return yield* sql`
          SELECT login_name, role FROM console_users WHERE id = ${userId} AND merchant_id = ${merchantId} AND removed_at IS NULL FOR UPDATE`.pipe(
        Effect.flatMap(decodeFirst(MemberRow))
      )
    })

    /** Removes a user and ends their sessions at once. */
    const removeUser = Effect.fn("ConsoleStore.removeUser")(function* (userId: string) {
      yield* sql`UPDATE console_users SET removed_at = now(), updated_at = now() WHERE id = ${userId}`
      yield* sql`UPDATE console_sessions SET ended_at = now() WHERE user_id = ${userId} AND ended_at IS NULL`
    })

    /** The merchant's user with this id (removed ones too: the decision says why it refuses them). */
    const findDecider = Effect.fn("ConsoleStore.findDecider")(function* (merchantId: string, userId: string) {
      return yield* sql`
            SELECT id, login_name, role, approver_from, removed_at FROM console_users WHERE merchant_id = ${merchantId} AND id = ${userId}`.pipe(
        Effect.flatMap(decodeFirst(DeciderRow))
      )
    })

    /** Whether a name is the login of one of the merchant's users (removed ones too). */
    const isMerchantLogin = Effect.fn("ConsoleStore.isMerchantLogin")(function* (
      merchantId: string,
      loginName: string
    ) {
      const found =
        yield* sql`SELECT 1 FROM console_users WHERE merchant_id = ${merchantId} AND login_name = ${loginName}`
      return found.length > 0
    })

    /** The TOTP seeds whose stored value is not like `pattern` (not sealed under the current key). */
    const totpSecretsNotLike = Effect.fn("ConsoleStore.totpSecretsNotLike")(function* (pattern: string) {
      return yield* sql`SELECT id, totp_secret AS secret FROM console_users WHERE totp_secret NOT LIKE ${pattern}`.pipe(
        Effect.flatMap(decodeAll(SecretRow))
      )
    })

    /** Replaces a user's stored TOTP seed, if it is still the one read. */
    const replaceTotpSecret = Effect.fn("ConsoleStore.replaceTotpSecret")(function* (
      userId: string,
      previous: string,
      next: string
    ) {
      yield* sql`UPDATE console_users SET totp_secret = ${next} WHERE id = ${userId} AND totp_secret = ${previous}`
    })

    // ---- sessions

    const openSession = Effect.fn("ConsoleStore.openSession")(function* (session: {
      readonly idHash: string
      readonly userId: string
      readonly csrfToken: string
      readonly expiresAt: Date
    }) {
      yield* sql`INSERT INTO console_sessions ${sql.insert({
        id_hash: session.idHash,
        user_id: session.userId,
        csrf_token: session.csrfToken,
        expires_at: session.expiresAt
      })}`
    })

    /**
     * The session of a cookie's hash if it is alive (not ended, not past its absolute expiry, seen within
     * `idleMinutes`, its user not removed), touched now.
     */
    const touchSession = Effect.fn("ConsoleStore.touchSession")(function* (idHash: string, idleMinutes: number) {
      return yield* sql`
        UPDATE console_sessions s SET last_seen_at = clock_timestamp()
        FROM console_users u
        WHERE s.id_hash = ${idHash} AND u.id = s.user_id AND u.removed_at IS NULL AND s.ended_at IS NULL AND s.expires_at > now()
          AND s.last_seen_at > now() - ${idleMinutes} * interval '1 minute'
        RETURNING s.user_id, u.merchant_id, u.login_name, u.role, s.csrf_token, u.totp_secret IS NOT NULL AS totp`.pipe(
        Effect.flatMap(decodeFirst(SessionRow))
      )
    })

    const endSession = Effect.fn("ConsoleStore.endSession")(function* (idHash: string) {
      yield* sql`UPDATE console_sessions SET ended_at = now() WHERE id_hash = ${idHash}`
    })

    // ---- the owner's setup links (made by the onboarding)

    const insertHandoff = Effect.fn("ConsoleStore.insertHandoff")(function* (handoff: {
      readonly id: string
      readonly merchantId: string
      readonly tokenHash: string
      readonly expiresAt: Date
    }) {
      yield* sql`
            INSERT INTO console_handoffs (id, merchant_id, token_hash, expires_at)
            VALUES (${handoff.id}, ${handoff.merchantId}, ${handoff.tokenHash}, ${handoff.expiresAt})`
    })

    /** The setup link of a token's hash (reads the merchant's name too); `lock`: for the caller's transaction. */
    const findHandoff = Effect.fn("ConsoleStore.findHandoff")(function* (tokenHash: string, lock: boolean) {
      return yield* sql`
          SELECT h.id, h.merchant_id, h.used_at IS NOT NULL AS used, h.expires_at <= now() AS expired, m.project_name
          FROM console_handoffs h JOIN merchants m ON m.id = h.merchant_id
          WHERE h.token_hash = ${tokenHash} ${lock ? sql`FOR UPDATE OF h` : sql``}`.pipe(
        Effect.flatMap(decodeFirst(HandoffRow))
      )
    })

    const markHandoffUsed = Effect.fn("ConsoleStore.markHandoffUsed")(function* (id: string) {
      yield* sql`UPDATE console_handoffs SET used_at = now() WHERE id = ${id}`
    })

    // ---- invites

    /** A new invite; its expiry as stored. */
    const insertInvite = Effect.fn("ConsoleStore.insertInvite")(function* (invite: {
      readonly id: string
      readonly merchantId: string
      readonly tokenHash: string
      readonly loginName: string
      readonly role: string
      readonly invitedBy: string
      readonly expiresAt: Date
    }) {
      const created = yield* sql`INSERT INTO console_invites ${sql.insert({
        id: invite.id,
        merchant_id: invite.merchantId,
        token_hash: invite.tokenHash,
        login_name: invite.loginName,
        role: invite.role,
        invited_by: invite.invitedBy,
        expires_at: invite.expiresAt
      })} RETURNING expires_at`.pipe(Effect.flatMap(decodeFirst(ExpiryRow)))
      return Option.map(created, (row) => row.expires_at)
    })

    /** The invite of a token's hash (reads the merchant's name too); `lock`: for the caller's transaction. */
    const findInvite = Effect.fn("ConsoleStore.findInvite")(function* (tokenHash: string, lock: boolean) {
      return yield* sql`
          SELECT i.id, i.merchant_id, i.login_name, i.role, i.invited_by, i.used_at IS NOT NULL AS used, i.expires_at <= now() AS expired, m.project_name
          FROM console_invites i JOIN merchants m ON m.id = i.merchant_id WHERE i.token_hash = ${tokenHash} ${lock ? sql`FOR UPDATE OF i` : sql``}`.pipe(
        Effect.flatMap(decodeFirst(InviteLinkRow))
      )
    })

    const markInviteUsed = Effect.fn("ConsoleStore.markInviteUsed")(function* (id: string) {
      yield* sql`UPDATE console_invites SET used_at = now() WHERE id = ${id}`
    })

    /** The merchant's invites not used and not expired, oldest first. */
    const openInvites = Effect.fn("ConsoleStore.openInvites")(function* (merchantId: string) {
      return yield* sql`SELECT id, login_name, role, invited_by, expires_at FROM console_invites
                                 WHERE merchant_id = ${merchantId} AND used_at IS NULL AND expires_at > now() ORDER BY created_at`.pipe(
        Effect.flatMap(decodeAll(InviteRow))
      )
    })

    // ---- sign-in failures

    /** The failures within `window` (an interval, e.g. "15 minutes") the throttle counts. */
    const failureCounts = Effect.fn("ConsoleStore.failureCounts")(function* (
      loginName: string,
      address: string,
      window: string
    ) {
      return yield* sql`
        SELECT (SELECT count(*)::int FROM console_login_failures WHERE address = ${address} AND at > now() - ${window}::interval) AS by_address,
               (SELECT count(*)::int FROM console_login_failures WHERE login_name = ${loginName} AND address = ${address} AND at > now() - ${window}::interval) AS by_pair,
               (SELECT count(*)::int FROM console_login_failures WHERE login_name = ${loginName} AND at > now() - ${window}::interval) AS by_name,
               (SELECT extract(epoch FROM clock_timestamp() - max(at))::float8 FROM console_login_failures WHERE login_name = ${loginName} AND at > now() - ${window}::interval) AS since_last`.pipe(
        Effect.flatMap(decodeFirst(FailureCountsRow))
      )
    })

    const recordFailure = Effect.fn("ConsoleStore.recordFailure")(function* (
      loginName: string,
      address: string,
      kind: "login" | "reconfirm"
    ) {
      yield* sql`INSERT INTO console_login_failures (login_name, address, kind) VALUES (${loginName}, ${address}, ${kind})`
    })

    return {
      loginNameTaken,
      loginNameTakenOrInvited,
      insertUser,
      findSignIn,
      findCredentials,
      takeTotpStep,
      enrollTotp,
      activeUsers,
      lockActiveUser,
      removeUser,
      findDecider,
      isMerchantLogin,
      totpSecretsNotLike,
      replaceTotpSecret,
      openSession,
      touchSession,
      endSession,
      insertHandoff,
      findHandoff,
      markHandoffUsed,
      insertInvite,
      findInvite,
      markInviteUsed,
      openInvites,
      failureCounts,
      recordFailure
    } as const
  })
}) {}
