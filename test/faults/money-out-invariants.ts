import { SqlClient } from "@effect/sql"
import { type Either, Effect } from "effect"
import type { Chain } from "../../src/domain/chain.js"
import { MoneyDecimal, toBaseUnits } from "../../src/money.js"
import type { Violation } from "./invariants.js"

/** A withdrawal the money-out campaign placed, to a fresh address nobody else pays. */
export interface Placed {
  readonly id: string
  readonly chain: Chain
  readonly currency: string
  readonly to: string
  /** Placed above the per-withdrawal limit set while it was pending: its approval must be refused. */
  readonly forbidden: boolean
}

/** What the chains and reconciliation say, read past every proxy (the devnets' own answers). */
export interface MoneyOutEvidence<E, R> {
  readonly merchantId: string
  readonly placed: ReadonlyArray<Placed>
  /** What an address holds on chain, in base units. */
  readonly held: (
    chain: Chain,
    address: string,
    currency: string
  ) => Effect.Effect<Either.Either<bigint, unknown>, never, R>
  /** Reconciliation's differences on every chain (ledger against chain for each address the service controls). */
  readonly differences: Effect.Effect<
    ReadonlyArray<{
      readonly chain: string
      readonly address: string
      readonly currency: string
      readonly on_chain: string
      readonly explained: string
    }>,
    E,
    R
  >
}

/**
 * The money-out promises, checked once the nodes have healed: every approved withdrawal ended; at most
 * one landed transfer per operation; every payee holds exactly what its COMPLETED withdrawal sent; no
 * withdrawal completed that the tightened policy forbade; no quorum met by fewer distinct people than it
 * asks (at most one of them the operator); `locked` equals the open withdrawals and is never negative;
 * the ledger equals the chain. Also says how the withdrawals ended ("3 COMPLETED, 1 PENDING").
 */
