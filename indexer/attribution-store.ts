import { UntracedBlockStore } from "../src/stores/untraced-block-store.js"
import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Option, Schema } from "effect"
import type { Chain } from "../src/domain/chain.js"
import { type DelimitedType, delimitedColumn } from "../src/database/delimited-column.js"
import { newIds } from "../src/ids.js"
import { MoneyDecimal, normalizeDecimal } from "../src/money.js"
import { paidValue, settle, underpaidAmount } from "../src/orders/order-settlement.js"
import { Orders } from "../src/orders/orders.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { IndexerStore } from "../src/stores/indexer-store.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { MerchantStore } from "../src/stores/merchant-store.js"
import { OrderStore } from "../src/stores/order-store.js"
import {
  decodeTransactionRows,
  TRANSACTION_COLUMNS,
  type TransactionRow,
  TransactionStore
} from "../src/stores/transaction-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { WebhookStore } from "../src/stores/webhook-store.js"
import { WebhookOutbox } from "../src/webhooks/outbox.js"
import {
  idempotencyKeyOf,
  isRepeatablePaymentEvent,
  type OrderBodyEvent,
  type OrderWebhook
} from "../src/domain/webhook-events.js"

/** The chain events of one payment to an order, as the indexer first names them. */
type PaymentBodyEvent = "payment.detected" | "payment.confirmed" | "payment.reversed" | "payment.restored"

/** An order after settling its payments: its status, whether it became PAID now, and the payments that paid it. */
interface Settled {
  readonly status: string
  readonly becamePaid: boolean
  readonly paidBy: ReadonlySet<string>
}

/** A payment's identity among an order's payments (chain, hash, event index, destination). */
const paymentKey = (t: {
  readonly chain: string
  readonly tx_hash: string
  readonly event_index: number
  readonly to_address: string
}) => `${t.chain}|${transferKey(t)}`

/**
 * What a payment's event is once its order is settled (issue 53). While the order is PAID, a payment that did
 * not pay it changes nothing: it is not announced while pending (no `payment.detected`, `payment.reversed`,
 * `payment.restored`), and once final it is `payment.overpaid` — money beyond the order, never a second
 * `payment.confirmed` saying PAID. None: not announced.
 */
const announcedAs = (t: TxRow, event: PaymentBodyEvent, settled: Settled): OrderBodyEvent | undefined =>
  settled.status !== "PAID" || settled.paidBy.has(paymentKey(t))
    ? event
    : event === "payment.confirmed"
      ? "payment.overpaid"
      : undefined
import type { Attributed } from "./attribution.js"

/** Another indexer took the chain over (its fence row names another holder): this one must not write. */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", { chain: Schema.String }) {}

/** A block the indexer has read up to: where it goes on from. */
export interface BlockCursor {
  readonly number: bigint
  readonly hash: string
}

export interface BlockRecord {
  readonly chain: Chain
  readonly number: bigint
  readonly hash: string
  readonly parentHash: string
  readonly timestamp: number
  /** Why its contract calls could not be traced (their BNB is not in its transfers); recorded with it. */
  readonly untraced?: string | undefined
}

/** What the attribution logic reads of a transactions row. */
type TxRow = Pick<
  TransactionRow,
  | "id"
  | "merchant_id"
  | "chain"
  | "currency"
  | "amount"
  | "tx_hash"
  | "event_index"
  | "from_address"
  | "to_address"
  | "block_number"
  | "status"
  | "confirmations"
  | "wallet_id"
  | "order_id"
  | "deposit_address_id"
  | "counted"
  | "order_value"
  | "confirmed_at"
>
const decodeTxRows = (rows: ReadonlyArray<unknown>) => Effect.orDie(decodeTransactionRows(rows))

/** A block as `indexed_blocks` keeps it (its time in seconds or milliseconds, as the chain gives it). */
const indexedBlockRow = (block: BlockRecord) => ({
  chain: block.chain,
  number: block.number.toString(),
  hash: block.hash,
  parent_hash: block.parentHash,
  block_time: blockTime(block)
})

/** A block's time as a Date (chains give seconds or milliseconds); none when the chain gave none. */
const blockTime = (block: BlockRecord) =>
  block.timestamp > 0 ? new Date(block.timestamp < 1e12 ? block.timestamp * 1000 : block.timestamp) : null

