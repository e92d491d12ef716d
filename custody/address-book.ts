import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Schema } from "effect"
import { AuditLog, type AuditActor } from "../src/audit/audit-log.js"
import { Chain } from "../src/domain/chain.js"
import { BadRequestError, ConflictError, NotFoundError } from "../src/domain/errors.js"
import type { WithdrawalAddress, WithdrawalAddressList } from "../src/domain/withdrawal-address.js"
import { newId } from "../src/ids.js"
import { PolicyClock } from "../src/policy-clock.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { addressKey, destinationProblem } from "./destination-address.js"
import { formatDuration, WithdrawalPolicy } from "./withdrawal-policy.js"

const EntryRow = Schema.Struct({
  id: Schema.String,
  chain: Chain,
  address: Schema.String,
  label: Schema.String,
  created_by: Schema.String,
  created_at: Schema.DateFromSelf,
  usable_from: Schema.DateFromSelf
})
const decodeEntries = Schema.decodeUnknown(Schema.Array(EntryRow))
const iso = (date: Date) => DateTime.formatIso(DateTime.unsafeFromDate(date))

/**
 * The withdrawal address book: entries added by a human (console, password re-entered) or the operator,
 * usable after the cooling-off in force when added; removal is immediate. Enforced by
 * `WithdrawalPolicy.admit` when the policy's address book is on.
 */
export class AddressBook extends Effect.Service<AddressBook>()("facet/AddressBook", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* PolicyClock
    const audit = yield* AuditLog
    const policy = yield* WithdrawalPolicy
    const walletStore = yield* WalletStore

    const add = Effect.fn("AddressBook.add")(function* (
      merchantId: string,
      entry: { readonly chain: string; readonly address: string; readonly label: string },
      actor: AuditActor
    ) {
      const chain = yield* Schema.decodeUnknown(Chain)(entry.chain).pipe(
        Effect.mapError(() => new BadRequestError({ error: `unknown chain ${entry.chain}: TRC20, BEP20 or SOLANA` }))
      )
      const address = entry.address.trim()
      const problem = yield* destinationProblem(walletStore, chain, address)
      if (problem !== undefined) return yield* new BadRequestError({ error: problem })
      const label = entry.label.trim()
      if (label.length > 100) return yield* new BadRequestError({ error: "a label is at most 100 characters" })
      const now = yield* clock.now
      const { coolingOffSeconds } = yield* policy.effective(merchantId)
      const usableFrom = new Date(now.getTime() + coolingOffSeconds * 1000)
      const id = newId("wad")
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const inserted = yield* sql<{ id: string }>`
          INSERT INTO withdrawal_addresses ${sql.insert({
            id,
            merchant_id: merchantId,
            chain,
            address,
            address_key: addressKey(chain, address),
            label,
            created_by: actor.name,
            created_at: now,
            usable_from: usableFrom
          })} ON CONFLICT (merchant_id, chain, address_key) WHERE removed_at IS NULL DO NOTHING RETURNING id`
            if (inserted.length === 0)
              return yield* new ConflictError({ error: `${address} is already in the address book on ${chain}` })
            yield* audit.record(
              merchantId,
              actor,
              "address.added",
              id,
              `${chain} ${address}${label === "" ? "" : ` "${label}"`}, usable from ${usableFrom.toISOString()} (cooling-off ${formatDuration(coolingOffSeconds)})`
            )
            yield* Effect.logInfo(
              `address book of ${merchantId}: ${actor.name} added ${chain} ${address}, usable from ${usableFrom.toISOString()}`
            )
            const shown: WithdrawalAddress = {
              id,
              chain,
              address,
              label,
              status: coolingOffSeconds === 0 ? "usable" : "pending",
              usable_from: iso(usableFrom),
              created_at: iso(now),
              created_by: actor.name
            }
            return shown
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    /** Removal is at once; removing an entry still cooling off cancels it. */
    const remove = Effect.fn("AddressBook.remove")(function* (merchantId: string, id: string, actor: AuditActor) {
      const now = yield* clock.now
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const [removed] = yield* sql<{ chain: string; address: string; usable_from: Date }>`
          UPDATE withdrawal_addresses SET removed_at = ${now}, removed_by = ${actor.name}
          WHERE id = ${id} AND merchant_id = ${merchantId} AND removed_at IS NULL RETURNING chain, address, usable_from`
            if (removed === undefined) return yield* new NotFoundError({ error: `no address book entry ${id}` })
            yield* audit.record(
              merchantId,
              actor,
              "address.removed",
              id,
              `${removed.chain} ${removed.address}${removed.usable_from > now ? " (cancelled during its cooling-off)" : ""}`
            )
            yield* Effect.logInfo(
              `address book of ${merchantId}: ${actor.name} removed ${removed.chain} ${removed.address}`
            )
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    /** The live entries (pending and usable), newest first. */
    const list = Effect.fn("AddressBook.list")(function* (
      merchantId: string,
      query: { readonly chain?: Chain | undefined; readonly limit: number; readonly offset: number }
    ) {
      const now = yield* clock.now
      const current = yield* policy.effective(merchantId)
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        sql`removed_at IS NULL`,
        ...(query.chain === undefined ? [] : [sql`chain = ${query.chain}`])
      ])
      const [count] = yield* Effect.orDie(
        sql<{ n: number }>`SELECT count(*)::int AS n FROM withdrawal_addresses WHERE ${where}`
      )
      const rows =
        yield* sql`SELECT id, chain, address, label, created_by, created_at, usable_from FROM withdrawal_addresses WHERE ${where}
                              ORDER BY created_at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}`.pipe(
          Effect.flatMap(decodeEntries),
          Effect.orDie
        )
      const listed: WithdrawalAddressList = {
        address_book: current.addressBook ? "on" : "off",
        cooling_off_seconds: current.coolingOffSeconds,
        total: count?.n ?? 0,
        limit: query.limit,
        offset: query.offset,
        items: rows.map((row) => ({
          id: row.id,
          chain: row.chain,
          address: row.address,
          label: row.label,
          status: row.usable_from > now ? "pending" : "usable",
          usable_from: iso(row.usable_from),
          created_at: iso(row.created_at),
          created_by: row.created_by
        }))
      }
      return listed
    })

    /** The live entry for an address, if any (the operator CLI removes by address). */
    const entryFor = Effect.fn("AddressBook.entryFor")(function* (merchantId: string, chain: Chain, address: string) {
      const rows = yield* Effect.orDie(sql<{ id: string }>`
        SELECT id FROM withdrawal_addresses WHERE merchant_id = ${merchantId} AND chain = ${chain} AND address_key = ${addressKey(chain, address)} AND removed_at IS NULL`)
      return rows[0]?.id
    })

    return { add, remove, list, entryFor } as const
  })
}) {}
