import { Schema } from "effect"
import { Chain } from "./chain.js"
import { LimitOffset } from "./order.js"

/** One entry of a merchant's withdrawal address book, as GET /v1/withdrawal-addresses shows it. */
export const WithdrawalAddress = Schema.Struct({
  id: Schema.String,
  chain: Chain,
  address: Schema.String,
  label: Schema.String,
  status: Schema.Literal("pending", "usable").annotations({
    description: "pending: added, still cooling off until usable_from; usable: withdrawals may go there"
  }),
  usable_from: Schema.String,
  created_at: Schema.String,
  created_by: Schema.String
}).annotations({ identifier: "WithdrawalAddress" })
export type WithdrawalAddress = typeof WithdrawalAddress.Type

export const WithdrawalAddressList = Schema.Struct({
  address_book: Schema.Literal("on", "off").annotations({
    description: "on: POST /v1/withdrawals only to a usable entry (403 otherwise)"
  }),
  cooling_off_seconds: Schema.Number.annotations({ description: "How long a new entry waits before it is usable" }),
  total: Schema.Number,
  limit: Schema.Number,
  offset: Schema.Number,
  items: Schema.Array(WithdrawalAddress)
}).annotations({ identifier: "WithdrawalAddressList" })
export type WithdrawalAddressList = typeof WithdrawalAddressList.Type

export const WithdrawalAddressListQuery = Schema.Struct({
  chain: Schema.optional(Chain),
  ...LimitOffset
}).annotations({ parseOptions: { errors: "all" } })
