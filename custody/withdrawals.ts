import { SqlClient } from "@effect/sql"
import { Config, Effect, Option } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import type { AssetPolicy } from "../src/domain/asset-policy.js"
import { AuditLog, type AuditActor } from "../src/audit/audit-log.js"
import { type Chain, NATIVE_ASSETS } from "../src/domain/chain.js"
import type { CreateWithdrawalRequest, FeeQuote, FeeQuoteRequest, WithdrawalStatus } from "../src/domain/withdrawal.js"
import { Idempotency, requestHash } from "../src/idempotency.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { newId } from "../src/ids.js"
import { Accounts, Ledger } from "../src/ledger/ledger.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { fitsPrecision, fromBaseUnits, MoneyDecimal, toBaseUnits } from "../src/money.js"
import { Wallets } from "../src/wallets/wallets.js"
import { WithdrawalStore } from "../src/stores/withdrawal-store.js"
import { isNative } from "./custody-books.js"
import { CustodyConfig, withGasMargin } from "./custody-config.js"
import { EnergySource } from "./energy.js"
import { destinationProblem, unusedAddress } from "./destination-address.js"
import { OperationHandOff } from "./engine/operation-hand-off.js"
import type { HandOff } from "./engine/operations.js"
import { paysOwnFee } from "./transfer-costs.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { render } from "./withdrawal-view.js"
import { NetworkFeeUnavailable } from "./chain-errors.js"
import {
  AssetNotEnabled,
  AssetUnavailable,
  InsufficientAvailable,
  InvalidWithdrawalRequest,
  OutWithdrawalNoTaken,
  WithdrawalNotFound
} from "./withdrawal-errors.js"

const CREATE_ENDPOINT = "POST /v1/withdrawals"
/** Who approved a withdrawal the auto-approval policy let through. */
export const AUTO_APPROVER = "auto-approval policy"

/** Who asks for a withdrawal: an API key, or a console user (who then may not approve it). */
export interface Requester {
  readonly actor: AuditActor
  readonly consoleUserId?: string | undefined
}

/** Every decimal of a quote at a fixed number of fractional digits. */
const fixed = (value: MoneyDecimal, digits: number) => value.toFixed(digits)
const ceilAt = (value: MoneyDecimal, digits: number) => value.toDecimalPlaces(digits, MoneyDecimal.ROUND_UP)

/** The fee figures a new withdrawal keeps from its quote: its snapshot, never recalculated. */
export const feeSnapshot = (fees: FeeQuote) => ({
  amount: fees.amount,
  platform_fee: fees.platform_fee,
  platform_fee_bps: fees.platform_fee_bps,
  network_fee: fees.network_fee,
  network_fee_asset: fees.network_fee_asset,
  network_fee_included: fees.network_fee_included,
  total_fee: fees.total_fee,
  net_amount: fees.net_amount,
  fee_model: fees.model,
  fee_policy_version: fees.policy_version
})

/**
 * Withdrawals, the request side: the fee quote, creation with the funds locked in the same transaction
 * (auto-approved within the merchant's daily limit, and then handed to the main wallet's actor), the reads,
 * and a refund's withdrawal. The human decision is WithdrawalDecisions'; what the main wallet's actor runs
 * for an approved one is WithdrawalDriver's (withdrawal-driver.ts).
 */
