import { SqlClient } from "@effect/sql"
import { Config, DateTime, Duration, Effect, Either, Layer, Option, Schedule } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { AuditLog } from "../src/audit/audit-log.js"
import type { AssetPolicy } from "../src/domain/asset-policy.js"
import type { Chain } from "../src/domain/chain.js"
import type { CreateWithdrawalRequest, FeeQuote, WithdrawalStatus } from "../src/domain/withdrawal.js"
import type {
  CreateWithdrawalBatchRequest,
  WithdrawalBatch,
  WithdrawalBatchItemCounts,
  WithdrawalBatchItemProblem,
  WithdrawalBatchStatus
} from "../src/domain/withdrawal-batch.js"
import { Idempotency, requestHash } from "../src/idempotency.js"
import { newId, newIds } from "../src/ids.js"
import { Accounts, Ledger, type LedgerTransfer } from "../src/ledger/ledger.js"
import { fitsPrecision, fromBaseUnits, MoneyDecimal, toBaseUnits } from "../src/money.js"
import { PolicyClock } from "../src/policy-clock.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import {
  WithdrawalBatchStore,
  type WithdrawalBatchRow,
  type WithdrawalBatchSummaryRow
} from "../src/stores/withdrawal-batch-store.js"
import { type NewBatchItem, WithdrawalStore } from "../src/stores/withdrawal-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { OperationHandOff } from "./engine/operation-hand-off.js"
import type { HandOff } from "./engine/operations.js"
import { paysOwnFee } from "./transfer-costs.js"
import { destinationProblem } from "./destination-address.js"
import {
  InvalidWithdrawalBatch,
  WithdrawalBatchConflict,
  WithdrawalBatchNotFound,
  WithdrawalBatchNotPending,
  WithdrawalBatchPolicyRefused
} from "./withdrawal-batch-errors.js"
import { type Decider, WithdrawalDecisions, withdrawalOperation } from "./withdrawal-decisions.js"
import { InsufficientAvailable } from "./withdrawal-errors.js"
import { PolicyRefused } from "./withdrawal-policy-errors.js"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { assetDecimals, render as renderWithdrawal, unlock } from "./withdrawal-view.js"
import { feeSnapshot, type Requester, Withdrawals } from "./withdrawals.js"

const CREATE_ENDPOINT = "POST /v1/withdrawal-batches"
/** Native items asked of their chain at once for their network fee (each for its own recipient). */
const QUOTE_CONCURRENCY = 4
/** Destinations checked against our own wallets at once (a database read each). */
const CHECK_CONCURRENCY = 8
/** Refusals named in one message (a decision's 403) before "and N more". */
const NAMED_REFUSALS = 5

/** Who asks for a batch, and through what: the API, or a CSV uploaded in the console. */
export interface BatchRequester extends Requester {
  readonly source: "api" | "console_csv"
}

/** An item validated and quoted: what its withdrawal row will hold. */
interface QuotedItem {
  readonly index: number
  readonly request: CreateWithdrawalRequest
  readonly outWithdrawalNo: string
  readonly policy: AssetPolicy
  readonly fees: FeeQuote
  readonly gross: bigint
}

const problemOf = (index: number, item: CreateWithdrawalRequest, error: string): WithdrawalBatchItemProblem => ({
  index,
  ...(item.out_withdrawal_no === undefined ? {} : { out_withdrawal_no: item.out_withdrawal_no }),
  error
})

const assetKeyOf = (item: { readonly chain: Chain; readonly currency: string }) =>
  `${item.chain}-${item.currency.toUpperCase()}`

const byKey = <A>(a: readonly [string, A], b: readonly [string, A]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)

/** Fractional digits a decimal string is written with (sums keep them). */
const digitsOf = (text: string) => text.split(".")[1]?.length ?? 0

/** Some refusals, in one line: the first few and how many more. */
const named = (refusals: ReadonlyArray<string>) =>
  refusals.length <= NAMED_REFUSALS
    ? refusals.join("; ")
    : `${refusals.slice(0, NAMED_REFUSALS).join("; ")}; and ${refusals.length - NAMED_REFUSALS} more`