/** A transfer's identity on its chain (the transactions table's unique key, less the chain). */
const transferKey = (t: { readonly tx_hash: string; readonly event_index: number; readonly to_address: string }) =>
  `${t.tx_hash}|${t.event_index}|${t.to_address}`

/**
 * The batch's hits, each with its block and the block's place in the batch (1-based), one per transfer even
 * if a node repeats a log within the batch: a repeat in the same statement would otherwise fail the insert
 * (or, joined twice, credit twice).
 */
const uniqueHits = (
  blocks: ReadonlyArray<{ readonly block: BlockRecord; readonly hits: ReadonlyArray<Attributed> }>
) => {
  const seen = new Set<string>()
  return blocks
    .flatMap(({ block, hits }, index) => hits.map((hit) => ({ block, hit, place: index + 1 })))
    .filter(({ hit }) => {
      const id = transferKey({
        tx_hash: hit.transfer.txHash,
        event_index: hit.transfer.eventIndex,
        to_address: hit.transfer.to
      })
      if (seen.has(id)) return false
      seen.add(id)
      return true
    })
}
type BatchHit = ReturnType<typeof uniqueHits>[number]

/**
 * Writes what the indexers find, each block in one transaction with its cursor: transactions rows
 * (unique per chain, hash, event index and destination, so re-processing never duplicates), order state,
 * ledger entries and balances on confirmation, and webhook events in the outbox. Rollback for reorgs.
 */
