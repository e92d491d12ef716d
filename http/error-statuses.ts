import { Effect } from "effect"
import type {
  AddressAlreadyInBook,
  AddressBookEntryNotFound,
  InvalidAddressBookEntry
} from "../custody/address-book-errors.js"
import type { GasWalletEmpty, NetworkFeeUnavailable } from "../custody/chain-errors.js"
import type {
  InsufficientUncollected,
  InvalidSweepRequest,
  NothingToSweep,
  ReceiveWalletNotFound,
  SweepInFlight,
  SweepNotFound,
  WalletAssetNotFound
} from "../custody/collection-errors.js"
import type {
  ApproverNotAllowed,
  AssetNotEnabled,
  AssetNotEnrolled,
  AssetUnavailable,
  DuplicateApproval,
  InsufficientAvailable,
  InvalidWithdrawalRequest,
  OutWithdrawalNoTaken,
  WithdrawalNotFound,
  WithdrawalNotPending
} from "../custody/withdrawal-errors.js"
import type { InvalidPolicySetting, PolicyChangeNotFound, PolicyRefused } from "../custody/withdrawal-policy-errors.js"
import type {
  BatchItemNotDecidable,
  InvalidWithdrawalBatch,
  WithdrawalBatchConflict,
  WithdrawalBatchNotFound,
  WithdrawalBatchNotPending,
  WithdrawalBatchPolicyRefused
} from "../custody/withdrawal-batch-errors.js"
import type {
  InvalidRefundClaim,
  InvalidRefundRequest,
  RefundClaimNotFound,
  RefundNeedsCollection,
  RefundNotClaimable,
  RefundNotFound
} from "../custody/refund-errors.js"
import type { AssetNotEnrollable, UnknownAsset } from "../src/assets/asset-errors.js"
import type { DepositAddressNotFound, InvalidDepositAddressRequest } from "../src/deposits/deposit-address-errors.js"
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ServiceUnavailableError
} from "../src/domain/errors.js"
import type { IdempotencyKeyReused } from "../src/idempotency-errors.js"
import type { MerchantNotFound, NotOwnMerchant, ProjectNameTaken } from "../src/merchants/merchant-errors.js"
import type { InvalidOrderRequest, InvalidUnderpaymentTolerance, OrderNotFound } from "../src/orders/order-errors.js"
import type { InvalidLedgerExport } from "../src/ledger/ledger-export.js"
import type {
  InvalidPaymentLinkRequest,
  InvalidPaymentLinkVisit,
  PaymentLinkClosed,
  PaymentLinkNotFound
} from "../src/payment-links/payment-link-errors.js"

/**
 * The one place where a failure named by a service becomes a contract category, and so a status
 * (section 7): services say what went wrong, the edge says what that means to a client. The wire stays
 * `{error}` with the error's message.
 */

/** Every failure a service names: one added here without a category in `categoryOf` does not compile. */
export type NamedError =
  // kernel: orders, idempotency, assets, deposit addresses, merchants
  | AssetNotEnrollable
  | DepositAddressNotFound
  | IdempotencyKeyReused
  | InvalidDepositAddressRequest
  | InvalidLedgerExport
  | InvalidOrderRequest
  | InvalidUnderpaymentTolerance
  | MerchantNotFound
  | NotOwnMerchant
  | OrderNotFound
  | ProjectNameTaken
  | UnknownAsset
  // custody: withdrawals, decisions, policy, address book
  | AddressAlreadyInBook
  | AddressBookEntryNotFound
  | ApproverNotAllowed
  | AssetNotEnabled
  | AssetNotEnrolled
  | AssetUnavailable
  | DuplicateApproval
  | InsufficientAvailable
  | InvalidAddressBookEntry
  | InvalidPolicySetting
  | InvalidWithdrawalRequest
  | OutWithdrawalNoTaken
  | PolicyChangeNotFound
  | PolicyRefused
  | WithdrawalNotFound
  | WithdrawalNotPending
  // custody: withdrawal batches
  | BatchItemNotDecidable
  | InvalidWithdrawalBatch
  | WithdrawalBatchConflict
  | WithdrawalBatchNotFound
  | WithdrawalBatchNotPending
  | WithdrawalBatchPolicyRefused
  // custody: refunds
  | InvalidRefundClaim
  | InvalidRefundRequest
  | RefundClaimNotFound
  | RefundNeedsCollection
  | RefundNotClaimable
  | RefundNotFound
  // custody: collections, portfolio, chains
  | GasWalletEmpty
  | InsufficientUncollected
  | InvalidSweepRequest
  | NetworkFeeUnavailable
  | NothingToSweep
  | ReceiveWalletNotFound
  | SweepInFlight
  | SweepNotFound
  | WalletAssetNotFound
  // payment links
  | InvalidPaymentLinkRequest
  | InvalidPaymentLinkVisit
  | PaymentLinkClosed
  | PaymentLinkNotFound

