import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { ChainClient } from "../../src/chains/chain-client.js"
import { isAlive } from "../../src/processes/child-process.js"
import { toBaseUnits } from "../../src/money.js"
import { signBody } from "../../src/webhooks/signature.js"
import { ledgerIntegrity } from "../ledger-integrity.js"
import type { ReceivedRequest } from "../webhook-receiver.js"

/** A payment the workload made on a devnet to one of our addresses. */
export interface ExpectedDeposit {
  readonly chain: string
  readonly txHash: string
  readonly to: string
  /** Decimal, as paid. */
  readonly amount: string
}

export interface InvariantInput {
  readonly expected: ReadonlyArray<ExpectedDeposit>
  /** The chains read directly (no fault proxy): what is really on chain. */
  readonly chains: ReadonlyArray<ChainClient>
  /** Webhooks: what the live receiver got, and each merchant's signing secret. */
  readonly webhooks?: {
    readonly received: ReadonlyArray<ReceivedRequest>
    readonly secrets: ReadonlyMap<string, string>
    readonly destination: string
  }
  /**
   * Addresses outside the service that only its withdrawals pay (fresh for the run): each must hold on
   * chain exactly what its COMPLETED withdrawals sent it, no more (a payout sent twice) and no less.
   */
  readonly payees?: ReadonlyArray<{
    readonly chain: string
    readonly currency: string
    readonly address: string
    readonly decimals: number
  }>
  /** Processes the service started, which must be gone once it is. */
  readonly pidsGone?: ReadonlyArray<{ readonly what: string; readonly pid: number }>
}

/** One broken promise, said plainly. */
export interface Violation {
  readonly invariant: string
  readonly detail: string
}

