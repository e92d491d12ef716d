import { SqlClient } from "@effect/sql"
import { Data, DateTime, Effect, Schema } from "effect"
import type { Chain } from "../src/domain/chain.js"
import { newId } from "../src/ids.js"
import { MoneyDecimal, normalizeDecimal } from "../src/money.js"
import { Orders } from "../src/orders/orders.js"
import { WebhookOutbox } from "../src/webhooks/outbox.js"
import type { Attributed } from "./attribution.js"

export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly chain: string }> {}

export interface BlockRecord {
  readonly chain: Chain
  readonly number: bigint
  readonly hash: string
  readonly parentHash: string
  readonly timestamp: number
}

const TxRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  amount: Schema.String,
  tx_hash: Schema.String,
  event_index: Schema.Number,
  from_address: Schema.NullOr(Schema.String),
  to_address: Schema.String,
  block_number: Schema.String,
  status: Schema.String,
  confirmations: Schema.Number,
  wallet_id: Schema.NullOr(Schema.String),
  order_id: Schema.NullOr(Schema.String),
  deposit_address_id: Schema.NullOr(Schema.String),
  counted: Schema.Boolean,
  order_value: Schema.NullOr(Schema.String),
  confirmed_at: Schema.NullOr(Schema.DateFromSelf)
})
type TxRow = typeof TxRow.Type
const decodeTxRows = Schema.decodeUnknown(Schema.Array(TxRow))
const TX_COLUMNS = "id, merchant_id, chain, currency, amount::text AS amount, tx_hash, event_index, from_address, to_address, block_number::text AS block_number, status, confirmations, wallet_id, order_id, deposit_address_id, counted, order_value::text AS order_value, confirmed_at"

const depositKey = (t: TxRow, bodyEvent: string) =>
  `deposit:${t.chain}:${t.currency}:${t.tx_hash}:${t.to_address}:${t.event_index}:${bodyEvent}`

/**
 * Writes what the indexers find, each block in one transaction with its cursor: transactions rows
 * (unique per chain, hash, event index and destination, so re-processing never duplicates), order state,
 * ledger entries and balances on confirmation, and webhook events in the outbox. Rollback for reorgs.
 */
