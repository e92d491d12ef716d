import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"
import { LimitOffset } from "./order.js"
import { CreateWithdrawalRequest, WithdrawalApproval, WithdrawalStatus } from "./withdrawal.js"

/** The most items one batch may hold. */
export const MAX_BATCH_ITEMS = 500

const strict = { onExcessProperty: "error", errors: "all" } as const

/** POST /v1/withdrawal-batches: 1 to 500 withdrawal requests, each exactly as POST /v1/withdrawals takes one. */
export const CreateWithdrawalBatchRequest = Schema.Struct({
  items: Schema.Array(CreateWithdrawalRequest)
    .pipe(
      Schema.minItems(1, { message: () => "a batch holds at least one item" }),
      Schema.maxItems(MAX_BATCH_ITEMS, { message: () => `a batch holds at most ${MAX_BATCH_ITEMS} items` })
    )
    .annotations({
      description:
        "1 to 500 withdrawal requests, each exactly a CreateWithdrawalRequest; every item needs its own out_withdrawal_no, unique in the batch and among the merchant's withdrawals"
    }),
  description: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500)))
}).annotations({ identifier: "CreateWithdrawalBatchRequest", parseOptions: strict })
export type CreateWithdrawalBatchRequest = typeof CreateWithdrawalBatchRequest.Type

export const WithdrawalBatchStatus = Schema.Literal(
  "PENDING",
  "PROCESSING",
  "COMPLETED",
  "REJECTED",
  "CANCELLED"
).annotations({
  identifier: "WithdrawalBatchStatus",
  description:
    "PENDING (every item locked, awaiting the batch's approvals) → PROCESSING (approved once; each item is being sent) → COMPLETED (every item COMPLETED or FAILED: see item_counts); PENDING → REJECTED | CANCELLED (every item with it, unlocked)."
})
export type WithdrawalBatchStatus = typeof WithdrawalBatchStatus.Type

/** One asset's share of a batch. */
export const WithdrawalBatchTotal = Schema.Struct({
  chain: Chain,
  currency: Schema.String,
  count: Schema.Number,
  amount: DecimalString,
  net_amount: DecimalString,
  total_fee: DecimalString
}).annotations({ identifier: "WithdrawalBatchTotal" })

/** How many of a batch's items are in each withdrawal status (every status, 0 included). */
export const WithdrawalBatchItemCounts = Schema.Struct({
  PENDING: Schema.Number,
  APPROVED: Schema.Number,
  REJECTED: Schema.Number,
  CANCELLED: Schema.Number,
  BROADCAST: Schema.Number,
  COMPLETED: Schema.Number,
  FAILED: Schema.Number
}).annotations({ identifier: "WithdrawalBatchItemCounts" })
export type WithdrawalBatchItemCounts = typeof WithdrawalBatchItemCounts.Type

export const WithdrawalBatch = Schema.Struct({
  batch_id: Schema.String,
  status: WithdrawalBatchStatus,
  description: Schema.NullOr(Schema.String),
  item_count: Schema.Number,
  totals: Schema.Array(WithdrawalBatchTotal).annotations({ description: "Per asset: items, gross, net, fees" }),
  item_counts: WithdrawalBatchItemCounts,
  required_approvals: Schema.Number.annotations({
    description: "Distinct approvals the batch needs: the most any of its items would need alone"
  }),
  approvals: Schema.Array(WithdrawalApproval).annotations({ description: "Approvals recorded so far, oldest first" }),
  decided_by: Schema.NullOr(Schema.String),
  decision_reason: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "WithdrawalBatch" })
export type WithdrawalBatch = typeof WithdrawalBatch.Type

export const WithdrawalBatchList = Schema.Struct({
  total: Schema.Number,
  limit: Schema.Number,
  offset: Schema.Number,
  items: Schema.Array(WithdrawalBatch)
}).annotations({ identifier: "WithdrawalBatchList" })

export const WithdrawalBatchListQuery = Schema.Struct({
  status: Schema.optional(WithdrawalBatchStatus),
  ...LimitOffset
}).annotations({ parseOptions: { errors: "all" } })

export const WithdrawalBatchItemsQuery = Schema.Struct({
  status: Schema.optional(WithdrawalStatus),
  ...LimitOffset
}).annotations({ parseOptions: { errors: "all" } })

/** Why one item of a refused batch was refused; `index` is its place in `items` (0-based). */
export const WithdrawalBatchItemProblem = Schema.Struct({
  index: Schema.Number,
  out_withdrawal_no: Schema.optional(Schema.String),
  error: Schema.String
}).annotations({ identifier: "WithdrawalBatchItemProblem" })
export type WithdrawalBatchItemProblem = typeof WithdrawalBatchItemProblem.Type

const RefusalFields = { error: Schema.String, items: Schema.Array(WithdrawalBatchItemProblem) }

/** A batch refused whole, as the wire shows it: `{error, items}`, every refused item listed. */
export class BatchInvalidError extends Schema.TaggedError<BatchInvalidError>()("BatchInvalid", RefusalFields) {}
export class BatchForbiddenError extends Schema.TaggedError<BatchForbiddenError>()("BatchForbidden", RefusalFields) {}
export class BatchConflictError extends Schema.TaggedError<BatchConflictError>()("BatchConflict", RefusalFields) {}

const RefusalBody = Schema.Struct(RefusalFields)

/** On the wire a refusal is `{error, items}`: the tag is ours, not the client's. */
const refusalOnTheWire = <
  Tag extends string,
  Self extends { readonly _tag: Tag; readonly error: string; readonly items: ReadonlyArray<WithdrawalBatchItemProblem> }
>(
  tag: Tag,
  errorClass: Schema.Schema<Self, typeof RefusalBody.Type & { readonly _tag: Tag }>,
  status: number,
  description: string
) =>
  Schema.transform(RefusalBody, errorClass, {
    strict: true,
    decode: ({ error, items }) => ({ _tag: tag, error, items }),
    encode: ({ error, items }) => ({ error, items })
  }).annotations({ ...HttpApiSchema.annotations({ status }), description, identifier: tag })

export const BatchInvalid = refusalOnTheWire(
  "BatchInvalid",
  BatchInvalidError,
  400,
  "The batch is refused whole, nothing locked: `items` lists every invalid item with why"
)
export const BatchForbidden = refusalOnTheWire(
  "BatchForbidden",
  BatchForbiddenError,
  403,
  "The withdrawal policy refuses the batch, nothing locked: `items` lists the items it refuses, `error` the totals over a limit"
)
export const BatchConflict = refusalOnTheWire(
  "BatchConflict",
  BatchConflictError,
  409,
  "An out_withdrawal_no is already used by one of the merchant's withdrawals: `items` lists them; nothing locked"
)