/** A batch row and its items' sums as the API shows it. */
export const renderBatch = (
  row: WithdrawalBatchRow,
  summary: ReadonlyArray<WithdrawalBatchSummaryRow>
): WithdrawalBatch => {
  const counts: { -readonly [K in keyof WithdrawalBatchItemCounts]: number } = {
    PENDING: 0,
    APPROVED: 0,
    REJECTED: 0,
    CANCELLED: 0,
    BROADCAST: 0,
    COMPLETED: 0,
    FAILED: 0
  }
  const totals = new Map<
    string,
    {
      chain: Chain
      currency: string
      count: number
      amount: MoneyDecimal
      net: MoneyDecimal
      fee: MoneyDecimal
      digits: number
    }
  >()
  for (const s of summary) {
    if (s.batch_id !== row.id) continue
    counts[s.status] += s.n
    const key = `${s.chain}-${s.currency}`
    const seen = totals.get(key)
    const zero = new MoneyDecimal(0)
    totals.set(key, {
      chain: s.chain,
      currency: s.currency,
      count: (seen?.count ?? 0) + s.n,
      amount: (seen?.amount ?? zero).plus(s.amount),
      net: (seen?.net ?? zero).plus(s.net_amount),
      fee: (seen?.fee ?? zero).plus(s.total_fee),
      digits: Math.max(seen?.digits ?? 0, digitsOf(s.amount), digitsOf(s.net_amount), digitsOf(s.total_fee))
    })
  }
  return {
    batch_id: row.id,
    status: row.status,
    description: row.description,
    item_count: row.item_count,
    totals: [...totals.values()].map((t) => ({
      chain: t.chain,
      currency: t.currency,
      count: t.count,
      amount: t.amount.toFixed(t.digits),
      net_amount: t.net.toFixed(t.digits),
      total_fee: t.fee.toFixed(t.digits)
    })),
    item_counts: counts,
    required_approvals: row.required_approvals,
    approvals: row.approvals,
    decided_by: row.decided_by,
    decision_reason: row.decision_reason,
    created_at: DateTime.formatIso(DateTime.unsafeFromDate(row.created_at)),
    updated_at: DateTime.formatIso(DateTime.unsafeFromDate(row.updated_at))
  }
}

/**
 * Withdrawal batches: up to 500 withdrawals asked for at once, admitted whole or refused whole (every refused
 * item named), the sum locked in one transaction, decided once (approved by the quorum its total per asset
 * needs, as one withdrawal of that total would: a batch is one decision; or rejected or cancelled with every
 * item), then each item sent by custody as an ordinary withdrawal, reaching its own terminal status and
 * webhook. The pieces are the withdrawals': their validation and fee
 * quote (Withdrawals), the policy (WithdrawalPolicy.admitBatch), who may decide (WithdrawalDecisions.vet),
 * the custody operation that sends an approved one.
 */
