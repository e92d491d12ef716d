import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"
import { LimitOffset } from "./order.js"

const strict = { onExcessProperty: "error", errors: "all" } as const

export const ExternalUserId = Schema.String.pipe(
  Schema.filter((id) => id.trim().length >= 1 || "external_user_id must have at least 1 character"),
  Schema.maxLength(256, { message: () => "external_user_id must have at most 256 characters" })
)

export const CreateDepositAddressRequest = Schema.Struct({
  external_user_id: ExternalUserId,
  chain: Chain,
  currency: Schema.String.pipe(Schema.minLength(1)),
  label: Schema.optional(
    Schema.String.pipe(Schema.maxLength(256, { message: () => "label must have at most 256 characters" }))
  )
}).annotations({ identifier: "CreateDepositAddressRequest", parseOptions: strict })
export type CreateDepositAddressRequest = typeof CreateDepositAddressRequest.Type

export const BATCH_LIMIT = 1000

/**
 * A batch item as sent: only its shape is checked with the request, so one bad item fails alone (with
 * `continue_on_error`) instead of the whole batch; its content is checked as CreateDepositAddressRequest.
 */
export const BatchItemInput = Schema.Struct({
  external_user_id: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  label: Schema.optional(Schema.String)
}).annotations({ identifier: "BatchCreateDepositAddressItem" })

export const BatchCreateDepositAddressRequest = Schema.Struct({
  items: Schema.optional(
    Schema.Array(BatchItemInput).pipe(
      Schema.maxItems(BATCH_LIMIT, { message: () => `a batch holds at most ${BATCH_LIMIT} items` })
    )
  ),
  external_user_ids: Schema.optional(Schema.Array(ExternalUserId)),
  chain: Schema.optional(Chain),
  currency: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  label_prefix: Schema.optional(Schema.String),
  continue_on_error: Schema.optionalWith(Schema.Boolean, { default: () => false })
}).annotations({ identifier: "BatchCreateDepositAddressRequest", parseOptions: strict })
export type BatchCreateDepositAddressRequest = typeof BatchCreateDepositAddressRequest.Type

export const DepositAddress = Schema.Struct({
  id: Schema.String,
  external_user_id: Schema.String,
  wallet_id: Schema.String,
  wallet_no: Schema.String,
  network_account_id: Schema.String,
  shared_network_address: Schema.Boolean,
  chain: Chain,
  currency: Schema.String,
  address: Schema.String,
  status: Schema.String,
  label: Schema.optional(Schema.String),
  balance: DecimalString,
  available_balance: DecimalString,
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "DepositAddress" })
export type DepositAddress = typeof DepositAddress.Type

export const DepositAddressList = Schema.Struct({
  total: Schema.Int,
  limit: Schema.Int,
  offset: Schema.Int,
  items: Schema.Array(DepositAddress)
}).annotations({ identifier: "DepositAddressList" })

export const BatchItemResult = Schema.Struct({
  index: Schema.Int,
  external_user_id: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  status: Schema.Literal("created", "existing", "failed"),
  deposit_address: Schema.optional(DepositAddress),
  error: Schema.optional(Schema.String)
})
export type BatchItemResult = typeof BatchItemResult.Type

export const BatchResult = Schema.Struct({
  total: Schema.Int,
  succeeded: Schema.Int,
  failed: Schema.Int,
  items: Schema.Array(BatchItemResult)
}).annotations({ identifier: "BatchCreateDepositAddressResult" })

export const DepositAddressListQuery = Schema.Struct({
  external_user_id: Schema.optional(Schema.String),
  chain: Schema.optional(Chain),
  currency: Schema.optional(Schema.String),
  ...LimitOffset
}).annotations({ parseOptions: { errors: "all" } })

export const DepositTransactionsQuery = Schema.Struct({ limit: LimitOffset.limit }).annotations({
  parseOptions: { errors: "all" }
})
