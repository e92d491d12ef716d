import { Schema } from "effect"
import { DecimalString, RequestAmount } from "../money.js"
import { Chain } from "./chain.js"
import { LimitOffset } from "./order.js"

export const WithdrawalStatus = Schema.Literal(
  "PENDING",
  "APPROVED",
  "REJECTED",
  "CANCELLED",
  "BROADCAST",
  "COMPLETED",
  "FAILED"
).annotations({
  identifier: "WithdrawalStatus",
  description:
    "PENDING (funds locked, awaiting a human in the console) → APPROVED → BROADCAST → COMPLETED | FAILED; PENDING → REJECTED | CANCELLED. REJECTED, CANCELLED and FAILED unlock the funds."
})
export type WithdrawalStatus = typeof WithdrawalStatus.Type

const strict = { onExcessProperty: "error", errors: "all" } as const

/** A withdrawal's destination as a request gives it (its chain's format is checked by the service). */
const ToAddress = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128))

/**
 * POST /v1/withdrawal-fee-quote: chain, currency and amount required here (the contract leaves it open);
 * optionally the destination, which makes the quote exact; nothing else.
 */
export const FeeQuoteRequest = Schema.Struct({
  chain: Chain,
  currency: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(16)),
  amount: RequestAmount,
  to_address: Schema.optional(
    ToAddress.annotations({
      description:
        "The withdrawal's destination, checked as POST /v1/withdrawals checks it: the quote is then exact for it (fee_kind exact). Without it the quote is an upper bound: a recipient that never held the asset, the dearest case"
    })
  )
}).annotations({ identifier: "WithdrawalFeeQuoteRequest", parseOptions: strict })
export type FeeQuoteRequest = typeof FeeQuoteRequest.Type

/** What a quote's figures are: a withdrawal's to the quoted destination, or the most any recipient costs. */
export const FeeKind = Schema.Literal("exact", "upper_bound").annotations({
  identifier: "WithdrawalFeeKind",
  description:
    "exact: a withdrawal of this amount to to_address created now carries exactly these fees and net_amount. upper_bound: no destination was given; network_fee (and, for a native, total_fee) is the most any recipient costs now and net_amount the least a native's payee receives (a recipient that never held the asset: TRON a new account or a new token holder, ~130k energy against ~64k for USDT; Solana a token account to create, its rent; BEP20 a new token holder)"
})
export type FeeKind = typeof FeeKind.Type

/** The fee figures a quote gives and a withdrawal keeps as its snapshot (decimals in the asset's units). */
const FeeFields = {
  chain: Chain,
  currency: Schema.String,
  amount: DecimalString,
  platform_fee: DecimalString,
  network_fee: DecimalString,
  network_fee_asset: Schema.String,
  network_fee_included: Schema.Boolean,
  total_fee: DecimalString,
  net_amount: DecimalString
}

export const FeeQuote = Schema.Struct({
  ...FeeFields,
  fee_currency: Schema.String,
  platform_fee_bps: Schema.Number,
  model: Schema.String,
  policy_version: Schema.String,
  fee_kind: FeeKind,
  to_address: Schema.optional(
    Schema.String.annotations({ description: "The destination the quote is exact for (absent: an upper bound)" })
  )
}).annotations({
  identifier: "WithdrawalFeeQuote",
  description:
    "Every decimal at the asset's precision (network_fee at its gas asset's). Token withdrawals: network_fee is a native gas budget paid by the platform, not deducted; natives: included and deducted from the amount. fee_kind says whether the figures are exact for to_address or an upper bound; a withdrawal is never charged a network fee above the one it was created with."
})
export type FeeQuote = typeof FeeQuote.Type

/** POST /v1/withdrawals: no fee field (400), no other field. */
export const CreateWithdrawalRequest = Schema.Struct({
  chain: Chain,
  currency: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(16)),
  amount: RequestAmount,
  to_address: ToAddress,
  out_withdrawal_no: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128)))
}).annotations({ identifier: "CreateWithdrawalRequest", parseOptions: strict })
export type CreateWithdrawalRequest = typeof CreateWithdrawalRequest.Type

/** One recorded approval: a console user (login), the operator (`--by` name), or the auto-approval policy. */
export const WithdrawalApproval = Schema.Struct({
  approved_by: Schema.String,
  approver_kind: Schema.Literal("console_user", "operator", "policy"),
  approved_at: Schema.String
}).annotations({ identifier: "WithdrawalApproval" })

export const Withdrawal = Schema.Struct({
  withdrawal_id: Schema.String,
  out_withdrawal_no: Schema.NullOr(Schema.String),
  status: WithdrawalStatus,
  ...FeeFields,
  to_address: Schema.String,
  tx_hash: Schema.NullOr(Schema.String),
  fee_policy_version: Schema.String,
  failure_reason: Schema.NullOr(Schema.String),
  required_approvals: Schema.Number.annotations({
    description:
      "Distinct approvals this withdrawal needs (the merchant's quorum policy, more above an amount); PENDING until reached"
  }),
  approvals: Schema.Array(WithdrawalApproval).annotations({ description: "Approvals recorded so far, oldest first" }),
  kind: Schema.Literal("withdrawal", "refund").annotations({
    description:
      "withdrawal: the merchant's own payout; refund: a refund's, its destination named by the customer on the refund's claim page"
  }),
  refund_id: Schema.optional(Schema.String).annotations({ description: "A refund's withdrawal: its refund" }),
  order_id: Schema.optional(Schema.String).annotations({ description: "A refund's withdrawal: the order refunded" }),
  batch_id: Schema.optional(Schema.String).annotations({
    description:
      "The withdrawal batch this withdrawal is an item of (absent for a withdrawal asked for alone): it is decided with its batch, never alone"
  }),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "Withdrawal" })
export type Withdrawal = typeof Withdrawal.Type

export const WithdrawalList = Schema.Struct({
  total: Schema.Number,
  limit: Schema.Number,
  offset: Schema.Number,
  items: Schema.Array(Withdrawal)
}).annotations({ identifier: "WithdrawalList" })

export const WithdrawalListQuery = Schema.Struct({
  status: Schema.optional(WithdrawalStatus),
  ...LimitOffset
}).annotations({ parseOptions: { errors: "all" } })

/** Body of wallet.withdrawal.completed / wallet.withdrawal.failed. */
export const WithdrawalWebhook = Schema.Struct({
  event: Schema.Literal("wallet.withdrawal.completed", "wallet.withdrawal.failed"),
  withdrawal: Withdrawal,
  created_at: Schema.String
}).annotations({ identifier: "WithdrawalWebhook" })
