import { SqlClient } from "@effect/sql"
import { Config, DateTime, Duration, Effect, Either, Layer, Option, Redacted, Schedule } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { AuditLog, type AuditActor, SERVICE_ACTOR } from "../src/audit/audit-log.js"
import { AppConfig } from "../src/config.js"
import type { Chain } from "../src/domain/chain.js"
import { type CreateRefundRequest, DEFAULT_CLAIM_HOURS, type RefundStatus } from "../src/domain/refund.js"
import { Idempotency, requestHash } from "../src/idempotency.js"
import { newId } from "../src/ids.js"
import { Accounts, Ledger } from "../src/ledger/ledger.js"
import { hashSecret, newRefundClaimToken } from "../src/merchants/credentials.js"
import { fromBaseUnits, MoneyDecimal, normalizeDecimal, toBaseUnits } from "../src/money.js"
import { OrderNotFound } from "../src/orders/order-errors.js"
import { IdempotencyStore } from "../src/stores/idempotency-store.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { OrderStore } from "../src/stores/order-store.js"
import { type RefundRow, RefundStore } from "../src/stores/refund-store.js"
import { TransactionStore } from "../src/stores/transaction-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { destinationProblem } from "./destination-address.js"
import {
  InvalidRefundClaim,
  InvalidRefundRequest,
  RefundClaimNotFound,
  RefundNeedsCollection,
  RefundNotClaimable,
  RefundNotFound
} from "./refund-errors.js"
import { askedAmount, withinLimit } from "./refund-amount.js"
import { RefundEvents } from "./refund-events.js"
import { claimUrl, renderRefund } from "./refund-view.js"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { PolicyRefused } from "./withdrawal-policy-errors.js"
import { Withdrawals } from "./withdrawals.js"

const CREATE_ENDPOINT = "POST /v1/orders/{order_id}/refunds"
const EXPIRY_BATCH = 100

/** Who asks for a refund: an API key, or a console user (who then may not approve its withdrawal). */
export interface RefundRequester {
  readonly actor: AuditActor
  readonly consoleUserId?: string | undefined
}

/** The customer using a claim link: nobody the service knows, only where the request came from. */
const customer = (from: { readonly address: string; readonly userAgent: string }): AuditActor => ({
  kind: "service",
  name: "customer (refund claim link)",
  from: from.address,
  userAgent: from.userAgent
})

/**
 * Refunds (docs/guides/refunds.md): a merchant gives back what a customer paid to an order, in the asset
 * paid, never more than was paid and not yet refunded. Creation locks the amount (available → locked) in the
 * transaction that checks the limit, under the order's lock; the customer names the destination on the
 * claim page, which creates a withdrawal of kind `refund` holding that lock, decided and sent as any
 * withdrawal; its end is the refund's (RefundEvents). An unclaimed refund is cancelled by the merchant or
 * expires with its link, unlocked. Each status change is one transaction with its `refund.updated` webhook
 * and, for creation, claim, cancellation and expiry, its audit record.
 */