export const moneyOutViolations = <E, R>(evidence: MoneyOutEvidence<E, R>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { merchantId, placed } = evidence
    const violations: Array<Violation> = []
    const stuck = yield* sql<{
      id: string
      status: string
    }>`SELECT id, status FROM withdrawals WHERE merchant_id = ${merchantId} AND status IN ('APPROVED', 'BROADCAST')`
    for (const s of stuck)
      violations.push({
        invariant: "every approved withdrawal ends once the nodes heal",
        detail: `${s.id} is still ${s.status}`
      })
    const doubled = yield* sql<{ operation_id: string; n: number }>`
      SELECT operation_id, count(*)::int AS n FROM custody_transactions WHERE status IN ('included', 'final') GROUP BY operation_id HAVING count(*) > 1`
    for (const d of doubled)
      violations.push({ invariant: "at most one landed transfer per operation", detail: `${d.operation_id}: ${d.n}` })
    const rows = yield* sql<{ id: string; status: string; net_amount: string; decimals: number }>`
      SELECT w.id, w.status, trim_scale(w.net_amount)::text AS net_amount, a.decimals
      FROM withdrawals w JOIN wallet_asset_policies a ON a.chain = w.chain AND a.currency = w.currency WHERE w.merchant_id = ${merchantId}`
    for (const w of placed) {
      const row = rows.find((r) => r.id === w.id)
      if (row === undefined) continue
      const held = yield* evidence.held(w.chain, w.to, w.currency)
      const expected = row.status === "COMPLETED" ? toBaseUnits(row.net_amount, row.decimals) : 0n
      if (held._tag === "Right" && held.right !== expected) {
        violations.push({
          invariant: "every payee holds exactly what its COMPLETED withdrawal sent",
          detail: `${w.id} (${row.status}) to ${w.to}: ${held.right} on chain, ${expected} expected`
        })
      }
      if (w.forbidden && row.status === "COMPLETED") {
        violations.push({
          invariant: "no withdrawal completes that the policy in force at its approval forbade",
          detail: `${w.id} was above the tightened limit`
        })
      }
    }
    const quorums = yield* sql<{ id: string; status: string; users: number; others: number }>`
      SELECT w.id, w.status, count(DISTINCT a.user_id)::int AS users, (count(*) FILTER (WHERE a.withdrawal_id IS NOT NULL AND a.user_id IS NULL))::int AS others
      FROM withdrawals w LEFT JOIN withdrawal_approvals a ON a.withdrawal_id = w.id
      WHERE w.merchant_id = ${merchantId} AND w.decided_by IS NOT NULL AND w.status NOT IN ('REJECTED', 'CANCELLED') GROUP BY w.id, w.status`
    for (const q of quorums) {
      if (q.users + Math.min(q.others, 1) < 2 || q.others > 1) {
        violations.push({
          invariant: "no quorum met by fewer distinct people than it asks",
          detail: `${q.id} (${q.status}): ${q.users} console users, ${q.others} others`
        })
      }
    }
    const locks = yield* sql<{ chain: string; currency: string; locked: string; open: string }>`
      SELECT b.chain, b.currency, trim_scale(b.locked)::text AS locked,
             trim_scale(coalesce((SELECT sum(amount) FROM withdrawals w WHERE w.merchant_id = b.merchant_id AND w.chain = b.chain AND w.currency = b.currency
                                  AND w.status IN ('PENDING', 'APPROVED', 'BROADCAST')), 0)
                        + coalesce((SELECT sum(amount) FROM refunds r WHERE r.merchant_id = b.merchant_id AND r.chain = b.chain AND r.currency = b.currency
                                  AND r.status = 'PENDING_CLAIM'), 0))::text AS open
      FROM merchant_balances b WHERE b.merchant_id = ${merchantId}`
    for (const l of locks) {
      if (!new MoneyDecimal(l.locked).eq(l.open) || new MoneyDecimal(l.locked).isNegative()) {
        violations.push({
          invariant: "locked equals the open withdrawals and unclaimed refunds, and is never negative",
          detail: `${l.chain}-${l.currency}: locked ${l.locked}, open ${l.open}`
        })
      }
    }
    // a refund ends with its withdrawal, and no order is refunded beyond what it was paid in the asset
    const refunds = yield* sql<{ id: string; status: string; withdrawal_status: string | null; over: boolean }>`
      SELECT r.id, r.status, w.status AS withdrawal_status,
             (SELECT sum(x.amount) FROM refunds x WHERE x.order_id = r.order_id AND x.chain = r.chain AND x.currency = r.currency
                AND x.status NOT IN ('CANCELLED', 'EXPIRED', 'FAILED'))
               > (SELECT coalesce(sum(t.amount), 0) FROM transactions t WHERE t.order_id = r.order_id AND t.chain = r.chain
                    AND t.currency = r.currency AND t.type = 'deposit' AND t.status = 'confirmed') AS over
      FROM refunds r LEFT JOIN withdrawals w ON w.id = r.withdrawal_id WHERE r.merchant_id = ${merchantId}`
    for (const r of refunds) {
      const expected =
        r.withdrawal_status === null
          ? ["PENDING_CLAIM", "CANCELLED", "EXPIRED"]
          : r.withdrawal_status === "COMPLETED"
            ? ["COMPLETED"]
            : ["REJECTED", "CANCELLED", "FAILED"].includes(r.withdrawal_status)
              ? ["FAILED"]
              : ["CLAIMED"]
      if (!expected.includes(r.status))
        violations.push({
          invariant: "a refund ends with its withdrawal",
          detail: `${r.id} is ${r.status}, its withdrawal ${r.withdrawal_status ?? "none"}`
        })
      if (r.over) violations.push({ invariant: "no order refunded beyond what was paid in the asset", detail: r.id })
    }
    for (const d of yield* evidence.differences) {
      violations.push({
        invariant: "ledger equals chain for every address custody touched",
        detail: `${d.chain} ${d.address} ${d.currency}: chain ${d.on_chain}, ledger ${d.explained}`
      })
    }
    const outcomes = new Map<string, number>()
    for (const r of rows) outcomes.set(r.status, (outcomes.get(r.status) ?? 0) + 1)
    return { violations, outcomes: [...outcomes].map(([status, n]) => `${n} ${status}`).join(", ") }
  })
