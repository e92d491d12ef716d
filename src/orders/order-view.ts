import { DateTime } from "effect"
import type { Order } from "../domain/order.js"
import { MoneyDecimal, normalizeDecimal } from "../money.js"
import type { OrderAssetRow, OrderRow } from "../stores/order-store.js"
import type { RefundTotalRow } from "../stores/refund-store.js"
import { paidValue } from "./order-settlement.js"

const iso = (date: Date) => DateTime.formatIso(DateTime.unsafeFromDate(date))

/** The Order resource as the API and the webhooks show it. */
export const renderOrder = (
  row: OrderRow,
  assets: ReadonlyArray<OrderAssetRow>,
  baseUrl: string,
  refundedAmount = "0"
): Order => {
  const sorted = [...assets].sort((a, b) => a.position - b.position)
  const first = sorted[0]
  return {
    order_id: row.id,
    out_trade_no: row.out_trade_no,
    status: row.status,
    amount: row.amount,
    paid_amount: row.paid_amount,
    refunded_amount: refundedAmount,
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
    ...(row.underpaid_amount === null ? {} : { underpaid_amount: normalizeDecimal(row.underpaid_amount) }),
    ...overpaid(row),
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
      wallet_id: a.wallet_id,
      ...(new MoneyDecimal(a.underpayment_tolerance).isZero()
        ? {}
        : { underpayment_tolerance: normalizeDecimal(a.underpayment_tolerance) })
    })),
    ...(row.payment_link_id === null ? {} : { payment_link_id: row.payment_link_id }),
    expire_at: iso(row.expire_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  }
}

/** `overpaid_amount`: what the confirmed payments hold beyond the amount (both at the currency's precision). */
const overpaid = (row: OrderRow): { readonly overpaid_amount?: string } => {
  const beyond = new MoneyDecimal(row.paid_amount).minus(row.amount)
  return beyond.gt(0) ? { overpaid_amount: normalizeDecimal(beyond.toFixed()) } : {}
}

/**
 * What an order's refunds give back, in its currency, counted as `paid_amount` counts payments: each accepted
 * asset's refunds at the order's own price of that asset (amount / asked), summed exactly and rounded down at
 * the order currency's precision. Refunds of an asset the order did not ask for (sent to its address all the
 * same) are not in `paid_amount` and so not here either.
 */
export const refundedValue = (
  orderAmount: string,
  assets: ReadonlyArray<OrderAssetRow>,
  refunds: ReadonlyArray<RefundTotalRow>,
  digits: number
): string =>
  paidValue(
    orderAmount,
    assets.map((a) => ({ chain: a.chain, currency: a.currency, asked: a.amount })),
    refunds.map((r) => ({
      chain: r.chain,
      currency: r.currency,
      amount: r.total,
      status: "confirmed",
      blockTime: null
    })),
    digits
  )