export class WithdrawalBatches extends Effect.Service<WithdrawalBatches>()("facet/WithdrawalBatches", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const catalog = yield* AssetCatalog
    const walletStore = yield* WalletStore
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const ledgerStore = yield* LedgerStore
    const idempotency = yield* Idempotency
    const withdrawals = yield* Withdrawals
    const decisions = yield* WithdrawalDecisions
    const policyRules = yield* WithdrawalPolicy
    const handOff = yield* OperationHandOff
    const withdrawalStore = yield* WithdrawalStore
    const store = yield* WithdrawalBatchStore
    const custody = yield* CustodyStore
    const audit = yield* AuditLog
    const clock = yield* PolicyClock
    const settings = yield* Config.all({
      pendingHours: Config.number("FACET_WITHDRAWAL_PENDING_HOURS").pipe(Config.withDefault(72))
    }).pipe(Effect.orDie)

    /** One batch as the API shows it; 404 when it is not this merchant's. */
    const get = Effect.fn("WithdrawalBatches.get")(function* (merchantId: string | undefined, batchId: string) {
      const row = yield* store.find({ id: batchId, merchantId })
      if (Option.isNone(row)) return yield* new WithdrawalBatchNotFound({ batchId })
      return renderBatch(row.value, yield* store.summaries([batchId]))
    })

    /** GET /v1/withdrawal-batches: a page of the merchant's batches, newest first. */
    const list = Effect.fn("WithdrawalBatches.list")(function* (
      merchantId: string,
      query: { readonly status?: WithdrawalBatchStatus | undefined; readonly limit: number; readonly offset: number }
    ) {
      const { total, rows } = yield* store.page(merchantId, query)
      const summary = yield* store.summaries(rows.map((row) => row.id))
      return { total, limit: query.limit, offset: query.offset, items: rows.map((row) => renderBatch(row, summary)) }
    })

    /** GET /v1/withdrawal-batches/{id}/items: its items as withdrawals, in the order they were asked for. */
    const items = Effect.fn("WithdrawalBatches.items")(function* (
      merchantId: string,
      batchId: string,
      query: { readonly status?: WithdrawalStatus | undefined; readonly limit: number; readonly offset: number }
    ) {
      if (Option.isNone(yield* store.find({ id: batchId, merchantId })))
        return yield* new WithdrawalBatchNotFound({ batchId })
      const { total, rows } = yield* withdrawalStore.batchItemPage(merchantId, batchId, query)
      return { total, limit: query.limit, offset: query.offset, items: rows.map(renderWithdrawal) }
    })

    /**
     * Every item checked as POST /v1/withdrawals checks one (asset live for withdrawals and enabled,
     * precision, an address of its chain and not one of ours, a net amount above zero) plus its own
     * out_withdrawal_no, unique in the batch and among the merchant's withdrawals; every refusal collected,
     * not only the first. Fees: a native item pays its network fee out of its amount and custody never spends
     * more on it, so it is estimated for the item's own recipient, as for one withdrawal (a few at a time); a
     * token's network fee is the platform's gas, shown and not charged, so it is estimated once per asset
     * (for its largest item, without a recipient: what the fee quote answers).
     */
    const validate = Effect.fn("WithdrawalBatches.validate")(function* (
      merchantId: string,
      requested: ReadonlyArray<CreateWithdrawalRequest>
    ) {
      const problems: Array<WithdrawalBatchItemProblem> = []
      const firstOf = new Map<string, number>()
      requested.forEach((item, index) => {
        const ref = item.out_withdrawal_no
        if (ref === undefined) {
          problems.push(
            problemOf(
              index,
              item,
              "out_withdrawal_no is required for each item of a batch: its own reference, unique among your withdrawals"
            )
          )
          return
        }
        const first = firstOf.get(ref)
        if (first === undefined) firstOf.set(ref, index)
        else
          problems.push(
            problemOf(index, item, `out_withdrawal_no ${ref} is item ${first}'s too: each item needs its own`)
          )
      })
      const assets = new Map<string, Either.Either<AssetPolicy, string>>()
      for (const item of requested) {
        const key = assetKeyOf(item)
        if (assets.has(key)) continue
        const policy = yield* Effect.either(withdrawals.withdrawable(merchantId, item.chain, item.currency))
        assets.set(
          key,
          Either.mapLeft(policy, (e) => e.message)
        )
      }
      const assetOf = (item: CreateWithdrawalRequest) =>
        assets.get(assetKeyOf(item)) ?? Either.left(`unknown asset ${assetKeyOf(item)}`)
      const destinations = yield* Effect.forEach(
        requested,
        (item) =>
          Either.match(assetOf(item), {
            onLeft: () => Effect.succeed(undefined),
            onRight: (policy) => destinationProblem(walletStore, policy.chain, item.to_address)
          }),
        { concurrency: CHECK_CONCURRENCY }
      )
      const tokenFees = new Map<string, bigint>()
      for (const [key, asset] of assets) {
        if (Either.isLeft(asset) || paysOwnFee(asset.right)) continue
        const policy = asset.right
        const largest = requested
          .filter((item) => assetKeyOf(item) === key && fitsPrecision(item.amount, policy.amount_precision))
          .reduce<string | undefined>(
            (max, item) => (max === undefined || new MoneyDecimal(item.amount).greaterThan(max) ? item.amount : max),
            undefined
          )
        if (largest === undefined) continue
        tokenFees.set(
          key,
          yield* withdrawals.estimateNetworkFee(merchantId, policy, toBaseUnits(largest, policy.decimals))
        )
      }
      const quoted = yield* Effect.forEach(
        requested,
        (item, index) => {
          const asset = assetOf(item)
          if (Either.isLeft(asset)) return Effect.succeed(Either.left(asset.left))
          const destination = destinations[index]
          if (destination !== undefined) return Effect.succeed(Either.left(destination))
          const policy = asset.right
          return withdrawals
            .computeQuote(merchantId, policy, item.amount, item.to_address, tokenFees.get(assetKeyOf(item)))
            .pipe(
              Effect.map((fees) =>
                Either.right<QuotedItem>({
                  index,
                  request: item,
                  outWithdrawalNo: item.out_withdrawal_no ?? "",
                  policy,
                  fees,
                  gross: toBaseUnits(item.amount, policy.decimals)
                })
              ),
              Effect.catchTag("InvalidWithdrawalRequest", (e) => Effect.succeed(Either.left(e.reason)))
            )
        },
        { concurrency: QUOTE_CONCURRENCY }
      )
      quoted.forEach((outcome, index) => {
        const item = requested[index]
        if (Either.isLeft(outcome) && item !== undefined) problems.push(problemOf(index, item, outcome.left))
      })
      if (problems.length > 0)
        return yield* new InvalidWithdrawalBatch({ items: [...problems].sort((a, b) => a.index - b.index) })
      const taken = yield* withdrawalStore.takenOutWithdrawalNos(merchantId, [...firstOf.keys()])
      if (taken.size > 0) {
        return yield* new WithdrawalBatchConflict({
          items: requested.flatMap((item, index) => {
            const by = taken.get(item.out_withdrawal_no ?? "")
            return by === undefined
              ? []
              : [
                  problemOf(
                    index,
                    item,
                    `out_withdrawal_no ${item.out_withdrawal_no ?? ""} is already withdrawal ${by}'s`
                  )
                ]
          })
        })
      }
      return quoted.flatMap((outcome) => (Either.isRight(outcome) ? [outcome.right] : []))
    })

    /**
     * POST /v1/withdrawal-batches (and the console's CSV upload): every item validated and quoted before
     * anything is locked, then one transaction: the idempotency key, the merchant's available balance of each
     * asset locked (in one order), the policy (each item, each asset's total), the balances checked against
     * the batch's sums, the batch and every item stored (PENDING) and each item's `available` → `locked`
     * transfer, with the audit record. A refusal anywhere stores nothing.
     */
    const create = Effect.fn("WithdrawalBatches.create")(function* (
      merchantId: string,
      request: CreateWithdrawalBatchRequest,
      idempotencyKey: Option.Option<string>,
      requester: BatchRequester
    ) {
      const hash = requestHash({
        description: request.description,
        items: request.items.map((item) => ({
          ...item,
          currency: item.currency.toUpperCase(),
          amount: new MoneyDecimal(item.amount).toFixed()
        }))
      })
      if (Option.isSome(idempotencyKey)) {
        // a retry answers what the first request made, with no quoting (its references are taken by then)
        const replay = yield* idempotency.lookup({
          merchantId,
          endpoint: CREATE_ENDPOINT,
          key: idempotencyKey.value,
          requestHash: hash
        })
        if (Option.isSome(replay)) return yield* get(merchantId, replay.value.resourceId)
      }
      const started = Date.now()
      const quoted = yield* validate(merchantId, request.items)
      const validatedMs = Date.now() - started
      const batchId = newId("wbt")
      const ids = newIds("wdr", quoted.length)
      const sums = new Map<string, { readonly policy: AssetPolicy; readonly gross: bigint }>()
      for (const item of quoted) {
        const key = item.policy.asset_key
        sums.set(key, { policy: item.policy, gross: (sums.get(key)?.gross ?? 0n) + item.gross })
      }
      const assets = [...sums].sort(byKey)
      const outcome = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            if (Option.isSome(idempotencyKey)) {
              const replay = yield* idempotency.claim({
                merchantId,
                endpoint: CREATE_ENDPOINT,
                key: idempotencyKey.value,
                resourceId: batchId,
                statusCode: 201,
                requestHash: hash
              })
              if (Option.isSome(replay)) return replay.value.resourceId
            }
            // each asset's available row locked, in one order: concurrent requests queue and never overdraw
            const available = new Map<string, bigint>()
            for (const [key, sum] of assets) {
              available.set(
                key,
                yield* ledgerStore.lockedBalance(
                  Accounts.available(merchantId).name,
                  sum.policy.chain,
                  sum.policy.currency
                )
              )
            }
            const admitted = yield* policyRules.admitBatch(
              merchantId,
              quoted.map((item) => ({
                chain: item.policy.chain,
                currency: item.policy.currency,
                toAddress: item.request.to_address,
                amount: item.fees.amount
              }))
            )
            if (admitted.refusedItems.length > 0 || admitted.refusedTotals.length > 0) {
              return yield* new WithdrawalBatchPolicyRefused({
                totals: admitted.refusedTotals,
                items: admitted.refusedItems.flatMap((refused) => {
                  const item = quoted[refused.index]
                  return item === undefined ? [] : [problemOf(item.index, item.request, refused.reason)]
                })
              })
            }
            for (const [key, sum] of assets) {
              const held = available.get(key) ?? 0n
              if (held < sum.gross) {
                return yield* new InsufficientAvailable({
                  chain: sum.policy.chain,
                  currency: sum.policy.currency,
                  available: fromBaseUnits(held, sum.policy.decimals),
                  requested: `${fromBaseUnits(sum.gross, sum.policy.decimals)} (the batch's total)`
                })
              }
            }
            const createdBy = `${requester.actor.kind}:${requester.actor.name}`
            yield* store.insert({
              id: batchId,
              merchant_id: merchantId,
              status: "PENDING",
              description: request.description ?? null,
              item_count: quoted.length,
              required_approvals: admitted.requiredApprovals,
              admitted_at: admitted.admittedAt,
              created_by: createdBy,
              created_by_user_id: requester.consoleUserId ?? null,
              source: requester.source
            })
            const rows = quoted.map(
              (item, position): NewBatchItem => ({
                id: ids[position] ?? newId("wdr"),
                merchant_id: merchantId,
                out_withdrawal_no: item.outWithdrawalNo,
                status: "PENDING",
                chain: item.policy.chain,
                currency: item.policy.currency,
                ...feeSnapshot(item.fees),
                to_address: item.request.to_address,
                required_approvals: admitted.requiredApprovals,
                admitted_at: admitted.admittedAt,
                created_by: createdBy,
                created_by_user_id: requester.consoleUserId ?? null,
                batch_id: batchId,
                batch_index: item.index
              })
            )
            const stored = yield* withdrawalStore.insertBatchItems(rows)
            if (stored.size < rows.length) {
              // a withdrawal took a reference after the check: refused whole, as the check would have
              return yield* new WithdrawalBatchConflict({
                items: quoted.flatMap((item, position) =>
                  stored.has(rows[position]?.id ?? "")
                    ? []
                    : [
                        problemOf(
                          item.index,
                          item.request,
                          `out_withdrawal_no ${item.outWithdrawalNo} is already used by another withdrawal`
                        )
                      ]
                )
              })
            }
            yield* ledger.post(
              quoted.map(
                (item, position): LedgerTransfer => ({
                  debit: Accounts.available(merchantId),
                  credit: Accounts.locked(merchantId),
                  chain: item.policy.chain,
                  currency: item.policy.currency,
                  amount: item.gross,
                  kind: "withdrawal_lock",
                  reference: rows[position]?.id ?? ""
                })
              )
            )
            yield* audit.record(
              merchantId,
              requester.actor,
              "withdrawal_batch.created",
              batchId,
              `${quoted.length} withdrawal${quoted.length === 1 ? "" : "s"} (${assets
                .map(
                  ([, sum]) =>
                    `${fromBaseUnits(sum.gross, sum.policy.decimals)} ${sum.policy.currency} on ${sum.policy.chain}`
                )
                .join(
                  ", "
                )}) from ${requester.source === "api" ? "the API" : "a CSV uploaded in the console"}; needs ${admitted.requiredApprovals} approval${admitted.requiredApprovals === 1 ? "" : "s"}`
            )
            return batchId
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      yield* Effect.logInfo(
        `withdrawal batch ${outcome}: ${quoted.length} item(s) PENDING (locked); validated in ${validatedMs} ms, stored in ${Date.now() - started - validatedMs} ms`
      )
      return yield* get(merchantId, outcome)
    })

    /**
     * Approve, reject or cancel a PENDING batch, with the rules of one withdrawal (WithdrawalDecisions.vet)
     * and the policy in force now for each item and each asset's total. An approval is recorded per person
     * (on the batch and each item); once they reach the quorum — what the batch's totals per asset need now,
     * or what it needed at creation, whichever is more — every item is APPROVED with its custody operation in
     * this transaction and, once committed, handed to their main wallet's actor by message. One
     * rejection or cancellation ends every item and unlocks the whole sum in this transaction.
     */
    const decide = Effect.fn("WithdrawalBatches.decide")(function* (
      batchId: string,
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      decider: Decider,
      merchantId?: string
    ) {
      const now = yield* clock.now
      const noOperations: ReadonlyArray<HandOff> = []
      const operations = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const found = yield* store.find({ id: batchId, merchantId, lock: true })
            if (Option.isNone(found)) return yield* new WithdrawalBatchNotFound({ batchId })
            const batch = found.value
            if (batch.decision !== "PENDING")
              return yield* new WithdrawalBatchNotPending({ batchId, status: batch.status, decision })
            const { user, actor } = yield* decisions.vet(
              {
                label: `withdrawal batch ${batchId}`,
                id: batchId,
                merchantId: batch.merchant_id,
                createdByUserId: batch.created_by_user_id,
                approvals: batch.approvals
              },
              decision,
              decider,
              now
            )
            const items = yield* withdrawalStore.batchItems(batchId, true)
            const reason = decider.reason === undefined ? "" : `: ${decider.reason}`
            const by = Option.isSome(user) ? user.value.login_name : decider.by
            if (decision === "APPROVED") {
              // the policy in force now, not the one of its creation: an address removed or a limit tightened since refuses
              const admitted = yield* policyRules.admitBatch(
                batch.merchant_id,
                items.map((w) => ({ chain: w.chain, currency: w.currency, toAddress: w.to_address, amount: w.amount })),
                batchId
              )
              const refusals = [
                ...admitted.refusedTotals,
                ...admitted.refusedItems.map((r) => {
                  const ref = items[r.index]?.out_withdrawal_no
                  return `item ${r.index}${ref === null || ref === undefined ? "" : ` (${ref})`}: ${r.reason}`
                })
              ]
              if (refusals.length > 0)
                return yield* new PolicyRefused({ reason: named(refusals), approving: `withdrawal batch ${batchId}` })
              const approval = {
                approver_kind: Option.isSome(user)
                  ? ("console_user" as const)
                  : decider.kind === "policy"
                    ? ("policy" as const)
                    : ("operator" as const),
                user_id: Option.isSome(user) ? user.value.id : null,
                approved_by: by,
                from_address: decider.from.slice(0, 200),
                user_agent: (decider.userAgent ?? "").slice(0, 300)
              }
              yield* store.insertApproval({ batch_id: batchId, ...approval })
              yield* withdrawalStore.insertBatchItemApprovals(batchId, approval)
              const required = Math.max(batch.required_approvals, admitted.requiredApprovals)
              // a removed user's approval of a still-pending batch no longer counts
              const count = yield* store.countedApprovals(batchId)
              yield* audit.record(
                batch.merchant_id,
                actor,
                "withdrawal_batch.approved",
                batchId,
                `approval ${count} of ${required} for ${items.length} withdrawal${items.length === 1 ? "" : "s"}${reason}`
              )
              if (count < required) {
                yield* store.raiseRequiredApprovals(batchId, required)
                yield* withdrawalStore.raiseBatchRequiredApprovals(batchId, required)
                return noOperations
              }
            } else {
              yield* audit.record(
                batch.merchant_id,
                actor,
                decision === "REJECTED" ? "withdrawal_batch.rejected" : "withdrawal_batch.cancelled",
                batchId,
                `${items.length} withdrawal${items.length === 1 ? "" : "s"}, every one ${decision.toLowerCase()} and unlocked${reason}`
              )
            }
            yield* store.recordDecision(batchId, decision, by, decider.from, decider.reason ?? null)
            yield* withdrawalStore.decideBatchItems(batchId, decision, by, decider.from, decider.reason ?? null)
            const decimals = new Map<string, number>()
            for (const w of items) {
              const key = `${w.chain}-${w.currency}`
              if (!decimals.has(key)) decimals.set(key, yield* assetDecimals(catalog, w))
            }
            const decimalsOf = (w: { readonly chain: Chain; readonly currency: string }) =>
              decimals.get(`${w.chain}-${w.currency}`) ?? 0
            if (decision !== "APPROVED") {
              yield* ledger.post(
                items.map((w) =>
                  unlock(
                    w,
                    toBaseUnits(w.amount, decimalsOf(w)),
                    decision === "REJECTED" ? "withdrawal_rejected" : "withdrawal_cancelled"
                  )
                )
              )
              return noOperations
            }
            const mains = new Map<Chain, { readonly id: string; readonly address: string }>()
            for (const w of items) {
              if (!mains.has(w.chain)) mains.set(w.chain, yield* wallets.mainWallet(w.merchant_id, w.chain))
            }
            const operationIds = newIds("op", items.length)
            const rows = items.flatMap((w, position) => {
              const main = mains.get(w.chain)
              return main === undefined
                ? []
                : [withdrawalOperation(operationIds[position] ?? newId("op"), w, main, decimalsOf(w))]
            })
            yield* custody.insertOperations(rows)
            yield* withdrawalStore.attachOperations(
              rows.map((row) => ({ id: row.withdrawal_id ?? "", operationId: row.id }))
            )
            return rows.map((row): HandOff => ({ operationId: row.id, walletId: row.wallet_id }))
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      yield* Effect.logInfo(
        `withdrawal batch ${batchId} ${decision} by ${decider.by} from ${decider.from}${decider.reason === undefined ? "" : ` (${decider.reason})`}${operations.length > 0 ? `; ${operations.length} operation(s) for the main wallets' actors` : ""}`
      )
      // the approved items go to their main wallets' actors now that they are committed, in the batch's order
      yield* handOff.handOver(operations)
      return yield* get(undefined, batchId)
    })

    /** PENDING batches nobody decided within FACET_WITHDRAWAL_PENDING_HOURS (72) → CANCELLED, unlocked. */
    const expire = Effect.fn("WithdrawalBatches.expire")(function* () {
      const due = yield* store.undecidedFor(settings.pendingHours)
      for (const id of due) {
        yield* decide(id, "CANCELLED", {
          kind: "service",
          by: "expiry",
          from: "service",
          reason: `undecided for ${settings.pendingHours} h`
        }).pipe(
          // decided or gone meanwhile: left as it is
          Effect.catchTags({
            WithdrawalBatchNotFound: () => Effect.void,
            WithdrawalBatchNotPending: () => Effect.void,
            ApproverNotAllowed: () => Effect.void
          })
        )
      }
      return due.length
    })

    return { create, get, list, items, decide, expire } as const
  }),
  dependencies: [
    AssetCatalog.Default,
    WalletStore.Default,
    Wallets.Default,
    Ledger.Default,
    LedgerStore.Default,
    Idempotency.Default,
    Withdrawals.Default,
    WithdrawalDecisions.Default,
    WithdrawalPolicy.Default,
    WithdrawalStore.Default,
    WithdrawalBatchStore.Default,
    CustodyStore.Default,
    AuditLog.Default
  ]
}) {}

/** PENDING batches nobody decided in time are cancelled with every item (the sum unlocked), checked every minute. */
export const WithdrawalBatchExpiryLive = Layer.scopedDiscard(
  Effect.flatMap(WithdrawalBatches, (batches) =>
    Effect.forkScoped(
      Effect.repeat(
        batches.expire().pipe(
          Effect.tap((n) =>
            n > 0 ? Effect.logInfo(`${n} undecided withdrawal batch(es) expired and were cancelled`) : Effect.void
          ),
          Effect.catchAllCause((cause) =>
            Effect.logWarning("withdrawal batch expiry failed; trying again later", cause)
          )
        ),
        Schedule.spaced(Duration.minutes(1))
      )
    )
  )
).pipe(Layer.provide(WithdrawalBatches.Default))
