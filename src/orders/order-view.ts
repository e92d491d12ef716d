import { DateTime, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { CheckoutMode, type Order, OrderStatus } from "../domain/order.js"

export const OrderRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  out_trade_no: Schema.String,
  status: OrderStatus,
  amount: Schema.String,
  paid_amount: Schema.String,
  currency: Schema.String,
  chain: Chain,
  checkout_mode: CheckoutMode,
  exchange_rate: Schema.NullOr(Schema.String),
  pay_address: Schema.String,
  wallet_id: Schema.String,
  notify_url: Schema.NullOr(Schema.String),
  return_url: Schema.NullOr(Schema.String),
  merchant_user_id: Schema.NullOr(Schema.String),
  product_name: Schema.NullOr(Schema.String),
  product_desc: Schema.NullOr(Schema.String),
  metadata: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  tx_hash: Schema.NullOr(Schema.String),
  late_payment: Schema.Boolean,
  expire_at: Schema.DateFromSelf,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type OrderRow = typeof OrderRow.Type

export const OrderAssetRow = Schema.Struct({
  order_id: Schema.String,
  position: Schema.Number,
  chain: Chain,
  currency: Schema.String,
  wallet_id: Schema.String,
  pay_address: Schema.String,
  amount: Schema.String,
  pay_qrcode: Schema.NullOr(Schema.String)
})
export type OrderAssetRow = typeof OrderAssetRow.Type

const iso = (date: Date) => DateTime.formatIso(DateTime.unsafeFromDate(date))

/** The Order resource as the API and the webhooks show it. */
export const renderOrder = (row: OrderRow, assets: ReadonlyArray<OrderAssetRow>, baseUrl: string): Order => {
  const sorted = [...assets].sort((a, b) => a.position - b.position)
  const first = sorted[0]
  return {
    order_id: row.id,
    out_trade_no: row.out_trade_no,
    status: row.status,
    amount: row.amount,
    paid_amount: row.paid_amount,
    currency: row.currency,
    chain: row.chain,
    checkout_mode: row.checkout_mode,
    pay_address: row.pay_address,
    ...(first === undefined || first.pay_qrcode === null ? {} : { pay_qrcode: first.pay_qrcode }),
    checkout_url: `${baseUrl}/checkout/${row.id}`,
    ...(row.return_url === null ? {} : { return_url: row.return_url }),
    ...(row.notify_url === null ? {} : { notify_url: row.notify_url }),
    ...(row.tx_hash === null ? {} : { tx_hash: row.tx_hash }),
    late_payment: row.late_payment,
    ...(row.exchange_rate === null ? {} : { exchange_rate: row.exchange_rate }),
    ...(row.merchant_user_id === null ? {} : { merchant_user_id: row.merchant_user_id }),
    ...(row.product_name === null ? {} : { product_name: row.product_name }),
    ...(row.product_desc === null ? {} : { product_desc: row.product_desc }),
    ...(row.metadata === null ? {} : { metadata: row.metadata }),
    available_assets: sorted.map((a) => ({
      asset_key: `${a.chain}-${a.currency}`,
      chain: a.chain,
      currency: a.currency,
      amount: a.amount,
      pay_address: a.pay_address,
      ...(a.pay_qrcode === null ? {} : { pay_qrcode: a.pay_qrcode }),
      wallet_id: a.wallet_id
    })),
    expire_at: iso(row.expire_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  }
}
