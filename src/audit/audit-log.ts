import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

/** Who did a security act: a console user (login), an API key (its id), an operator (name@host), or the service. */
export interface AuditActor {
  readonly kind: "console_user" | "api_key" | "operator" | "service"
  readonly name: string
  /** Where from: a client address, `cli@host`, or empty. */
  readonly from?: string | undefined
  readonly userAgent?: string | undefined
}

/** The service acting on its own (a pending policy change coming due, an expiry). */
export const SERVICE_ACTOR: AuditActor = { kind: "service", name: "facet" }

export const AuditAction = Schema.Literal(
  "console.login",
  "console.login_failed",
  "console.reconfirm_failed",
  "api_key.created",
  "api_key.revoked",
  "webhook_secret.rotated",
  "totp.enabled",
  "user.invited",
  "user.joined",
  "user.removed",
  "address.added",
  "address.removed",
  "policy.changed",
  "policy.change_applied",
  "policy.change_cancelled",
  "withdrawal.created",
  "withdrawal.approved",
  "withdrawal.rejected",
  "withdrawal.cancelled"
)
export type AuditAction = typeof AuditAction.Type

const AuditRow = Schema.Struct({
  id: Schema.String,
  at: Schema.DateFromSelf,
  actor_kind: Schema.String,
  actor: Schema.String,
  from_address: Schema.String,
  user_agent: Schema.String,
  action: Schema.String,
  subject: Schema.String,
  detail: Schema.String
})
export type AuditRow = typeof AuditRow.Type
const decodeRows = Schema.decodeUnknown(Schema.Array(AuditRow))

export interface AuditFilter {
  readonly action?: string | undefined
  /** A part of the actor's name (case-insensitive). */
  readonly actor?: string | undefined
  readonly since?: Date | undefined
  readonly until?: Date | undefined
  /** Rows older than this id (the next page). */
  readonly before?: string | undefined
  readonly limit: number
}

const CSV_COLUMNS = [
  "id",
  "at",
  "actor_kind",
  "actor",
  "from_address",
  "user_agent",
  "action",
  "subject",
  "detail"
] as const

/** One CSV field: quoted when needed; a leading = + - @ is defused so a spreadsheet never runs it as a formula. */
const csvField = (value: string) => {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

/**
 * The append-only log of security acts (the database refuses UPDATE, DELETE and TRUNCATE on it). Written
 * in the transaction of the act it records, so an act and its record commit or vanish together.
 */
export class AuditLog extends Effect.Service<AuditLog>()("facet/AuditLog", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const record = (merchantId: string | null, actor: AuditActor, action: AuditAction, subject = "", detail = "") =>
      sql`INSERT INTO audit_log ${sql.insert({
        merchant_id: merchantId,
        actor_kind: actor.kind,
        actor: actor.name.slice(0, 200),
        from_address: (actor.from ?? "").slice(0, 200),
        user_agent: (actor.userAgent ?? "").slice(0, 300),
        action,
        subject,
        detail
      })}`.pipe(Effect.asVoid, Effect.orDie)

    const list = Effect.fn("AuditLog.list")(function* (merchantId: string, filter: AuditFilter) {
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        ...(filter.action === undefined || filter.action === "" ? [] : [sql`action = ${filter.action}`]),
        ...(filter.actor === undefined || filter.actor === ""
          ? []
          : [sql`actor ILIKE ${`%${filter.actor.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`]),
        ...(filter.since === undefined ? [] : [sql`at >= ${filter.since}`]),
        ...(filter.until === undefined ? [] : [sql`at < ${filter.until}`]),
        ...(filter.before === undefined || !/^\d+$/.test(filter.before) ? [] : [sql`id < ${filter.before}`])
      ])
      return yield* sql`SELECT id::text AS id, at, actor_kind, actor, from_address, user_agent, action, subject, detail
                        FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT ${filter.limit}`.pipe(
        Effect.flatMap(decodeRows),
        Effect.orDie
      )
    })

    const csv = (rows: ReadonlyArray<AuditRow>) =>
      [
        CSV_COLUMNS.join(","),
        ...rows.map((row) => CSV_COLUMNS.map((c) => csvField(c === "at" ? row.at.toISOString() : row[c])).join(","))
      ].join("\r\n") + "\r\n"

    return { record, list, csv } as const
  })
}) {}
