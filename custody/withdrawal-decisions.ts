import { SqlClient } from "@effect/sql"
import { Config, Effect, Option } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { ConflictError, NotFoundError } from "../src/domain/errors.js"
import { newId } from "../src/ids.js"
import { Ledger } from "../src/ledger/ledger.js"
import { toBaseUnits } from "../src/money.js"
import { Wallets } from "../src/wallets/wallets.js"
import { assetDecimals, WithdrawalStore } from "./withdrawal-store.js"

/** Who decided, for the record: a console user or an operator, and from where. */
export interface Decider {
  readonly by: string
  readonly from: string
  readonly reason?: string | undefined
}

/**
 * The human decision on a PENDING withdrawal (the console, or the operator CLI; never the API), and the
 * expiry of undecided ones. Approval stores the custody operation that sends it from the main wallet; the
 * service's resume pass hands it to that wallet's actor within seconds (from any process: the CLI too).
 * Rejection and cancellation unlock the funds in the same transaction as the status change.
 */
export class WithdrawalDecisions extends Effect.Service<WithdrawalDecisions>()("facet/WithdrawalDecisions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const catalog = yield* AssetCatalog
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const { find, render, unlock } = yield* WithdrawalStore
    const settings = yield* Config.all({
      pendingHours: Config.number("FACET_WITHDRAWAL_PENDING_HOURS").pipe(Config.withDefault(72))
    }).pipe(Effect.orDie)

    /**
     * A human decision on a PENDING withdrawal (the console, or the operator CLI; never the API):
     * approve hands it to the main wallet's actor; reject and cancel unlock the funds in the same
     * transaction as the status change.
     */
    const decide = Effect.fn("Withdrawals.decide")(function*(id: string, decision: "APPROVED" | "REJECTED" | "CANCELLED", decider: Decider, merchantId?: string) {
      const approved = yield* sql.withTransaction(Effect.gen(function*() {
        const row = yield* find({ id, merchantId, lock: true })
        if (Option.isNone(row)) return yield* new NotFoundError({ error: `withdrawal ${id} not found` })
        if (row.value.status !== "PENDING") return yield* new ConflictError({ error: `withdrawal ${id} is ${row.value.status}: only a PENDING withdrawal can be ${decision.toLowerCase()}` })
        yield* sql`UPDATE withdrawals SET status = ${decision}, decided_by = ${decider.by}, decided_at = clock_timestamp(), decided_from = ${decider.from},
                     decision_reason = ${decider.reason ?? null}, updated_at = clock_timestamp(),
                     finished_at = ${decision === "APPROVED" ? null : sql`clock_timestamp()`}
                   WHERE id = ${id}`
        const decimals = yield* assetDecimals(catalog, row.value)
        if (decision !== "APPROVED") {
          yield* ledger.post([unlock(row.value, toBaseUnits(row.value.amount, decimals), decision === "REJECTED" ? "withdrawal_rejected" : "withdrawal_cancelled")])
          return Option.none<{ readonly operationId: string; readonly walletId: string }>()
        }
        const main = yield* wallets.mainWallet(row.value.merchant_id, row.value.chain)
        const operationId = newId("op")
        yield* sql`INSERT INTO custody_operations ${sql.insert({
          id: operationId, type: "withdrawal",
          status: row.value.network_fee_included || row.value.chain === "SOLANA" ? "SWEEPING" : "GAS_FUNDING",
          merchant_id: row.value.merchant_id, chain: row.value.chain, currency: row.value.currency,
          wallet_id: main.id, from_address: main.address, to_wallet_id: main.id, to_address: row.value.to_address,
          amount: toBaseUnits(row.value.net_amount, decimals).toString(), withdrawal_id: id, waiting_for: "the main wallet's actor"
        })}`
        yield* sql`UPDATE withdrawals SET operation_id = ${operationId} WHERE id = ${id}`
        return Option.some({ operationId, walletId: main.id })
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      yield* Effect.logInfo(`withdrawal ${id} ${decision} by ${decider.by} from ${decider.from}${decider.reason === undefined ? "" : ` (${decider.reason})`}${Option.isSome(approved) ? `; operation ${approved.value.operationId}` : ""}`)
      const row = yield* find({ id })
      return yield* Option.match(row, { onNone: () => Effect.dieMessage(`withdrawal ${id} vanished`), onSome: (r) => Effect.succeed(render(r)) })
    })

    /** PENDING withdrawals nobody decided within FACET_WITHDRAWAL_PENDING_HOURS (72) → CANCELLED, unlocked. */
    const expire = Effect.fn("Withdrawals.expire")(function*() {
      const due = yield* Effect.orDie(sql<{ id: string }>`
        SELECT id FROM withdrawals WHERE status = 'PENDING' AND created_at < clock_timestamp() - ${settings.pendingHours} * interval '1 hour' LIMIT 100`)
      for (const { id } of due) {
        yield* decide(id, "CANCELLED", { by: "expiry", from: "service", reason: `undecided for ${settings.pendingHours} h` }).pipe(
          Effect.catchTags({ Conflict: () => Effect.void, NotFound: () => Effect.void })
        )
      }
      return due.length
    })

    /** Sets (or, with none, switches off) a merchant's daily auto-approval limit for one asset. */
    const setAutoApproval = Effect.fn("WithdrawalDecisions.setAutoApproval")(function*(
      merchantId: string, chain: string, currency: string, dailyLimit: Option.Option<string>, decider: Decider
    ) {
      const updated = yield* Effect.orDie(sql<{ merchant_id: string }>`
        UPDATE merchant_assets SET auto_approve_daily_limit = ${Option.getOrNull(dailyLimit)}
        WHERE merchant_id = ${merchantId} AND chain = ${chain} AND currency = ${currency} RETURNING merchant_id`)
      if (updated.length === 0) return yield* new NotFoundError({ error: `merchant ${merchantId} has no asset ${chain}-${currency} enrolled` })
      yield* Effect.logInfo(`auto-approval of ${chain}-${currency} withdrawals for ${merchantId}: ${Option.getOrElse(dailyLimit, () => "off")} (set by ${decider.by} from ${decider.from})`)
    })

    return { decide, expire, setAutoApproval } as const
  })
}) {}