const header = (request: ReceivedRequest, name: string) => {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * The promises every fault scenario must keep, checked against the database and the chains themselves:
 * every payment to our addresses credited exactly once and for its amount; no credit the chain does not
 * hold; the ledger balanced with its projection; no order PAID without payments; no outgoing transfer on
 * chain twice; every event delivered with its exact bytes and signature; no process left behind.
 */
export const checkInvariants = (input: InvariantInput) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const violations: Array<Violation> = []
    const add = (invariant: string, detail: string) => violations.push({ invariant, detail })

    // 1. credited exactly once, for what was paid
    for (const payment of input.expected) {
      const rows = yield* sql<{ amount: string; status: string }>`
        SELECT trim_scale(amount)::text AS amount, status FROM transactions
        WHERE chain = ${payment.chain} AND tx_hash = ${payment.txHash} AND to_address = ${payment.to} AND type = 'deposit'`
      const confirmed = rows.filter((r) => r.status === "confirmed")
      if (confirmed.length !== 1)
        add(
          "credited exactly once",
          `${payment.chain} ${payment.txHash} to ${payment.to}: ${confirmed.length} confirmed rows (${rows.map((r) => r.status).join(", ") || "none"})`
        )
      else if (confirmed[0]?.amount !== payment.amount.replace(/\.?0+$/, ""))
        add("credited exactly once", `${payment.txHash}: credited ${confirmed[0]?.amount}, paid ${payment.amount}`)
    }

    // 2. every confirmed deposit is on the chain (nothing credited from a fork the indexer left)
    const credited = yield* sql<{ chain: string; tx_hash: string }>`
      SELECT DISTINCT chain, tx_hash FROM transactions WHERE type = 'deposit' AND status = 'confirmed'`
    for (const row of credited) {
      const client = input.chains.find((c) => c.chain === row.chain)
      if (client === undefined) continue
      const onChain = yield* Effect.either(client.transaction(row.tx_hash))
      if (onChain._tag === "Left")
        add("every credit is on chain", `${row.chain} ${row.tx_hash}: cannot look it up (${onChain.left.message})`)
      else if (Option.isNone(onChain.right) || onChain.right.value.status !== "success") {
        add(
          "every credit is on chain",
          `${row.chain} ${row.tx_hash} is credited but not a successful transaction on chain`
        )
      }
    }

    // 3. the ledger: every balance projection equals the sums of its transfers, nothing dangling
    const ledger = yield* ledgerIntegrity
    if (ledger !== undefined && (ledger.dangling > 0 || ledger.projection_off > 0)) {
      add(
        "ledger balanced",
        `${ledger.projection_off} balance projections differ from their transfers; ${ledger.dangling} transactions without their wallet`
      )
    }

    // 4. no order PAID without confirmed payments covering it (in the order's units)
    const unpaid = yield* sql<{ id: string }>`
      SELECT o.id FROM orders o WHERE o.status = 'PAID' AND NOT EXISTS (
        SELECT 1 FROM transactions t WHERE t.order_id = o.id AND t.type = 'deposit' AND t.status = 'confirmed')`
    for (const order of unpaid)
      add("no PAID order without payments", `order ${order.id} is PAID with no confirmed payment`)

    // 5. no outgoing transfer twice: one operation, at most one transaction that landed
    const twice = yield* sql<{ operation_id: string; n: number }>`
      SELECT operation_id, count(*)::int AS n FROM custody_transactions WHERE status IN ('included', 'final')
      GROUP BY operation_id HAVING count(*) > 1`
    for (const row of twice)
      add("no outgoing transfer twice", `custody operation ${row.operation_id} has ${row.n} landed transactions`)

    // 5b. on chain: a payee holds exactly what its completed withdrawals sent
    for (const payee of input.payees ?? []) {
      const client = input.chains.find((c) => c.chain === payee.chain)
      if (client === undefined) continue
      const [sent] = yield* sql<{ net: string; n: number }>`
        SELECT trim_scale(coalesce(sum(net_amount), 0))::text AS net, count(*)::int AS n FROM withdrawals
        WHERE chain = ${payee.chain} AND currency = ${payee.currency} AND to_address = ${payee.address} AND status = 'COMPLETED'`
      const held = yield* Effect.either(client.balance(payee.address, payee.currency))
      const expected = toBaseUnits(sent?.net ?? "0", payee.decimals)
      if (held._tag === "Left")
        add(
          "no outgoing transfer twice",
          `${payee.chain} ${payee.address}: cannot read its balance (${held.left.message})`
        )
      else if (held.right !== expected) {
        add(
          "no outgoing transfer twice",
          `${payee.chain} ${payee.address} holds ${held.right} base units on chain; its ${sent?.n ?? 0} COMPLETED withdrawals sent ${expected}`
        )
      }
    }

    // 5c. every approved withdrawal settles, and what is locked is exactly what open withdrawals (and
    // unclaimed refunds) hold
    const unsettled = yield* sql<{
      id: string
      status: string
    }>`SELECT id, status FROM withdrawals WHERE status IN ('APPROVED', 'BROADCAST')`
    for (const w of unsettled) add("every approved withdrawal settles", `withdrawal ${w.id} is still ${w.status}`)
    const lockedOff = yield* sql<{
      merchant_id: string
      chain: string
      currency: string
      locked: string
      open: string
    }>`
      SELECT b.merchant_id, b.chain, b.currency, trim_scale(b.locked)::text AS locked, trim_scale(coalesce(w.open, 0))::text AS open
      FROM merchant_balances b
      LEFT JOIN (SELECT merchant_id, chain, currency, sum(amount) AS open FROM (
                   SELECT merchant_id, chain, currency, amount FROM withdrawals WHERE status IN ('PENDING', 'APPROVED', 'BROADCAST')
                   -- an unclaimed refund holds its amount locked until it is claimed (then its withdrawal does)
                   UNION ALL SELECT merchant_id, chain, currency, amount FROM refunds WHERE status = 'PENDING_CLAIM') o
                 GROUP BY merchant_id, chain, currency) w
        USING (merchant_id, chain, currency)
      WHERE b.locked <> coalesce(w.open, 0)`
    for (const row of lockedOff)
      add(
        "locked equals open withdrawals and unclaimed refunds",
        `${row.merchant_id} ${row.chain}-${row.currency}: locked ${row.locked}, open withdrawals and unclaimed refunds ${row.open}`
      )

    // 6. every event for the live receiver arrived at least once, byte for byte, correctly signed
    if (input.webhooks !== undefined) {
      const { received, secrets, destination } = input.webhooks
      const events = yield* sql<{ id: string; merchant_id: string; body: string; status: string }>`
        SELECT id, merchant_id, body, status FROM webhook_events WHERE destination = ${destination}`
      const byId = new Map<string, Array<ReceivedRequest>>()
      for (const request of received) {
        const id = header(request, "x-facet-delivery-id") ?? ""
        byId.set(id, [...(byId.get(id) ?? []), request])
      }
      for (const event of events) {
        const copies = byId.get(event.id) ?? []
        const secret = secrets.get(event.merchant_id)
        if (copies.length === 0)
          add("every event delivered", `${event.id} (${event.status}) never reached the receiver`)
        for (const copy of copies) {
          if (copy.rawBody.toString("utf8") !== event.body)
            add("every event delivered", `${event.id}: a delivery's bytes differ from the stored event`)
          if (secret !== undefined && header(copy, "x-facet-signature") !== signBody(secret, copy.rawBody))
            add("every event delivered", `${event.id}: a delivery's signature does not verify`)
        }
      }
    }

    // 7. nothing the service started outlives it
    for (const { what, pid } of input.pidsGone ?? [])
      if (isAlive(pid)) add("no process left behind", `${what} (pid ${pid}) still runs`)

    return violations
  })
