import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Option, Schema } from "effect"
import { AuditLog, type AuditActor } from "../src/audit/audit-log.js"
import { Chain } from "../src/domain/chain.js"
import type { WithdrawalAddress, WithdrawalAddressList } from "../src/domain/withdrawal-address.js"
import { newId } from "../src/ids.js"
import { PolicyClock } from "../src/policy-clock.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { WithdrawalStore } from "../src/stores/withdrawal-store.js"
import { addressKey, destinationProblem } from "./destination-address.js"
import { formatDuration, WithdrawalPolicy } from "./withdrawal-policy.js"
import { AddressAlreadyInBook, AddressBookEntryNotFound, InvalidAddressBookEntry } from "./address-book-errors.js"

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
    const withdrawals = yield* WithdrawalStore

    const add = Effect.fn("AddressBook.add")(function* (
      merchantId: string,
      entry: { readonly chain: string; readonly address: string; readonly label: string },
      actor: AuditActor
    ) {
      const chain = yield* Schema.decodeUnknown(Chain)(entry.chain).pipe(
        Effect.mapError(
          () => new InvalidAddressBookEntry({ reason: `unknown chain ${entry.chain}: TRC20, BEP20 or SOLANA` })
        )
      )
      const address = entry.address.trim()
      const problem = yield* destinationProblem(walletStore, chain, address)
      if (problem !== undefined) return yield* new InvalidAddressBookEntry({ reason: problem })
      const label = entry.label.trim()
      if (label.length > 100) return yield* new InvalidAddressBookEntry({ reason: "a label is at most 100 characters" })
      const now = yield* clock.now
      const { coolingOffSeconds } = yield* policy.effective(merchantId)
      const usableFrom = new Date(now.getTime() + coolingOffSeconds * 1000)
      const id = newId("wad")
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const inserted = yield* withdrawals.insertAddress({
              id,
              merchant_id: merchantId,
              chain,
              address,
              address_key: addressKey(chain, address),
              label,
              created_by: actor.name,
              created_at: now,
              usable_from: usableFrom
            })
            if (!inserted) return yield* new AddressAlreadyInBook({ chain, address })
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
            const found = yield* withdrawals.removeAddress(merchantId, id, now, actor.name)
            if (Option.isNone(found)) return yield* new AddressBookEntryNotFound({ entryId: id })
            const removed = found.value
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
      const { total, rows } = yield* withdrawals.addressPage(merchantId, query)
      const listed: WithdrawalAddressList = {
        address_book: current.addressBook ? "on" : "off",
        cooling_off_seconds: current.coolingOffSeconds,
        total,
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
      return Option.getOrUndefined(yield* withdrawals.addressEntryId(merchantId, chain, addressKey(chain, address)))
    })

    return { add, remove, list, entryFor } as const
  }),
  dependencies: [WalletStore.Default, WithdrawalStore.Default, AuditLog.Default, WithdrawalPolicy.Default]
}) {}
