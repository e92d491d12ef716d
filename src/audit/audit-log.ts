import { Effect, Schema } from "effect"
import { type AuditFilter, type AuditRow, AuditStore } from "../stores/audit-store.js"

export type { AuditFilter, AuditRow } from "../stores/audit-store.js"

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
  "withdrawal.cancelled",
  "payment_link.created",
  "payment_link.deactivated",
  "withdrawal_batch.created",
  "withdrawal_batch.approved",
  "withdrawal_batch.rejected",
  "withdrawal_batch.cancelled",
  "refund.created",
  "refund.claimed",
  "refund.cancelled",
  "refund.expired",
  "refund.link_reissued"
)
export type AuditAction = typeof AuditAction.Type

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
 * The append-only log of security acts (AuditStore owns the table; the database refuses UPDATE, DELETE and
 * TRUNCATE on it). Written in the transaction of the act it records, so an act and its record commit or
 * vanish together.
 */
export class AuditLog extends Effect.Service<AuditLog>()("facet/AuditLog", {
  effect: Effect.gen(function* () {
    const store = yield* AuditStore

    const record = (merchantId: string | null, actor: AuditActor, action: AuditAction, subject = "", detail = "") =>
      store
        .append({
          merchantId,
          actorKind: actor.kind,
          actor: actor.name.slice(0, 200),
          fromAddress: (actor.from ?? "").slice(0, 200),
          userAgent: (actor.userAgent ?? "").slice(0, 300),
          action,
          subject,
          detail
        })
        .pipe(Effect.orDie)

    const list = Effect.fn("AuditLog.list")(function* (merchantId: string, filter: AuditFilter) {
      return yield* Effect.orDie(store.list(merchantId, filter))
    })

    const csv = (rows: ReadonlyArray<AuditRow>) =>
      [
        CSV_COLUMNS.join(","),
        ...rows.map((row) => CSV_COLUMNS.map((c) => csvField(c === "at" ? row.at.toISOString() : row[c])).join(","))
      ].join("\r\n") + "\r\n"

    return { record, list, csv } as const
  }),
  dependencies: [AuditStore.Default]
}) {}
