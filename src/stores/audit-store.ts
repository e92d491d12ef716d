import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeAll } from "./rows.js"

/** One act in the log, as the console lists and exports it. */
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

/**
 * Every statement on `audit_log`, the append-only log of security acts (the database refuses UPDATE, DELETE
 * and TRUNCATE on it): an entry is appended in the caller's transaction, the one of the act it records.
 */
export class AuditStore extends Effect.Service<AuditStore>()("facet/AuditStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const append = Effect.fn("AuditStore.append")(function* (entry: {
      readonly merchantId: string | null
      readonly actorKind: string
      readonly actor: string
      readonly fromAddress: string
      readonly userAgent: string
      readonly action: string
      readonly subject: string
      readonly detail: string
    }) {
      yield* sql`INSERT INTO audit_log ${sql.insert({
        merchant_id: entry.merchantId,
        actor_kind: entry.actorKind,
        actor: entry.actor,
        from_address: entry.fromAddress,
        user_agent: entry.userAgent,
        action: entry.action,
        subject: entry.subject,
        detail: entry.detail
      })}`
    })

    /** A merchant's entries matching the filter, newest first. */
    const list = Effect.fn("AuditStore.list")(function* (merchantId: string, filter: AuditFilter) {
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
        Effect.flatMap(decodeAll(AuditRow))
      )
    })

    /** Whether a login name has logged in to the console from this address before. */
    const loggedInFrom = Effect.fn("AuditStore.loggedInFrom")(function* (loginName: string, address: string) {
      const found =
        yield* sql`SELECT 1 FROM audit_log WHERE action = 'console.login' AND actor = ${loginName} AND from_address = ${address} LIMIT 1`
      return found.length > 0
    })

    return { append, list, loggedInFrom } as const
  })
}) {}