export class Refunds extends Effect.Service<Refunds>()("facet/Refunds", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const catalog = yield* AssetCatalog
    const store = yield* RefundStore
    const orders = yield* OrderStore
    const transactions = yield* TransactionStore
    const ledgerStore = yield* LedgerStore
    const ledger = yield* Ledger
    const idempotency = yield* Idempotency
    const idempotencyStore = yield* IdempotencyStore
    const audit = yield* AuditLog
    const events = yield* RefundEvents
    const withdrawals = yield* Withdrawals
    const policyRules = yield* WithdrawalPolicy
    const walletStore = yield* WalletStore

    /** The asset's policy for this merchant (its precision and decimals); refused when it has none. */
    const assetOf = (merchantId: string, chain: Chain, currency: string) =>
      Effect.flatMap(
        catalog.policy(merchantId, chain, currency),
        Option.match({
          onNone: () =>
            Effect.fail(new InvalidRefundRequest({ reason: `${chain}-${currency} is not an asset of this merchant` })),
          onSome: Effect.succeed
        })
      )

    const found = (row: Option.Option<RefundRow>, id: string) =>
      Option.match(row, { onNone: () => Effect.fail(new RefundNotFound({ refundId: id })), onSome: Effect.succeed })

    /** The locked amount back to available (an unclaimed refund cancelled or expired), in the caller's transaction. */
    const unlock = (row: RefundRow, decimals: number) =>
      ledger.post([
        {
          debit: Accounts.locked(row.merchant_id),
          credit: Accounts.available(row.merchant_id),
          chain: row.chain,
          currency: row.currency,
          amount: toBaseUnits(row.amount, decimals),
          kind: "refund_unlock",
          reference: row.id
        }
      ])

    /** A fresh claim link for a refund: the token (shown once), its hash replacing the old one, in the caller's transaction. */
    const freshToken = (refundId: string) =>
      Effect.gen(function* () {
        const token = newRefundClaimToken()
        yield* store.replaceToken(refundId, hashSecret(token))
        return Redacted.value(token)
      })

    /** A refund as the API shows it now (with its claim URL when one was just made). */
    const view = (id: string, claim?: string) =>
      Effect.flatMap(store.find({ id }), (row) =>
        Option.match(row, {
          onNone: () => Effect.dieMessage(`refund ${id} vanished`),
          onSome: (r) => Effect.succeed(renderRefund(r, claim))
        })
      )

    /**
     * What was paid to the order in one asset (confirmed) less what its refunds hold, read under the order's
     * lock when the caller holds it.
     */
    const refundable = (orderId: string, chain: Chain, currency: string) =>
      Effect.gen(function* () {
        const paidRows = yield* transactions.confirmedPaidOfOrder(orderId)
        const paid = new MoneyDecimal(paidRows.find((p) => p.chain === chain && p.currency === currency)?.total ?? "0")
        const held = new MoneyDecimal(yield* store.heldTotal(orderId, chain, currency))
        return { paid, held }
      })

    /**
     * POST /v1/orders/{order_id}/refunds. Checked before anything is locked: the order is the merchant's
     * (404), the asset is one it was paid in and withdrawable, the amount fits the asset's precision and its
     * fees leave something to send (400), the per-withdrawal limit (403). Then one transaction: the order row
     * locked (concurrent refunds of it queue there), the limit (confirmed paid − refunds not CANCELLED,
     * EXPIRED or FAILED; 400), the merchant's available balance row locked and checked (400: collect first),
     * the refund stored, `available → locked` (kind refund_lock), its audit record and `refund.updated`.
     */
    const create = Effect.fn("Refunds.create")(function* (
      merchantId: string,
      orderId: string,
      request: CreateRefundRequest,
      idempotencyKey: Option.Option<string>,
      requester: RefundRequester
    ) {
      const order = yield* Effect.orDie(orders.find(merchantId, orderId))
      if (Option.isNone(order)) return yield* new OrderNotFound({ orderId })
      if ((request.chain === undefined) !== (request.currency === undefined))
        return yield* new InvalidRefundRequest({
          reason:
            "chain and currency name the asset refunded together: give both, or neither when the order was paid in one asset"
        })
      const paidAssets = yield* Effect.orDie(transactions.confirmedPaidOfOrder(orderId))
      const paidIn = paidAssets.map((p) => `${p.chain}-${p.currency}`).join(", ")
      let chain: Chain
      let currency: string
      if (request.chain !== undefined && request.currency !== undefined) {
        chain = request.chain
        currency = request.currency.trim().toUpperCase()
        if (!paidAssets.some((p) => p.chain === chain && p.currency === currency))
          return yield* new InvalidRefundRequest({
            reason: `order ${orderId} has no confirmed payment in ${chain}-${currency} to refund${paidIn === "" ? "" : ` (it was paid in ${paidIn})`}`
          })
      } else {
        const only = paidAssets[0]
        if (only === undefined)
          return yield* new InvalidRefundRequest({ reason: `order ${orderId} has no confirmed payment to refund` })
        if (paidAssets.length > 1)
          return yield* new InvalidRefundRequest({
            reason: `order ${orderId} was paid in several assets (${paidIn}): say which one to refund with chain and currency`
          })
        chain = only.chain
        currency = only.currency
      }
      const policy = yield* assetOf(merchantId, chain, currency)
      const digits = policy.amount_precision

      // the amount in the asset: as given, or amount × rate (rounded down at the asset's precision), or all that is left
      const asking = askedAmount(request, digits, policy.asset_key)
      if (Either.isLeft(asking)) return yield* new InvalidRefundRequest({ reason: asking.left })
      const asked = asking.right
      // a retry of a creation already made goes straight to its replay (the limit it used is spent by it now)
      const retried =
        Option.isSome(idempotencyKey) &&
        Option.isSome(yield* Effect.orDie(idempotencyStore.find(merchantId, CREATE_ENDPOINT, idempotencyKey.value)))
      if (!retried) {
        // before the lock: what the quote and the per-withdrawal limit are checked on (all that is left, when not given)
        const before = withinLimit(
          asked,
          yield* Effect.orDie(refundable(orderId, chain, currency)),
          { orderId, chain, currency },
          digits
        )
        if (Either.isLeft(before)) return yield* new InvalidRefundRequest({ reason: before.left })
        const estimate = before.right
        // the refund's withdrawal must be able to leave: the asset live for withdrawals, fees leaving something to send
        yield* withdrawals.refundQuote(merchantId, { chain, currency, amount: estimate.toFixed(digits) })
        const perTx = (yield* policyRules.effective(merchantId)).perTx(policy.asset_key)
        if (perTx !== undefined && estimate.greaterThan(perTx))
          return yield* new PolicyRefused({
            reason: `a refund of ${estimate.toFixed()} ${currency} passes the per-withdrawal limit of ${perTx.toFixed()} ${currency} on ${chain} that its withdrawal would meet`
          })
      }

      const id = newId("rfd")
      const token = newRefundClaimToken()
      const hours = request.claim_expire_hours ?? DEFAULT_CLAIM_HOURS
      const expiresAt = DateTime.toDate(DateTime.add(yield* DateTime.now, { hours }))
      const outcome = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            if (Option.isSome(idempotencyKey)) {
              const replay = yield* idempotency.claim({
                merchantId,
                endpoint: CREATE_ENDPOINT,
                key: idempotencyKey.value,
                resourceId: id,
                statusCode: 201,
                requestHash: requestHash({
                  order_id: orderId,
                  chain,
                  currency,
                  amount: request.amount === undefined ? undefined : normalizeDecimal(request.amount),
                  rate: request.rate === undefined ? undefined : normalizeDecimal(request.rate),
                  reason: request.reason,
                  claim_expire_hours: hours
                })
              })
              if (Option.isSome(replay)) return { id: replay.value.resourceId, replayed: true }
            }
            const locked = yield* orders.lockOwned(merchantId, orderId)
            if (Option.isNone(locked)) return yield* new OrderNotFound({ orderId })
            const limited = withinLimit(
              asked,
              yield* refundable(orderId, chain, currency),
              { orderId, chain, currency },
              digits
            )
            if (Either.isLeft(limited)) return yield* new InvalidRefundRequest({ reason: limited.left })
            const amount = limited.right
            const units = toBaseUnits(amount, policy.decimals)
            const available = yield* ledgerStore.lockedBalance(Accounts.available(merchantId).name, chain, currency)
            if (available < units) {
              return yield* new RefundNeedsCollection({
                chain,
                currency,
                available: fromBaseUnits(available, policy.decimals),
                requested: amount.toFixed()
              })
            }
            yield* store.insert({
              id,
              merchant_id: merchantId,
              order_id: orderId,
              status: "PENDING_CLAIM",
              chain,
              currency,
              amount: amount.toFixed(digits),
              order_amount: request.rate === undefined || request.amount === undefined ? null : request.amount,
              rate: request.rate ?? null,
              reason: request.reason ?? null,
              claim_token_hash: hashSecret(token),
              claim_expires_at: expiresAt,
              created_by: `${requester.actor.kind}:${requester.actor.name}`,
              created_by_user_id: requester.consoleUserId ?? null
            })
            yield* ledger.post([
              {
                debit: Accounts.available(merchantId),
                credit: Accounts.locked(merchantId),
                chain,
                currency,
                amount: units,
                kind: "refund_lock",
                reference: id
              }
            ])
            yield* audit.record(
              merchantId,
              requester.actor,
              "refund.created",
              id,
              `${amount.toFixed(digits)} ${currency} on ${chain} for order ${orderId}${request.rate === undefined ? "" : ` (${request.amount} × rate ${request.rate})`}; claim link until ${expiresAt.toISOString()}`
            )
            yield* events.announce(id)
            return { id, replayed: false }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      if (!outcome.replayed) {
        yield* Effect.logInfo(`refund ${id} of order ${orderId}: PENDING_CLAIM (locked)`)
        return yield* view(id, claimUrl(config.baseUrl, Redacted.value(token)))
      }
      // a retry of a creation whose answer was lost: the link is shown again, as a new one (the first is never stored)
      const replayed = yield* Effect.orDie(store.find({ id: outcome.id, merchantId }))
      if (Option.isSome(replayed) && replayed.value.status === "PENDING_CLAIM" && !replayed.value.link_expired)
        return yield* newLink(merchantId, outcome.id, requester.actor)
      return yield* view(outcome.id)
    })

    /** POST /v1/refunds/{refund_id}/claim-link: a new claim link for an unclaimed refund; the old one stops working. */
    const newLink = Effect.fn("Refunds.newLink")(function* (merchantId: string, refundId: string, actor: AuditActor) {
      const token = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const row = yield* found(yield* store.find({ id: refundId, merchantId, lock: true }), refundId)
            if (row.status !== "PENDING_CLAIM" || row.link_expired)
              return yield* new RefundNotClaimable({ refundId, status: row.status, act: "given a new link" })
            const fresh = yield* freshToken(refundId)
            yield* audit.record(
              merchantId,
              actor,
              "refund.link_reissued",
              refundId,
              `a new claim link; the previous one no longer works (until ${row.claim_expires_at.toISOString()})`
            )
            return fresh
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      return yield* view(refundId, claimUrl(config.baseUrl, token))
    })

    /** POST /v1/refunds/{refund_id}/cancel: an unclaimed refund CANCELLED, its amount back in available. */
    const cancel = Effect.fn("Refunds.cancel")(function* (merchantId: string, refundId: string, actor: AuditActor) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const row = yield* found(yield* store.find({ id: refundId, merchantId, lock: true }), refundId)
            if (row.status !== "PENDING_CLAIM")
              return yield* new RefundNotClaimable({ refundId, status: row.status, act: "cancelled" })
            const policy = yield* assetOf(row.merchant_id, row.chain, row.currency).pipe(Effect.orDie)
            yield* store.release(refundId, "CANCELLED", null)
            yield* unlock(row, policy.decimals)
            yield* audit.record(
              merchantId,
              actor,
              "refund.cancelled",
              refundId,
              `${row.amount} ${row.currency} on ${row.chain} for order ${row.order_id}: unclaimed, unlocked`
            )
            yield* events.announce(refundId)
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      return yield* view(refundId)
    })

    const get = Effect.fn("Refunds.get")(function* (merchantId: string, refundId: string) {
      return renderRefund(yield* found(yield* store.find({ id: refundId, merchantId }), refundId))
    })

    /** GET /v1/refunds: the merchant's refunds, newest first (status filter, limit/offset). */
    const list = Effect.fn("Refunds.list")(function* (
      merchantId: string,
      query: { readonly status?: RefundStatus | undefined; readonly limit: number; readonly offset: number }
    ) {
      const { total, rows } = yield* store.page(merchantId, query)
      return { total, limit: query.limit, offset: query.offset, items: rows.map((r) => renderRefund(r)) }
    })

    /** GET /v1/orders/{order_id}/refunds: one order's refunds, newest first (404 when the order is not the merchant's). */
    const listForOrder = Effect.fn("Refunds.listForOrder")(function* (
      merchantId: string,
      orderId: string,
      query: { readonly limit: number; readonly offset: number }
    ) {
      if (Option.isNone(yield* Effect.orDie(orders.find(merchantId, orderId))))
        return yield* new OrderNotFound({ orderId })
      const { total, rows } = yield* store.page(merchantId, { ...query, orderId })
      return { total, limit: query.limit, offset: query.offset, items: rows.map((r) => renderRefund(r)) }
    })

    /** What a claim link shows: the refund, the merchant's name, and its fees now when the chain can quote them. */
    const claimView = Effect.fn("Refunds.claimView")(function* (token: string) {
      const row = yield* store.findByToken(hashSecret(token))
      if (Option.isNone(row)) return yield* new RefundClaimNotFound()
      const refund = row.value
      const fees =
        refund.status === "PENDING_CLAIM" && !refund.link_expired
          ? yield* withdrawals
              .refundQuote(refund.merchant_id, {
                chain: refund.chain,
                currency: refund.currency,
                amount: refund.amount
              })
              .pipe(
                Effect.timeout("5 seconds"),
                Effect.asSome,
                // the page shows without a fee when none can be had now, whatever the reason (a node, a defect)
                Effect.catchAllCause((cause) =>
                  Effect.as(Effect.logWarning("refund claim page: no fee quote", cause), Option.none())
                )
              )
          : Option.none()
      return { refund, merchantName: refund.merchant_name, fees }
    })

    /**
     * The customer's claim: the address checked for the chain (and refused when it is one of this service's
     * own), the withdrawal quoted to it; then one transaction: the refund locked and still unclaimed (409
     * otherwise), the merchant's available balance row locked (so the withdrawal policy's 24 h window counts
     * concurrent withdrawals), the refund's withdrawal created under the policy (403 rolls everything back),
     * the refund CLAIMED, its audit record and `refund.updated`.
     */
    const claim = Effect.fn("Refunds.claim")(function* (
      token: string,
      rawAddress: string,
      from: { readonly address: string; readonly userAgent: string }
    ) {
      const hash = hashSecret(token)
      const first = yield* store.findByToken(hash)
      if (Option.isNone(first)) return yield* new RefundClaimNotFound()
      const refund = first.value
      if (refund.status !== "PENDING_CLAIM" || refund.link_expired)
        return yield* new RefundNotClaimable({ refundId: refund.id, status: refund.status, act: "claimed" })
      const address = rawAddress.trim()
      if (address === "") return yield* new InvalidRefundClaim({ reason: "give the address the refund is sent to" })
      const problem = yield* destinationProblem(walletStore, refund.chain, address)
      if (problem !== undefined) return yield* new InvalidRefundClaim({ reason: problem })
      const fees = yield* withdrawals
        .refundQuote(
          refund.merchant_id,
          { chain: refund.chain, currency: refund.currency, amount: refund.amount },
          address
        )
        .pipe(
          Effect.catchTag("InvalidWithdrawalRequest", (e) =>
            Effect.fail(new InvalidRefundClaim({ reason: `this refund cannot be sent now: ${e.reason}` }))
          )
        )
      const actor = customer(from)
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const locked = yield* store.findByToken(hash, true)
            if (Option.isNone(locked)) return yield* new RefundClaimNotFound()
            const row = locked.value
            if (row.status !== "PENDING_CLAIM" || row.link_expired)
              return yield* new RefundNotClaimable({ refundId: row.id, status: row.status, act: "claimed" })
            yield* ledgerStore.lockedBalance(Accounts.available(row.merchant_id).name, row.chain, row.currency)
            const withdrawalId = yield* withdrawals.createForRefund(
              row.merchant_id,
              { id: row.id, createdBy: row.created_by, createdByUserId: row.created_by_user_id },
              fees,
              address,
              actor
            )
            if (!(yield* store.markClaimed(row.id, withdrawalId, address)))
              return yield* Effect.dieMessage(`refund ${row.id} was not unclaimed under its lock`)
            yield* audit.record(
              row.merchant_id,
              actor,
              "refund.claimed",
              row.id,
              `${row.amount} ${row.currency} on ${row.chain} to ${address} (net ${fees.net_amount}); withdrawal ${withdrawalId}`
            )
            yield* events.announce(row.id)
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      yield* Effect.logInfo(`refund ${refund.id} CLAIMED to ${address}`)
      const after = yield* store.findByToken(hash)
      return Option.getOrElse(after, () => refund)
    })

    /**
     * Unclaimed refunds whose link's time is up → EXPIRED, unlocked, with their audit record and webhook, in
     * one transaction per batch; SKIP LOCKED lets several processes share the work. How many expired.
     */
    const expireDue = Effect.fn("Refunds.expireDue")(function* () {
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            // balance rows locked in one order by every process (merchant, then asset), so two expiring at once
            // never deadlock on each other's merchants
            const due = [...(yield* store.dueForExpiry(EXPIRY_BATCH))].sort((a, b) =>
              `${a.merchant_id}|${a.chain}|${a.currency}`.localeCompare(`${b.merchant_id}|${b.chain}|${b.currency}`)
            )
            for (const row of due) {
              const policy = yield* assetOf(row.merchant_id, row.chain, row.currency).pipe(Effect.orDie)
              if (!(yield* store.release(row.id, "EXPIRED", "the claim link expired unused"))) continue
              yield* unlock(row, policy.decimals)
              yield* audit.record(
                row.merchant_id,
                SERVICE_ACTOR,
                "refund.expired",
                row.id,
                `${row.amount} ${row.currency} on ${row.chain} for order ${row.order_id}: the claim link expired at ${row.claim_expires_at.toISOString()} unused; unlocked`
              )
              yield* events.announce(row.id)
            }
            return due.length
          })
        )
        .pipe(Effect.orDie)
    })

    return { create, newLink, cancel, get, list, listForOrder, claimView, claim, expireDue } as const
  }),
  dependencies: [
    AssetCatalog.Default,
    RefundStore.Default,
    OrderStore.Default,
    TransactionStore.Default,
    LedgerStore.Default,
    IdempotencyStore.Default,
    WalletStore.Default,
    Ledger.Default,
    Idempotency.Default,
    AuditLog.Default,
    RefundEvents.Default,
    Withdrawals.Default,
    WithdrawalPolicy.Default
  ]
}) {}

/**
 * Expires unclaimed refunds without a request touching them: every FACET_REFUND_EXPIRY_INTERVAL_MS (30 s),
 * drains the due ones in batches. Failures are logged and retried on the next tick.
 */
export const RefundExpiryLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const refunds = yield* Refunds
    const interval = yield* Config.integer("FACET_REFUND_EXPIRY_INTERVAL_MS").pipe(
      Config.withDefault(30_000),
      Effect.orDie
    )
    const drain: Effect.Effect<number> = Effect.flatMap(refunds.expireDue(), (n) =>
      n === EXPIRY_BATCH ? Effect.map(drain, (rest) => n + rest) : Effect.succeed(n)
    )
    const tick = drain.pipe(
      Effect.tap((n) => (n > 0 ? Effect.logInfo(`expired ${n} unclaimed refunds`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logWarning("refund expiry failed; retrying next tick", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(tick, Schedule.spaced(Duration.millis(interval))))
  })
).pipe(Layer.provide(Refunds.Default))