export class AttributionStore extends Effect.Service<AttributionStore>()("facet/AttributionStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const orders = yield* Orders
    const outbox = yield* WebhookOutbox
    const untraced = yield* UntracedBlockStore
    const indexerStore = yield* IndexerStore
    const ledgerStore = yield* LedgerStore
    const merchants = yield* MerchantStore
    const webhooks = yield* WebhookStore
    const orderStore = yield* OrderStore
    const walletStore = yield* WalletStore
    const transactions = yield* TransactionStore
    const custodyStore = yield* CustodyStore

    // the fence (chain-indexer.ts): only the holder the chain's row names writes; FOR SHARE keeps a
    // takeover waiting until this transaction ends, and a transaction begun after it finds another name
    const assertLease = (chain: Chain, holder: string) =>
      Effect.flatMap(indexerStore.holdsLease(chain, holder), (holds) =>
        holds ? Effect.void : Effect.fail(new LeaseLost({ chain }))
      )

    const merchantHooks = (merchantIds: ReadonlyArray<string>) => merchants.webhookUrls(merchantIds)

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
     * Recomputes an order's status from its payments (src/orders/order-settlement.ts). The order is locked
     * first and its payments read by statements of their own after that: a payment another chain's
     * indexer committed while this one waited for the lock is seen (one statement's snapshot would miss it
     * and could put CONFIRMING back to PENDING).
     */
    const settleOrder = (orderId: string) =>
      Effect.gen(function* () {
        const locked = yield* orderStore.lockForSettlement(orderId)
        if (Option.isNone(locked)) return { status: "", becamePaid: false, paidBy: new Set<string>() } satisfies Settled
        const order = locked.value
        const assets = yield* orderStore.askedAssets(orderId)
        const payments = yield* transactions.settlementPayments(orderId)
        const last = yield* transactions.latestPaymentHash(orderId)
        const settled = payments.map((p) => ({
          chain: p.chain,
          currency: p.currency,
          amount: p.amount,
          status: p.status,
          blockTime: p.block_time,
          key: paymentKey(p)
        }))
        const next = settle(
          { status: order.status, latePayment: order.late_payment, expireAt: order.expire_at, expired: order.expired },
          assets,
          settled
        )
        // recomputed from the payments each time, never accumulated from rounded per-payment values
        const paid = paidValue(order.amount, assets, settled, order.digits ?? 18)
        yield* orderStore.writeSettlement(orderId, {
          status: next.status,
          txHash: Option.getOrNull(last),
          latePayment: next.latePayment,
          paidAmount: paid,
          underpaidAmount: underpaidAmount(next.status, order.amount, paid)
        })
        return {
          status: next.status,
          becamePaid: next.status === "PAID" && order.status !== "PAID",
          paidBy: new Set(next.paidBy)
        } satisfies Settled
      })

    /**
     * An order's `order.updated`. A reorg can reverse and restore the same payment more than once, and each
     * time is a delivery of its own: the body of a `payment.reversed` / `payment.restored` says which time it
     * is (`occurrence`, counted from the outbox in this transaction), and the key is made from the body
     * (`idempotencyKeyOf`: the n-th ends in `#n`, docs/reference/decisions.md), so the signed body proves it.
     */
    const orderEvent = (t: TxRow, bodyEvent: OrderBodyEvent, hooks: ReadonlyMap<string, string | null>, now: string) =>
      Effect.gen(function* () {
        if (t.order_id === null) return
        const order = yield* orders.get(t.merchant_id, t.order_id).pipe(Effect.orDie)
        const fallback = bodyEvent === "order.expired" || bodyEvent === "order.partially_paid"
        const occurrence = isRepeatablePaymentEvent(bodyEvent)
          ? { occurrence: yield* Effect.orDie(webhooks.paymentOccurrence(t, bodyEvent)) }
          : {}
        const body: typeof OrderWebhook.Type = {
          event: bodyEvent,
          order,
          ...(fallback ? {} : { payment: paymentOf(t), ...occurrence }),
          created_at: now
        }
        yield* outbox.enqueue({
          merchantId: t.merchant_id,
          event: "order.updated",
          idempotencyKey: idempotencyKeyOf(body),
          orderId: order.order_id,
          destination: order.notify_url ?? hooks.get(t.merchant_id) ?? null,
          body
        })
      })

    /**
     * `order.paid`: the order's transition to PAID, once per order, keyed by the order
     * (`{order_id}:order.paid:PAID`), after the events of the payments that brought it there: the one event a
     * merchant fulfils on (docs/guides/webhooks.md).
     */
    const orderPaid = (merchantId: string, orderId: string, hooks: ReadonlyMap<string, string | null>, now: string) =>
      Effect.gen(function* () {
        const order = yield* orders.get(merchantId, orderId).pipe(Effect.orDie)
        const body: typeof OrderWebhook.Type = { event: "order.paid", order, created_at: now }
        yield* outbox.enqueue({
          merchantId,
          event: "order.updated",
          idempotencyKey: idempotencyKeyOf(body),
          orderId,
          destination: order.notify_url ?? hooks.get(merchantId) ?? null,
          body
        })
      })

    /**
     * Settles the orders of these payments (each once) and announces them: each payment's event as its order
     * now makes it (`announcedAs`), then `order.paid` for an order that became PAID.
     */
    const settleAndAnnounce = <T extends TxRow>(
      rows: ReadonlyArray<T>,
      eventOf: (t: T) => PaymentBodyEvent,
      now: string
    ) =>
      Effect.gen(function* () {
        if (rows.length === 0) return
        const hooks = yield* merchantHooks(rows.map((t) => t.merchant_id))
        const settled = new Map<string, Settled>()
        for (const orderId of new Set(rows.map((t) => t.order_id ?? "")))
          settled.set(orderId, yield* settleOrder(orderId))
        for (const t of rows) {
          const order = settled.get(t.order_id ?? "")
          const event = order === undefined ? undefined : announcedAs(t, eventOf(t), order)
          if (event !== undefined) yield* orderEvent(t, event, hooks, now)
        }
        for (const [orderId, order] of settled) {
          const merchantId = rows.find((t) => t.order_id === orderId)?.merchant_id
          if (order.becamePaid && merchantId !== undefined) yield* orderPaid(merchantId, orderId, hooks, now)
        }
      })

    /**
     * New or revived payments: orders move to CONFIRMING; `payment.detected` goes out for a new one,
     * `payment.restored` for one a reorg had reversed and that is mined again.
     */
    const onDetected = (rows: ReadonlyArray<TxRow & { readonly revived: boolean }>, now: string) =>
      settleAndAnnounce(
        rows.filter((t) => t.order_id !== null && t.counted),
        (t) => (t.revived ? "payment.restored" : "payment.detected"),
        now
      )

    /**
     * Everything confirmation means for the confirmed deposits in CTE `c` (transactions rows plus the
     * deposit address's `external_user_id` and an `event_id`), as parts of the caller's
     * statement: the ledger credit and balance, and `wallet.deposit.confirmed` for deposit addresses, its
     * body built once, here, as the compact JSON of the `wallet_deposit_body` row type (wire order).
     */
    const confirmationParts = (now: string) =>
      sql`
        ${ledgerStore.depositParts("deposit", sql`true`)},
        ${webhooks.depositConfirmedEvents("c", now)}`

    /** Confirms the pending deposits of a chain at or below its finalized height. */
    const confirmUpTo = (chain: Chain, finalized: bigint, head: bigint, now: string) =>
      Effect.gen(function* () {
        const pending = yield* transactions.pendingAtOrBelow(chain, finalized)
        if (pending === 0) return 0
        const forOrders = yield* sql`
          WITH ${transactions.confirmPendingPart(chain, finalized, head, walletStore.depositAddressOfPayment("t"))},
          c AS MATERIALIZED (
            SELECT u.*, d.external_user_id, facet_id('evt') AS event_id
            FROM u ${walletStore.depositAddressJoin("u")}),
          ${confirmationParts(now)}
          SELECT ${sql.literal(TRANSACTION_COLUMNS)} FROM c WHERE c.order_id IS NOT NULL`.pipe(
          Effect.flatMap(decodeTxRows)
        )
        yield* settleConfirmedOrders(forOrders, now)
        return pending
      })

    /**
     * What confirmation means for order payments: the order's paid total and status, the events
     * (`payment.confirmed`, or `payment.overpaid` for a payment beyond a PAID order; `order.paid` once).
     */
    const settleConfirmedOrders = (confirmed: ReadonlyArray<TxRow>, now: string) =>
      settleAndAnnounce(
        confirmed.filter((t) => t.order_id !== null && t.counted && t.order_value !== null),
        () => "payment.confirmed",
        now
      )

    /**
     * What each order hit pays: its order, whether its asset counts, and its value in the order's currency.
     * (Deposit-address hits need no lookup here: the insert joins their deposit address.)
     */
    const orderDestinations = (chain: Chain, hits: ReadonlyArray<Attributed>) =>
      Effect.gen(function* () {
        const orderWallets = [
          ...new Set(hits.filter((h) => h.wallet.purpose === "order").map((h) => h.wallet.walletId))
        ]
        const orderAssets = yield* orderStore.assetsOfWallets(chain, orderWallets)
        const orderOfWallet = new Map(orderAssets.map((a) => [a.wallet_id, a.order_id]))
        const assetOf = new Map(orderAssets.map((a) => [`${a.wallet_id}|${a.currency}`, a]))
        return (hit: Attributed) => {
          if (hit.wallet.purpose !== "order") return { order_id: null, counted: false, order_value: null }
          const asset = assetOf.get(`${hit.wallet.walletId}|${hit.transfer.currency}`)
          return {
            order_id: orderOfWallet.get(hit.wallet.walletId) ?? null,
            counted: asset !== undefined,
            order_value:
              asset === undefined
                ? null
                : new MoneyDecimal(hit.amount)
                    .times(asset.order_amount)
                    .div(asset.asset_amount)
                    .toDecimalPlaces(18, MoneyDecimal.ROUND_DOWN)
                    .toFixed()
          }
        }
      })

    /**
     * The batch's deposits in one statement: transactions rows (a transfer seen before is not written again;
     * one reversed by a reorg comes back to life), and for those in blocks already final, their credit and
     * webhook at once; then the order logic for the order payments written. How many were written and final.
     */
    const writeDeposits = (
      chain: Chain,
      blocks: ReadonlyArray<{ readonly block: BlockRecord }>,
      hits: ReadonlyArray<BatchHit>,
      finalized: bigint,
      now: string
    ) =>
      Effect.gen(function* () {
        const forOrders: Array<TxRow & { readonly revived: boolean }> = []
        let detected = 0
        let final = 0
        const destinationOf = yield* orderDestinations(
          chain,
          hits.map((h) => h.hit)
        )
        const confirmedAt = new Date()
        const ids = newIds("txn", hits.length)
        const eventIds = newIds("evt", hits.length)
        const destinations = hits.map(({ hit }) => destinationOf(hit))
        // order payments written (new or revived) go on to the order logic, so their rows are kept whole
        const orderRows = new Map<string, TxRow>()
        hits.forEach(({ block, hit }, index) => {
          const destination = destinations[index]
          if (destination === undefined || destination.order_id === null) return
          // a block that is already final (catching up) is written confirmed at once: one write per row
          const isFinal = block.number <= finalized
          const row: TxRow = {
            id: ids[index] ?? "",
            merchant_id: hit.wallet.merchantId,
            chain: block.chain,
            currency: hit.transfer.currency,
            amount: hit.amount,
            tx_hash: hit.transfer.txHash,
            event_index: hit.transfer.eventIndex,
            from_address: hit.transfer.from,
            to_address: hit.transfer.to,
            block_number: block.number.toString(),
            status: isFinal ? "confirmed" : "pending",
            confirmations: isFinal ? Number(finalized - block.number) + 1 : 0,
            wallet_id: hit.wallet.walletId,
            order_id: destination.order_id,
            deposit_address_id: null,
            counted: destination.counted,
            order_value: destination.order_value,
            confirmed_at: isFinal ? confirmedAt : null
          }
          orderRows.set(transferKey(row), row)
        })
        // the transfers as one column each, pointing at their block by its place in the batch; the blocks
        // once each below (number, hash and time; final or not follows from the number)
        const column = (type: DelimitedType, values: ReadonlyArray<string | number | boolean | null>) =>
          delimitedColumn(sql, type, values)
        const transfer = <A extends string | number | boolean | null>(f: (hit: Attributed) => A) =>
          hits.map(({ hit }) => f(hit))
        const c = yield* Effect.all({
          block: column(
            "int",
            hits.map(({ place }) => place)
          ),
          event_id: column("text", eventIds),
          id: column("text", ids),
          merchant_id: column(
            "text",
            transfer((h) => h.wallet.merchantId)
          ),
          currency: column(
            "text",
            transfer((h) => h.transfer.currency)
          ),
          amount: column(
            "numeric",
            transfer((h) => h.amount)
          ),
          tx_hash: column(
            "text",
            transfer((h) => h.transfer.txHash)
          ),
          event_index: column(
            "int",
            transfer((h) => h.transfer.eventIndex)
          ),
          from_address: column(
            "text",
            transfer((h) => h.transfer.from)
          ),
          to_address: column(
            "text",
            transfer((h) => h.transfer.to)
          ),
          wallet_id: column(
            "text",
            transfer((h) => h.wallet.walletId)
          ),
          purpose: column(
            "text",
            transfer((h) => h.wallet.purpose)
          ),
          order_id: column(
            "text",
            destinations.map((d) => d.order_id)
          ),
          counted: column(
            "boolean",
            destinations.map((d) => d.counted)
          ),
          order_value: column(
            "numeric",
            destinations.map((d) => d.order_value)
          )
        })
        // a transfer seen before is not written again; one reversed by a reorg comes back to life. Only a
        // count and the order payments come back. Final rows (catching up) are credited and announced in
        // the same statement: the deposit address is looked up once for both the row and its event.
        const written = yield* sql<{
          written: number
          final: number
          id: string | null
          tx_hash: string | null
          event_index: number | null
          to_address: string | null
          revived: boolean | null
        }>`
            WITH b AS (
              SELECT b.*, b.number <= ${finalized.toString()}::bigint AS final
              FROM unnest(${blocks.map(({ block }) => block.number.toString())}::bigint[], ${blocks.map(({ block }) => block.hash)}::text[],
                  ${blocks.map(({ block }) => blockTime(block))}::timestamptz[]) WITH ORDINALITY AS b (number, hash, time, place)
            ),
            i AS MATERIALIZED (
              SELECT i.*, ${chain}::text AS chain, b.number AS block_number, b.hash AS block_hash, b.time AS block_time,
                CASE WHEN b.final THEN 'confirmed' ELSE 'pending' END AS status,
                CASE WHEN b.final THEN ${confirmedAt}::timestamptz END AS confirmed_at,
                CASE WHEN b.final THEN (${finalized.toString()}::bigint - b.number + 1)::int ELSE 0 END AS confirmations,
                d.id AS deposit_address_id, d.external_user_id
              FROM unnest(${c.block}, ${c.event_id}, ${c.id}, ${c.merchant_id}, ${c.currency}, ${c.amount}, ${c.tx_hash}, ${c.event_index},
                  ${c.from_address}, ${c.to_address}, ${c.wallet_id}, ${c.purpose}, ${c.order_id}, ${c.counted}, ${c.order_value})
                AS i (block, event_id, id, merchant_id, currency, amount, tx_hash, event_index, from_address, to_address, wallet_id,
                      purpose, order_id, counted, order_value)
              JOIN b ON b.place = i.block
              ${walletStore.depositAddressOfTransfer("i", chain)}
            ),
            ${transactions.insertDepositsPart},
            c AS MATERIALIZED (
              SELECT w.*, i.external_user_id, i.event_id FROM w
              JOIN i ON i.tx_hash = w.tx_hash AND i.event_index = w.event_index AND i.to_address = w.to_address
              WHERE w.status = 'confirmed'
            ),
            ${confirmationParts(now)}
            SELECT n.written, n.final, o.id, o.tx_hash, o.event_index, o.to_address, o.revived
            FROM (SELECT count(*)::int AS written, (count(*) FILTER (WHERE status = 'confirmed'))::int AS final FROM w) n
            LEFT JOIN LATERAL (SELECT id, tx_hash, event_index, to_address, revived FROM w WHERE order_id IS NOT NULL) o ON true`
        for (const w of written) {
          detected = w.written
          final = w.final
          if (w.id === null || w.tx_hash === null || w.event_index === null || w.to_address === null) continue
          const row = orderRows.get(
            transferKey({ tx_hash: w.tx_hash, event_index: w.event_index, to_address: w.to_address })
          )
          // an insert's xmax is 0; an ON CONFLICT update (a reversed transfer mined again) has one
          if (row !== undefined)
            forOrders.push({ ...row, id: w.id, deposit_address_id: null, revived: w.revived === true })
        }

        yield* onDetected(forOrders, now)
        return { detected, final, forOrders }
      })

    /**
     * Consecutive blocks with their hits, confirmations up to `finalized` and the cursor at the last of
     * them, all in one transaction: a block is never half-written, and catching up many blocks costs one
     * commit instead of one per block. Following the head, it is called with one block.
     */
    const writeBlocks = Effect.fn("AttributionStore.writeBlocks")(function* (
      blocks: ReadonlyArray<{ readonly block: BlockRecord; readonly hits: ReadonlyArray<Attributed> }>,
      finalized: bigint,
      holder: string,
      options: {
        // a rescan re-reads final blocks behind the cursor: it only adds what is missing, and leaves the
        // indexer's lease, cursor and block window alone
        readonly mode?: "follow" | "rescan"
        // where the cursor goes: the batch's last block (the default), or, for a batch written while
        // earlier ones may not have committed yet (catch-up-writer.ts), a block they are known to have
        // reached (moved forward only), or nowhere
        readonly cursor?: "last" | Option.Option<BlockCursor>
        // pending deposits at or below `finalized` confirmed in the same transaction (the default); a batch
        // written beside another leaves them to a write of their own (catch-up-writer.ts)
        readonly confirmPending?: boolean
      } = {}
    ) {
      const mode = options.mode ?? "follow"
      const cursorTo = options.cursor ?? "last"
      const last = blocks[blocks.length - 1]
      if (last === undefined) return { detected: 0, confirmed: 0 }
      const chain = last.block.chain
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          // a catch-up batch holds thousands of rows in the statement's CTEs: with the default 4 MB of
          // work_mem they spill to temporary files. Following, the fence, that setting and the blocks' rows
          // are one statement (one round trip of the few around each block's write)
          if (mode === "follow") {
            const [lease] = yield* indexerStore.holdAndStoreBlocks(
              chain,
              holder,
              blocks.map(({ block }) => indexedBlockRow(block))
            )
            if (lease === undefined) return yield* new LeaseLost({ chain })
          } else {
            yield* sql`SET LOCAL work_mem = '64MB'`
          }
          const now = DateTime.formatIso(yield* DateTime.now)
          const unique = uniqueHits(blocks)
          // custody's own transactions (gas funding, collections) are never deposits: custody stored their
          // hashes before broadcasting them, so they are known before they can be seen (a withdrawal to
          // someone's deposit address is a real payment to them, and stays one). One indexed lookup per
          // batch: as a NOT EXISTS inside the write statement it made the statement six times slower.
          const hashes = [...new Set(unique.map(({ hit }) => hit.transfer.txHash))]
          const own = yield* custodyStore.ownHashes(chain, hashes)
          const hits = own.size === 0 ? unique : unique.filter(({ hit }) => !own.has(hit.transfer.txHash))
          // order payments written (new or revived) go on to the order logic; deposits are only counted
          const { detected, final, forOrders } =
            hits.length === 0
              ? { detected: 0, final: 0, forOrders: [] }
              : yield* writeDeposits(chain, blocks, hits, finalized, now)
          yield* settleConfirmedOrders(
            forOrders.filter((t) => t.status === "confirmed"),
            now
          )
          // what a block's traces could not show is recorded with it (a rescan that traced it clears it)
          yield* untraced.record(blocks.map((b) => b.block))
          if (mode === "rescan") {
            yield* untraced.traced(blocks.map((b) => b.block))
            return { detected, confirmed: final }
          }
          const confirmed =
            final +
            (options.confirmPending === false ? 0 : yield* confirmUpTo(chain, finalized, last.block.number, now))
          // the cursor and the block window's end, one statement
          yield* indexerStore.stepAndTrim(
            chain,
            last.block.number,
            cursorTo === "last"
              ? Option.some(indexerStore.setCursor(chain, last.block, blocks[0]?.block.number))
              : Option.map(cursorTo, (to) => indexerStore.moveCursorForward(chain, to))
          )
          return { detected, confirmed }
        })
      )
    })

    /** The cursor moved forward to a block whose batch and every one before it have committed. */
    const advanceCursor = Effect.fn("AttributionStore.advanceCursor")(function* (
      chain: Chain,
      to: BlockCursor,
      holder: string
    ) {
      return yield* sql.withTransaction(
        Effect.zipRight(assertLease(chain, holder), indexerStore.moveCursorForward(chain, to))
      )
    })

    const writeBlock = (block: BlockRecord, hits: ReadonlyArray<Attributed>, finalized: bigint, holder: string) =>
      writeBlocks([{ block, hits }], finalized, holder)

    /** Confirmations with no new block (a chain whose finality moved on while the head did not). */
    const confirm = Effect.fn("AttributionStore.confirm")(function* (
      chain: Chain,
      finalized: bigint,
      head: bigint,
      holder: string
    ) {
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* assertLease(chain, holder)
          return yield* confirmUpTo(chain, finalized, head, DateTime.formatIso(yield* DateTime.now))
        })
      )
    })

    /**
     * A reorg: everything above the common ancestor is undone in one transaction. Transfers of dropped
     * blocks are marked reversed (never deleted), a confirmed one gets an opposite ledger entry, orders are
     * settled again with their events, and the cursor goes back to the ancestor.
     */
    const rollbackTo = Effect.fn("AttributionStore.rollbackTo")(function* (
      chain: Chain,
      ancestor: { readonly number: bigint; readonly hash: string },
      holder: string
    ) {
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* assertLease(chain, holder)
          const now = DateTime.formatIso(yield* DateTime.now)
          // a reversed deposit that had been credited gets the opposite entry, in the same statement
          const reversed = yield* sql`
          WITH ${transactions.reverseAbovePart(chain, ancestor.number)},
          c AS MATERIALIZED (SELECT r.* FROM r),
          ${ledgerStore.depositParts("deposit_reversal", sql`c.confirmed_at IS NOT NULL`)}
          SELECT ${sql.literal(TRANSACTION_COLUMNS)} FROM c`.pipe(Effect.flatMap(decodeTxRows))
          // the reorg's outcome for the order (back to PENDING, CONFIRMING or EXPIRED) is in this event's
          // body; `order.expired` stays the expiry's own event, sent once
          yield* settleAndAnnounce(
            reversed.filter((t) => t.order_id !== null && t.counted),
            () => "payment.reversed",
            now
          )
          yield* untraced.dropAbove(chain, ancestor.number)
          yield* indexerStore.rollBackTo(chain, ancestor)
          return reversed.length
        })
      )
    })

    /**
     * A chain's first cursor, where its indexing starts, with its block (the base a reorg walks back to);
     * kept as it is if another process stored one first.
     */
    const startCursor = Effect.fn("AttributionStore.startCursor")(function* (block: BlockRecord, holder: string) {
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* assertLease(block.chain, holder)
          yield* indexerStore.startCursor(indexedBlockRow(block))
        })
      )
    })

    return { writeBlock, writeBlocks, advanceCursor, confirm, rollbackTo, startCursor } as const
  }),
  dependencies: [
    LedgerStore.Default,
    TransactionStore.Default,
    MerchantStore.Default,
    WalletStore.Default,
    CustodyStore.Default,
    WebhookStore.Default,
    OrderStore.Default,
    IndexerStore.Default,
    UntracedBlockStore.Default,
    Orders.Default,
    WebhookOutbox.Default
  ]
}) {}