/** The categories a named failure can fall into (the others are the edge's own: auth, limits, defects). */
interface Categories {
  readonly BadRequest: BadRequestError
  readonly Forbidden: ForbiddenError
  readonly NotFound: NotFoundError
  readonly Conflict: ConflictError
  readonly ServiceUnavailable: ServiceUnavailableError
}

const build: { readonly [K in keyof Categories]: (error: string) => Categories[K] } = {
  BadRequest: (error) => new BadRequestError({ error }),
  Forbidden: (error) => new ForbiddenError({ error }),
  NotFound: (error) => new NotFoundError({ error }),
  Conflict: (error) => new ConflictError({ error }),
  ServiceUnavailable: (error) => new ServiceUnavailableError({ error })
}

/** Each named failure's category: a named failure missing here does not compile. */
export const categoryOf = {
  // kernel: orders, idempotency, assets, deposit addresses, merchants
  AssetNotEnrollable: "BadRequest",
  DepositAddressNotFound: "NotFound",
  IdempotencyKeyReused: "Conflict",
  InvalidDepositAddressRequest: "BadRequest",
  InvalidLedgerExport: "BadRequest",
  InvalidOrderRequest: "BadRequest",
  InvalidUnderpaymentTolerance: "BadRequest",
  MerchantNotFound: "NotFound",
  NotOwnMerchant: "Forbidden",
  OrderNotFound: "NotFound",
  ProjectNameTaken: "Conflict",
  UnknownAsset: "BadRequest",
  // custody: withdrawals, decisions, policy, address book
  AddressAlreadyInBook: "Conflict",
  AddressBookEntryNotFound: "NotFound",
  ApproverNotAllowed: "Forbidden",
  AssetNotEnabled: "BadRequest",
  AssetNotEnrolled: "NotFound",
  AssetUnavailable: "BadRequest",
  DuplicateApproval: "Conflict",
  InsufficientAvailable: "BadRequest",
  InvalidAddressBookEntry: "BadRequest",
  InvalidPolicySetting: "BadRequest",
  InvalidWithdrawalRequest: "BadRequest",
  OutWithdrawalNoTaken: "Conflict",
  PolicyChangeNotFound: "NotFound",
  PolicyRefused: "Forbidden",
  WithdrawalNotFound: "NotFound",
  WithdrawalNotPending: "Conflict",
  // custody: withdrawal batches (the API answers the three refusals of a new batch with their items too)
  BatchItemNotDecidable: "Conflict",
  InvalidWithdrawalBatch: "BadRequest",
  WithdrawalBatchConflict: "Conflict",
  WithdrawalBatchNotFound: "NotFound",
  WithdrawalBatchNotPending: "Conflict",
  WithdrawalBatchPolicyRefused: "Forbidden",
  // custody: refunds
  InvalidRefundClaim: "BadRequest",
  InvalidRefundRequest: "BadRequest",
  RefundClaimNotFound: "NotFound",
  RefundNeedsCollection: "BadRequest",
  RefundNotClaimable: "Conflict",
  RefundNotFound: "NotFound",
  // custody: collections, portfolio, chains
  GasWalletEmpty: "ServiceUnavailable",
  InsufficientUncollected: "BadRequest",
  InvalidSweepRequest: "BadRequest",
  NetworkFeeUnavailable: "ServiceUnavailable",
  NothingToSweep: "BadRequest",
  ReceiveWalletNotFound: "NotFound",
  SweepInFlight: "Conflict",
  SweepNotFound: "NotFound",
  WalletAssetNotFound: "NotFound",
  // payment links
  InvalidPaymentLinkRequest: "BadRequest",
  InvalidPaymentLinkVisit: "BadRequest",
  PaymentLinkClosed: "Conflict",
  PaymentLinkNotFound: "NotFound"
} as const satisfies { readonly [Tag in NamedError["_tag"]]: keyof Categories }

/** The category error a named failure becomes. */
export type CategoryOf<E extends NamedError> = Categories[(typeof categoryOf)[E["_tag"]]]

const category = <K extends keyof Categories>(key: K, error: string): Categories[K] => build[key](error)

const tagOf = <E extends NamedError>(e: E): E["_tag"] => e._tag
const categoryKey = <T extends NamedError["_tag"]>(tag: T): (typeof categoryOf)[T] => categoryOf[tag]

/** A named failure as its contract category, carrying its message as `error`. */
export const toCategory = <E extends NamedError>(e: E): CategoryOf<E> => category(categoryKey(tagOf(e)), e.message)

const isNamed = (u: unknown): u is NamedError =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && Object.hasOwn(categoryOf, u._tag)

/** Every named failure of `self` as its category; other failures (already categories) pass through. */
export const categorized = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    self,
    (e): e is Extract<E, NamedError> => isNamed(e),
    (e) => Effect.fail(toCategory(e))
  )