export class AttributionStore extends Effect.Service<AttributionStore>()("facet/AttributionStore", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const orders = yield* Orders
    const outbox = yield* WebhookOutbox

    const assertLease = (chain: Chain, holder: string) =>
      Effect.flatMap(
        sql<{ holder: string }>`SELECT holder FROM indexer_leases WHERE chain = ${chain} AND holder = ${holder} AND expires_at > now() FOR SHARE`,
        (rows) => (rows.length === 0 ? Effect.fail(new LeaseLost({ chain })) : Effect.void)
      )

    const merchantHooks = (merchantIds: ReadonlyArray<string>) =>
      merchantIds.length === 0
        ? Effect.succeed(new Map<string, string | null>())
        : Effect.map(
          sql<{ id: string; webhook_url: string | null }>`SELECT id, webhook_url FROM merchants WHERE ${sql.in("id", [...new Set(merchantIds)])}`,
          (rows) => new Map(rows.map((r) => [r.id, r.webhook_url]))
        )

    const paymentOf = (t: TxRow) => ({
      chain: t.chain,
      currency: t.currency,
      tx_hash: t.tx_hash,
      to_address: t.to_address,
      event_index: t.event_index,
      amount: normalizeDecimal(t.amount),
      block_number: Number(t.block_number),
      confirmations: t.confirmations
    })

    /**
     * Recomputes an order's status from its payments (DECISIONS.md): PAID once the confirmed total
     * reaches the amount (late when the last payment came after expiry), CONFIRMING while a counted
     * payment is unconfirmed, else EXPIRED / PARTIALLY_PAID past expiry, else PENDING.
     */
    const settleOrder = (orderId: string) =>
      Effect.gen(function*() {
        const [row] = yield* sql<{
          status: string; amount: string; paid_amount: string; expired: boolean; has_pending: boolean; late: boolean; last_tx: string | null
        }>`
          SELECT o.status, o.amount::text AS amount, o.paid_amount::text AS paid_amount, o.expire_at <= now() AS expired,
                 EXISTS (SELECT 1 FROM transactions t WHERE t.order_id = o.id AND t.counted AND t.status = 'pending') AS has_pending,
                 coalesce((SELECT max(t.detected_at) FROM transactions t
                            WHERE t.order_id = o.id AND t.counted AND t.status IN ('pending', 'confirmed')) > o.expire_at, false) AS late,
                 (SELECT t.tx_hash FROM transactions t WHERE t.order_id = o.id AND t.status IN ('pending', 'confirmed')
                   ORDER BY t.detected_at DESC LIMIT 1) AS last_tx
          FROM orders o WHERE o.id = ${orderId} FOR UPDATE`
        if (row === undefined) return { changed: false, status: "" }
        const paid = new MoneyDecimal(row.paid_amount)
        const status = paid.gte(row.amount)
          ? "PAID"
          : row.has_pending
          ? "CONFIRMING"
          : row.expired
          ? (paid.gt(0) ? "PARTIALLY_PAID" : "EXPIRED")
          : "PENDING"
        const late = status === "PAID" && row.late
        yield* sql`UPDATE orders SET status = ${status}, tx_hash = ${row.last_tx}, late_payment = ${late}, updated_at = clock_timestamp()
                   WHERE id = ${orderId}`
        return { changed: status !== row.status, status }
      })

    const orderEvent = (t: TxRow, bodyEvent: string, hooks: Map<string, string | null>, now: string) =>
      Effect.gen(function*() {
        if (t.order_id === null) return
        const order = yield* orders.get(t.merchant_id, t.order_id).pipe(Effect.orDie)
        const fallback = bodyEvent === "order.expired" || bodyEvent === "order.partially_paid"
        yield* outbox.enqueue({
          merchantId: t.merchant_id,
          event: "order.updated",
          idempotencyKey: fallback ? `${order.order_id}:${bodyEvent}:${order.status}` : depositKey(t, bodyEvent),
          orderId: order.order_id,
          destination: order.notify_url ?? hooks.get(t.merchant_id) ?? null,
          body: { event: bodyEvent, order, ...(fallback ? {} : { payment: paymentOf(t) }), created_at: now }
        })
      })

    /** New or revived payments: orders move to CONFIRMING and `payment.detected` goes out. */
    const onDetected = (rows: ReadonlyArray<TxRow>, now: string) =>
      Effect.gen(function*() {
        const forOrders = rows.filter((t) => t.order_id !== null && t.counted)
        if (forOrders.length === 0) return
        const hooks = yield* merchantHooks(forOrders.map((t) => t.merchant_id))
        for (const orderId of new Set(forOrders.map((t) => t.order_id ?? ""))) yield* settleOrder(orderId)
        for (const t of forOrders) yield* orderEvent(t, "payment.detected", hooks, now)
      })

    /** Ledger entries and balance projections for a set of deposits; `sign` -1 reverses them. */
    const post = (rows: ReadonlyArray<TxRow>, kind: string, sign: 1 | -1) =>
      Effect.gen(function*() {
        if (rows.length === 0) return
        const entries = yield* sql<{ id: string; reference: string }>`
          INSERT INTO ledger_entries (kind, reference) SELECT ${kind}, unnest(${rows.map((t) => t.id)}::text[])
          RETURNING id::text AS id, reference`
        const entryOf = new Map(entries.map((e) => [e.reference, e.id]))
        const postings = rows.flatMap((t) => {
          const amount = sign === 1 ? t.amount : new MoneyDecimal(t.amount).neg().toFixed()
          const negated = sign === 1 ? new MoneyDecimal(t.amount).neg().toFixed() : t.amount
          const entry_id = entryOf.get(t.id) ?? ""
          return [
            { entry_id, account: "chain", merchant_id: null, wallet_id: null, chain: t.chain, currency: t.currency, amount: negated },
            { entry_id, account: "uncollected", merchant_id: t.merchant_id, wallet_id: t.wallet_id, chain: t.chain, currency: t.currency, amount }
          ]
        })
        yield* sql`
          INSERT INTO ledger_postings (entry_id, account, merchant_id, wallet_id, chain, currency, amount)
          SELECT * FROM unnest(${postings.map((p) => p.entry_id)}::bigint[], ${postings.map((p) => p.account)}::text[],
            ${postings.map((p) => p.merchant_id)}::text[], ${postings.map((p) => p.wallet_id)}::text[],
            ${postings.map((p) => p.chain)}::text[], ${postings.map((p) => p.currency)}::text[], ${postings.map((p) => p.amount)}::numeric[])`
        const totals = new Map<string, { merchant_id: string; chain: string; currency: string; uncollected: string }>()
        for (const t of rows) {
          const key = `${t.merchant_id}|${t.chain}|${t.currency}`
          const previous = totals.get(key)
          const delta = new MoneyDecimal(t.amount).times(sign)
          totals.set(key, {
            merchant_id: t.merchant_id, chain: t.chain, currency: t.currency,
            uncollected: previous === undefined ? delta.toFixed() : delta.plus(previous.uncollected).toFixed()
          })
        }
        yield* sql`
          INSERT INTO merchant_balances ${sql.insert([...totals.values()])}
          ON CONFLICT (merchant_id, chain, currency) DO UPDATE SET uncollected = merchant_balances.uncollected + excluded.uncollected`
      })

    /** Confirms the pending deposits of a chain at or below its finalized height. */
    const confirmUpTo = (chain: Chain, finalized: bigint, head: bigint, now: string) =>
      Effect.gen(function*() {
        const confirmed = yield* sql.unsafe(`
          UPDATE transactions SET status = 'confirmed', confirmed_at = clock_timestamp(), updated_at = clock_timestamp(),
                 confirmations = ($1::bigint - block_number + 1)::int
          WHERE chain = $2 AND status = 'pending' AND block_number <= $3::bigint
          RETURNING ${TX_COLUMNS}`, [head.toString(), chain, finalized.toString()]).pipe(Effect.flatMap(decodeTxRows))
        return yield* applyConfirmed(confirmed, now)
      })

    /** What confirmation means: the ledger credit, the order's paid total and status, the events. */
    const applyConfirmed = (confirmed: ReadonlyArray<TxRow>, now: string) =>
      Effect.gen(function*() {
        if (confirmed.length === 0) return 0
        yield* post(confirmed, "deposit", 1)
        const counted = confirmed.filter((t) => t.order_id !== null && t.counted && t.order_value !== null)
        for (const t of counted) {
          yield* sql`UPDATE orders SET paid_amount = paid_amount + ${t.order_value} WHERE id = ${t.order_id}`
        }
        const hooks = yield* merchantHooks(confirmed.map((t) => t.merchant_id))
        for (const orderId of new Set(counted.map((t) => t.order_id ?? ""))) yield* settleOrder(orderId)
        for (const t of counted) yield* orderEvent(t, "payment.confirmed", hooks, now)
        const deposits = confirmed.filter((t) => t.deposit_address_id !== null)
        if (deposits.length > 0) {
          const users = new Map((yield* sql<{ id: string; external_user_id: string }>`
            SELECT id, external_user_id FROM deposit_addresses WHERE ${sql.in("id", deposits.map((t) => t.deposit_address_id ?? ""))}`)
            .map((r) => [r.id, r.external_user_id]))
          yield* outbox.enqueueMany(deposits.map((t) => ({
              merchantId: t.merchant_id,
              event: "wallet.deposit.confirmed",
              idempotencyKey: `wallet.deposit.confirmed:${t.chain}:${t.currency}:${t.tx_hash}:${t.to_address}:${t.event_index}`,
              destination: hooks.get(t.merchant_id) ?? null,
              body: {
                event: "wallet.deposit.confirmed",
                deposit_address_id: t.deposit_address_id,
                external_user_id: users.get(t.deposit_address_id ?? "") ?? "",
                wallet_id: t.wallet_id,
                chain: t.chain,
                currency: t.currency,
                amount: normalizeDecimal(t.amount),
                tx_hash: t.tx_hash,
                from_address: t.from_address,
                to_address: t.to_address,
                event_index: t.event_index,
                block_number: Number(t.block_number),
                confirmations: t.confirmations,
                confirmed_at: t.confirmed_at === null ? now : DateTime.formatIso(DateTime.unsafeFromDate(t.confirmed_at)),
                created_at: now
              }
            })))
        }
        return confirmed.length
      })

    /** What each hit is paid to: the order (and whether its asset counts) or the deposit address. */
    const destinations = (chain: Chain, hits: ReadonlyArray<Attributed>) =>
      Effect.gen(function*() {
        const orderWallets = [...new Set(hits.filter((h) => h.wallet.purpose === "order").map((h) => h.wallet.walletId))]
        const depositWallets = [...new Set(hits.filter((h) => h.wallet.purpose === "deposit").map((h) => h.wallet.walletId))]
        const orderAssets = orderWallets.length === 0 ? [] : yield* sql<{
          order_id: string; wallet_id: string; currency: string; asset_amount: string; order_amount: string
        }>`SELECT oa.order_id, oa.wallet_id, oa.currency, oa.amount::text AS asset_amount, o.amount::text AS order_amount
           FROM order_assets oa JOIN orders o ON o.id = oa.order_id
           WHERE oa.chain = ${chain} AND ${sql.in("oa.wallet_id", orderWallets)}`
        const orderOfWallet = new Map(orderAssets.map((a) => [a.wallet_id, a.order_id]))
        const assetOf = new Map(orderAssets.map((a) => [`${a.wallet_id}|${a.currency}`, a]))
        const depositRows = depositWallets.length === 0 ? [] : yield* sql<{ id: string; wallet_id: string; currency: string }>`
          SELECT id, wallet_id, currency FROM deposit_addresses WHERE chain = ${chain} AND ${sql.in("wallet_id", depositWallets)}`
        const depositOf = new Map(depositRows.map((d) => [`${d.wallet_id}|${d.currency}`, d.id]))
        return (hit: Attributed) => {
          const key = `${hit.wallet.walletId}|${hit.transfer.currency}`
          const asset = assetOf.get(key)
          const orderValue = asset === undefined
            ? null
            : new MoneyDecimal(hit.amount).times(asset.order_amount).div(asset.asset_amount).toDecimalPlaces(18, MoneyDecimal.ROUND_DOWN).toFixed()
          return {
            order_id: hit.wallet.purpose === "order" ? orderOfWallet.get(hit.wallet.walletId) ?? null : null,
            deposit_address_id: hit.wallet.purpose === "deposit" ? depositOf.get(key) ?? null : null,
            counted: asset !== undefined,
            order_value: orderValue
          }
        }
      })

    /**
     * Consecutive blocks with their hits, confirmations up to `finalized` and the cursor at the last of
     * them, all in one transaction: a block is never half-written, and catching up many blocks costs one
     * commit instead of one per block. Following the head, it is called with one block.
     */
    const writeBlocks = Effect.fn("AttributionStore.writeBlocks")(function*(
      blocks: ReadonlyArray<{ readonly block: BlockRecord; readonly hits: ReadonlyArray<Attributed> }>,
      finalized: bigint,
      holder: string
    ) {
      const last = blocks[blocks.length - 1]
      if (last === undefined) return { detected: 0, confirmed: 0 }
      const chain = last.block.chain
      return yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* assertLease(chain, holder)
          const now = DateTime.formatIso(yield* DateTime.now)
          yield* sql`INSERT INTO indexed_blocks ${sql.insert(blocks.map(({ block }) => ({
            chain: block.chain,
            number: block.number.toString(),
            hash: block.hash,
            parent_hash: block.parentHash,
            block_time: block.timestamp > 0 ? new Date(block.timestamp < 1e12 ? block.timestamp * 1000 : block.timestamp) : null
          })))} ON CONFLICT (chain, number) DO UPDATE SET hash = excluded.hash, parent_hash = excluded.parent_hash, block_time = excluded.block_time`
          const hits = blocks.flatMap(({ block, hits }) => hits.map((hit) => ({ block, hit })))
          let detected: Array<TxRow> = []
          if (hits.length > 0) {
            const destinationOf = yield* destinations(chain, hits.map((h) => h.hit))
            const confirmedAt = new Date()
            const rows = hits.map(({ block, hit }) => {
              // a block that is already final (catching up) is written confirmed at once: one write per row
              const final = block.number <= finalized
              return {
                id: newId("txn"),
                merchant_id: hit.wallet.merchantId,
                type: "deposit",
                status: final ? "confirmed" : "pending",
                confirmed_at: final ? confirmedAt : null,
                chain: block.chain,
                currency: hit.transfer.currency,
                amount: hit.amount,
                tx_hash: hit.transfer.txHash,
                event_index: hit.transfer.eventIndex,
                from_address: hit.transfer.from,
                to_address: hit.transfer.to,
                block_number: block.number.toString(),
                block_hash: block.hash,
                confirmations: final ? Number(finalized - block.number) + 1 : 0,
                wallet_id: hit.wallet.walletId,
                ...destinationOf(hit)
              }
            })
            const key = (r: { tx_hash: string; event_index: number; to_address: string }) => `${r.tx_hash}|${r.event_index}|${r.to_address}`
            const byKey = new Map(rows.map((r) => [key(r), r]))
            // a transfer seen before is not written again; one reversed by a reorg comes back to life.
            // One array per column (a handful of parameters however many rows); only the keys come back.
            const column = <K extends keyof (typeof rows)[number]>(k: K) => rows.map((r) => r[k])
            const written = yield* sql<{ id: string; tx_hash: string; event_index: number; to_address: string }>`
              INSERT INTO transactions (id, merchant_id, type, status, confirmed_at, chain, currency, amount, tx_hash, event_index,
                from_address, to_address, block_number, block_hash, confirmations, wallet_id, order_id, deposit_address_id,
                counted, order_value)
              SELECT * FROM unnest(
                ${column("id")}::text[], ${column("merchant_id")}::text[], ${column("type")}::text[], ${column("status")}::text[],
                ${column("confirmed_at")}::timestamptz[], ${column("chain")}::text[], ${column("currency")}::text[],
                ${column("amount")}::numeric[], ${column("tx_hash")}::text[], ${column("event_index")}::int[],
                ${column("from_address")}::text[], ${column("to_address")}::text[], ${column("block_number")}::bigint[],
                ${column("block_hash")}::text[], ${column("confirmations")}::int[], ${column("wallet_id")}::text[],
                ${column("order_id")}::text[], ${column("deposit_address_id")}::text[], ${column("counted")}::boolean[],
                ${column("order_value")}::numeric[])
              ON CONFLICT (tx_hash, event_index, to_address, chain) DO UPDATE SET
                status = excluded.status, block_number = excluded.block_number, block_hash = excluded.block_hash,
                reversed_at = NULL, confirmed_at = excluded.confirmed_at, confirmations = excluded.confirmations,
                detected_at = clock_timestamp(), updated_at = clock_timestamp()
              WHERE transactions.status = 'reversed'
              RETURNING id, tx_hash, event_index, to_address`
            for (const w of written) {
              const row = byKey.get(key(w))
              if (row !== undefined) detected.push({ ...row, id: w.id })
            }
            yield* onDetected(detected, now)
          }
          const confirmed = (yield* applyConfirmed(detected.filter((t) => t.status === "confirmed"), now)) +
            (yield* confirmUpTo(chain, finalized, last.block.number, now))
          yield* sql`
            INSERT INTO indexer_cursors (chain, block_number, block_hash) VALUES (${chain}, ${last.block.number.toString()}, ${last.block.hash})
            ON CONFLICT (chain) DO UPDATE SET block_number = excluded.block_number, block_hash = excluded.block_hash, updated_at = now()`
          yield* sql`DELETE FROM indexed_blocks WHERE chain = ${chain} AND number < ${(last.block.number - 512n).toString()}`
          return { detected: detected.length, confirmed }
        })
      )
    })

    const writeBlock = (block: BlockRecord, hits: ReadonlyArray<Attributed>, finalized: bigint, holder: string) =>
      writeBlocks([{ block, hits }], finalized, holder)

    /** Confirmations with no new block (a chain whose finality moved on while the head did not). */
    const confirm = Effect.fn("AttributionStore.confirm")(function*(chain: Chain, finalized: bigint, head: bigint, holder: string) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        yield* assertLease(chain, holder)
        return yield* confirmUpTo(chain, finalized, head, DateTime.formatIso(yield* DateTime.now))
      }))
    })

    /**
     * A reorg: everything above the common ancestor is undone in one transaction. Transfers of dropped
     * blocks are marked reversed (never deleted), a confirmed one gets an opposite ledger entry, orders are
     * settled again with their events, and the cursor goes back to the ancestor.
     */
    const rollbackTo = Effect.fn("AttributionStore.rollbackTo")(function*(chain: Chain, ancestor: { readonly number: bigint; readonly hash: string }, holder: string) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        yield* assertLease(chain, holder)
        const now = DateTime.formatIso(yield* DateTime.now)
        const reversed = yield* sql.unsafe(`
          UPDATE transactions SET status = 'reversed', reversed_at = clock_timestamp(), updated_at = clock_timestamp()
          WHERE chain = $1 AND block_number > $2::bigint AND status IN ('pending', 'confirmed')
          RETURNING ${TX_COLUMNS}`, [chain, ancestor.number.toString()]).pipe(
          Effect.flatMap(decodeTxRows)
        )
        const wasConfirmed = reversed.filter((t) => t.confirmed_at !== null)
        yield* post(wasConfirmed, "deposit_reversal", -1)
        for (const t of wasConfirmed.filter((r) => r.counted && r.order_id !== null && r.order_value !== null)) {
          yield* sql`UPDATE orders SET paid_amount = paid_amount - ${t.order_value} WHERE id = ${t.order_id}`
        }
        const forOrders = reversed.filter((t) => t.order_id !== null && t.counted)
        const hooks = yield* merchantHooks(forOrders.map((t) => t.merchant_id))
        const settled = new Map<string, { changed: boolean; status: string }>()
        for (const orderId of new Set(forOrders.map((t) => t.order_id ?? ""))) settled.set(orderId, yield* settleOrder(orderId))
        for (const t of forOrders) {
          const outcome = settled.get(t.order_id ?? "")
          yield* orderEvent(t, outcome?.status === "EXPIRED" ? "order.expired" : "payment.reversed", hooks, now)
        }
        yield* sql`DELETE FROM indexed_blocks WHERE chain = ${chain} AND number > ${ancestor.number.toString()}`
        yield* sql`UPDATE indexer_cursors SET block_number = ${ancestor.number.toString()}, block_hash = ${ancestor.hash}, updated_at = now()
                   WHERE chain = ${chain}`
        return reversed.length
      }))
    })

    return { writeBlock, writeBlocks, confirm, rollbackTo } as const
  })
}) {}