export class Withdrawals extends Effect.Service<Withdrawals>()("facet/Withdrawals", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const catalog = yield* AssetCatalog
    const assetStore = yield* AssetStore
    const walletStore = yield* WalletStore
    const clients = yield* ChainClients
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const ledgerStore = yield* LedgerStore
    const idempotency = yield* Idempotency
    const config = yield* CustodyConfig
    const energy = yield* EnergySource
    const decisions = yield* WithdrawalDecisions
    const handOff = yield* OperationHandOff
    const withdrawalStore = yield* WithdrawalStore
    const policyRules = yield* WithdrawalPolicy
    const audit = yield* AuditLog
    const { find } = withdrawalStore
    const settings = yield* Config.all({
      bps: Config.integer("FACET_PLATFORM_FEE_BPS").pipe(Config.withDefault(10)),
      policyVersion: Config.string("FACET_FEE_POLICY_VERSION").pipe(Config.withDefault("2026-07-19.1"))
    }).pipe(Effect.orDie)

    /** The asset's policy for this merchant, refused (400, saying why) unless withdrawals are live for it. */
    const withdrawable = Effect.fn("Withdrawals.withdrawable")(function* (
      merchantId: string,
      chain: Chain,
      currency: string
    ) {
      const key = `${chain}-${currency.toUpperCase()}`
      const policy = (yield* catalog.policies(merchantId)).find((p) => p.asset_key === key)
      if (policy === undefined)
        return yield* new AssetUnavailable({
          assetKey: key,
          reason: `unknown asset ${key}: GET /v1/wallet-asset-policies lists the assets`
        })
      if (!policy.merchant_enabled) return yield* new AssetNotEnabled({ assetKey: key })
      if (policy.status !== "live")
        return yield* new AssetUnavailable({
          assetKey: key,
          reason: `asset ${key} is ${policy.status}: withdrawals are not live for it`
        })
      if (!policy.actions.withdraw)
        return yield* new AssetUnavailable({ assetKey: key, reason: `asset ${key} does not allow withdrawals` })
      if (!policy.signing_implemented)
        return yield* new AssetUnavailable({ assetKey: key, reason: `asset ${key} has no signing implemented` })
      return policy
    })

    /**
     * The network fee, in native base units before the margin, of sending `units` of the asset from the
     * merchant's main wallet to `toAddress`, estimated from the chain now. Without a recipient (a quote that
     * names none) the dearest one: an address that never held anything, made up for the estimate (a new
     * TRON account or token holder, a Solana token account to create, a new BEP20 holder) — a fixed one
     * could be given the asset by anyone, and the bound would quietly become the cheaper case.
     */
    const estimateNetworkFee = Effect.fn("Withdrawals.estimateNetworkFee")(function* (
      merchantId: string,
      policy: AssetPolicy,
      units: bigint,
      toAddress?: string
    ) {
      const main = yield* Effect.orDie(wallets.mainWallet(merchantId, policy.chain))
      const client = yield* Option.match(clients.get(policy.chain), {
        onNone: () => Effect.dieMessage(`no ${policy.chain} client`),
        onSome: Effect.succeed
      })
      const unavailable = (e: { readonly message: string }) =>
        new NetworkFeeUnavailable({ chain: policy.chain, reason: e.message })
      const to = toAddress ?? unusedAddress(policy.chain)
      // TRON: energy lent from the stake when it can be had; the fee is then what the lent energy leaves
      const planned =
        policy.chain === "TRC20" && !isNative(policy)
          ? yield* energy
              .plan({
                from: main.address,
                to,
                currency: policy.currency,
                amount: units,
                walletId: main.id,
                recipientMayChange: true
              })
              .pipe(Effect.catchTag("ChainRpcError", unavailable))
          : undefined
      const feeUnits =
        planned?.path === "delegated"
          ? planned.fee
          : yield* client
              .feeEstimate({
                from: main.address,
                to,
                currency: policy.currency,
                amount: units,
                sponsored: policy.chain === "SOLANA"
              })
              .pipe(Effect.catchTag("ChainRpcError", unavailable))
      return feeUnits
    })

    /**
     * The quote: platform fee rounded up at the asset's precision; the network fee estimated from the chain
     * now for `toAddress` (exact) or for the dearest recipient (an upper bound), unless the caller estimated
     * it already (`estimated`, as `estimateNetworkFee` gives it without a recipient: an upper bound).
     */
    const computeQuote = Effect.fn("Withdrawals.computeQuote")(function* (
      merchantId: string,
      policy: AssetPolicy,
      amountText: string,
      toAddress?: string,
      estimated?: bigint
    ) {
      if (!fitsPrecision(amountText, policy.amount_precision)) {
        return yield* new InvalidWithdrawalRequest({
          reason: `amount ${amountText} has more than ${policy.amount_precision} fractional digits, the precision of ${policy.asset_key}`
        })
      }
      const amount = new MoneyDecimal(amountText)
      if (amount.isZero()) return yield* new InvalidWithdrawalRequest({ reason: "amount must be greater than zero" })
      const native = NATIVE_ASSETS[policy.chain]
      const nativePolicy = (yield* catalog.policies(merchantId)).find(
        (p) => p.chain === policy.chain && p.currency === native.currency
      )
      const nativeDigits = nativePolicy?.amount_precision ?? native.decimals
      const feeUnits =
        estimated ??
        (yield* estimateNetworkFee(merchantId, policy, toBaseUnits(amountText, policy.decimals), toAddress))
      const networkFee = ceilAt(
        new MoneyDecimal(fromBaseUnits(withGasMargin(config, feeUnits), native.decimals)),
        nativeDigits
      )
      const bps = typeof policy.metadata.platform_fee_bps === "number" ? policy.metadata.platform_fee_bps : settings.bps
      const platformFee = ceilAt(amount.times(bps).div(10_000), policy.amount_precision)
      const included = paysOwnFee(policy)
      const net = included ? amount.minus(platformFee).minus(networkFee) : amount.minus(platformFee)
      if (net.lessThanOrEqualTo(0)) {
        return yield* new InvalidWithdrawalRequest({
          reason: `the net amount would be ${net.toFixed()} ${policy.currency} (amount ${amountText} minus fees ${platformFee.plus(included ? networkFee : 0).toFixed()}): nothing would arrive`
        })
      }
      const quote: FeeQuote = {
        chain: policy.chain,
        currency: policy.currency,
        fee_currency: policy.currency,
        amount: fixed(amount, policy.amount_precision),
        platform_fee: fixed(platformFee, policy.amount_precision),
        network_fee: fixed(networkFee, nativeDigits),
        network_fee_asset: native.currency,
        network_fee_included: included,
        total_fee: fixed(included ? platformFee.plus(networkFee) : platformFee, policy.amount_precision),
        net_amount: fixed(net, policy.amount_precision),
        platform_fee_bps: bps,
        model: included ? "platform_bps_plus_network_fee_deducted" : "platform_bps_network_gas_paid_by_platform",
        policy_version: settings.policyVersion,
        ...(toAddress !== undefined && estimated === undefined
          ? { fee_kind: "exact", to_address: toAddress }
          : { fee_kind: "upper_bound" })
      }
      return quote
    })

    /**
     * The optional auto-approval policy (off unless an operator sets a daily limit for the merchant's
     * asset), for withdrawals that need one approval only: approved in the creating transaction while the
     * rolling 24 h total it approved stays within the limit. The merchant's asset row is locked, so concurrent
     * creations count each other. The operation of an approval, for `create` to hand over once committed.
     */
    const autoApprove = (merchantId: string, policy: AssetPolicy, id: string, amount: string) =>
      Effect.gen(function* () {
        const none = Option.none<HandOff>()
        const setting = yield* assetStore.lockAutoApprovalLimit(merchantId, policy.chain, policy.currency)
        if (Option.isNone(setting)) return none
        const used = yield* withdrawalStore.autoApprovedTotal(merchantId, policy, AUTO_APPROVER)
        if (new MoneyDecimal(used).plus(amount).greaterThan(setting.value)) return none
        return yield* decisions
          .decideWithin(id, "APPROVED", {
            kind: "policy",
            by: AUTO_APPROVER,
            from: "policy",
            reason: `within the daily auto-approval limit of ${setting.value} ${policy.currency}`
          })
          .pipe(
            // already decided, gone, or not for the policy to approve: it waits for a person
            Effect.catchTags({
              WithdrawalNotFound: () => Effect.succeed(none),
              WithdrawalNotPending: () => Effect.succeed(none),
              DuplicateApproval: () => Effect.succeed(none),
              ApproverNotAllowed: () => Effect.succeed(none),
              PolicyRefused: () => Effect.succeed(none),
              BatchItemNotDecidable: () => Effect.succeed(none)
            })
          )
      })

    /**
     * POST /v1/withdrawal-fee-quote: with a destination (checked as a withdrawal's), exactly the fees a
     * withdrawal to it created now would carry; without one, an upper bound (the dearest recipient).
     */
    const quote = Effect.fn("Withdrawals.quote")(function* (merchantId: string, request: FeeQuoteRequest) {
      const policy = yield* withdrawable(merchantId, request.chain, request.currency)
      if (request.to_address !== undefined) {
        const problem = yield* destinationProblem(walletStore, policy.chain, request.to_address)
        if (problem !== undefined) return yield* new InvalidWithdrawalRequest({ reason: problem })
      }
      return yield* computeQuote(merchantId, policy, request.amount, request.to_address)
    })

    /**
     * POST /v1/withdrawals (and the console's form): validated in full before anything is locked; then one
     * transaction stores the withdrawal with its fee snapshot and moves `available` → `locked`. The
     * merchant's available balance row is locked first, so concurrent creations queue on it and can never
     * overdraw, and the withdrawal policy (address book, limits; 403) counts every earlier creation.
     */
    const create = Effect.fn("Withdrawals.create")(function* (
      merchantId: string,
      request: CreateWithdrawalRequest,
      idempotencyKey: Option.Option<string>,
      requester: Requester
    ) {
      const policy = yield* withdrawable(merchantId, request.chain, request.currency)
      const problem = yield* destinationProblem(walletStore, policy.chain, request.to_address)
      if (problem !== undefined) return yield* new InvalidWithdrawalRequest({ reason: problem })
      const fees = yield* computeQuote(merchantId, policy, request.amount, request.to_address)
      const gross = toBaseUnits(request.amount, policy.decimals)
      const id = newId("wdr")
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
                  ...request,
                  currency: policy.currency,
                  amount: new MoneyDecimal(request.amount).toFixed()
                })
              })
              if (Option.isSome(replay)) return { id: replay.value.resourceId, approved: Option.none<HandOff>() }
            }
            const available = yield* ledgerStore.lockedBalance(
              Accounts.available(merchantId).name,
              policy.chain,
              policy.currency
            )
            const { requiredApprovals, admittedAt } = yield* policyRules.admit(merchantId, {
              chain: policy.chain,
              currency: policy.currency,
              toAddress: request.to_address,
              amount: fees.amount
            })
            if (available < gross) {
              return yield* new InsufficientAvailable({
                chain: policy.chain,
                currency: policy.currency,
                available: fromBaseUnits(available, policy.decimals),
                requested: request.amount
              })
            }
            const inserted = yield* withdrawalStore.insert({
              id,
              merchant_id: merchantId,
              out_withdrawal_no: request.out_withdrawal_no ?? null,
              status: "PENDING",
              chain: policy.chain,
              currency: policy.currency,
              ...feeSnapshot(fees),
              to_address: request.to_address,
              required_approvals: requiredApprovals,
              admitted_at: admittedAt,
              created_by: `${requester.actor.kind}:${requester.actor.name}`,
              created_by_user_id: requester.consoleUserId ?? null
            })
            if (!inserted) {
              return yield* new OutWithdrawalNoTaken({ outWithdrawalNo: request.out_withdrawal_no ?? "" })
            }
            yield* ledger.post([
              {
                debit: Accounts.available(merchantId),
                credit: Accounts.locked(merchantId),
                chain: policy.chain,
                currency: policy.currency,
                amount: gross,
                kind: "withdrawal_lock",
                reference: id
              }
            ])
            yield* audit.record(
              merchantId,
              requester.actor,
              "withdrawal.created",
              id,
              `${fees.amount} ${policy.currency} on ${policy.chain} to ${request.to_address}; needs ${requiredApprovals} approval${requiredApprovals === 1 ? "" : "s"}`
            )
            const approved =
              requiredApprovals === 1 ? yield* autoApprove(merchantId, policy, id, request.amount) : Option.none()
            return { id, approved }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      // auto-approved: its operation goes to the main wallet's actor now that it is committed
      yield* handOff.handOver(Option.toArray(outcome.approved))
      const row = yield* find({ id: outcome.id, merchantId })
      yield* Effect.logInfo(
        `withdrawal ${outcome.id}: ${request.amount} ${policy.asset_key} to ${request.to_address} PENDING (locked)`
      )
      return yield* Option.match(row, {
        onNone: () => Effect.dieMessage(`withdrawal ${outcome.id} vanished`),
        onSome: (r) => Effect.succeed(render(r))
      })
    })

    /** GET /v1/withdrawals: a page of the merchant's withdrawals, newest first. */
    const list = Effect.fn("Withdrawals.list")(function* (
      merchantId: string,
      query: {
        readonly status?: WithdrawalStatus | undefined
        readonly limit: number
        readonly offset: number
        readonly inBatch?: boolean | undefined
      }
    ) {
      const { total, rows } = yield* withdrawalStore.page(merchantId, query)
      return { total, limit: query.limit, offset: query.offset, items: rows.map(render) }
    })

    const get = Effect.fn("Withdrawals.get")(function* (merchantId: string, id: string) {
      const row = yield* find({ id, merchantId })
      if (Option.isNone(row)) return yield* new WithdrawalNotFound({ withdrawalId: id })
      return render(row.value)
    })

    /**
     * A refund's fees: its asset refused unless withdrawals of it are live, then the quote as for any
     * withdrawal (to the customer's address when known). What the refund's creation and its claim page show.
     */
    const refundQuote = Effect.fn("Withdrawals.refundQuote")(function* (
      merchantId: string,
      request: { readonly chain: Chain; readonly currency: string; readonly amount: string },
      toAddress?: string
    ) {
      const policy = yield* withdrawable(merchantId, request.chain, request.currency)
      return yield* computeQuote(merchantId, policy, request.amount, toAddress)
    })

    /**
     * A refund's withdrawal, inside the caller's transaction (the refund's claim, which has locked the refund
     * and the merchant's available balance row): admitted by the same policy as any withdrawal (the address
     * book only when `refund_address_book` is on; 403 rolls the claim back), stored PENDING with the fee
     * snapshot quoted for the customer's address, in the audit log; never auto-approved (a person decides).
     * No funds move: the refund's lock (available → locked at its creation) is the one this withdrawal holds
     * and later spends or returns.
     */
    const createForRefund = Effect.fn("Withdrawals.createForRefund")(function* (
      merchantId: string,
      refund: {
        readonly id: string
        readonly createdBy: string
        readonly createdByUserId: string | null
      },
      fees: FeeQuote,
      toAddress: string,
      actor: AuditActor
    ) {
      const policy = yield* withdrawable(merchantId, fees.chain, fees.currency)
      const id = newId("wdr")
      const { requiredApprovals, admittedAt } = yield* policyRules.admit(merchantId, {
        chain: policy.chain,
        currency: policy.currency,
        toAddress,
        amount: fees.amount,
        kind: "refund"
      })
      yield* withdrawalStore.insert({
        id,
        merchant_id: merchantId,
        out_withdrawal_no: null,
        status: "PENDING",
        chain: policy.chain,
        currency: policy.currency,
        ...feeSnapshot(fees),
        to_address: toAddress,
        required_approvals: requiredApprovals,
        admitted_at: admittedAt,
        // the merchant asked for the refund: whoever did may not approve paying it out
        created_by: refund.createdBy,
        created_by_user_id: refund.createdByUserId,
        kind: "refund",
        refund_id: refund.id
      })
      yield* audit.record(
        merchantId,
        actor,
        "withdrawal.created",
        id,
        `refund ${refund.id}: ${fees.amount} ${policy.currency} on ${policy.chain} to ${toAddress} (named by the customer); needs ${requiredApprovals} approval${requiredApprovals === 1 ? "" : "s"}`
      )
      // never auto-approved: the destination is whatever the customer typed on a page reached by a link,
      // so a person of the merchant looks at it before anything leaves
      return id
    })

    return {
      quote,
      create,
      get,
      list,
      withdrawable,
      estimateNetworkFee,
      computeQuote,
      refundQuote,
      createForRefund
    } as const
  }),
  dependencies: [
    AssetStore.Default,
    LedgerStore.Default,
    WalletStore.Default,
    WithdrawalStore.Default,
    AssetCatalog.Default,
    Ledger.Default,
    Wallets.Default,
    EnergySource.Default,
    AuditLog.Default,
    Idempotency.Default,
    WithdrawalPolicy.Default,
    WithdrawalDecisions.Default
  ]
}) {}
