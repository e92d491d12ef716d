import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import type { FeeQuote } from "../src/domain/withdrawal.js"
import type { ClaimRow } from "../src/stores/refund-store.js"
import { renderClaimPage } from "./refund-claim-page.js"

const at = new Date("2026-11-29T08:00:00Z")

/** A TRX refund waiting for its customer's address. */
const refund: ClaimRow = {
  id: "rfd_1",
  merchant_id: "mer_1",
  merchant_name: "Atelier Nord",
  order_id: "ord_1",
  status: "PENDING_CLAIM",
  chain: "TRC20",
  currency: "TRX",
  amount: "50",
  order_amount: null,
  rate: null,
  reason: null,
  claim_expires_at: at,
  to_address: null,
  withdrawal_id: null,
  failure_reason: null,
  created_by: "api_key:test",
  created_by_user_id: null,
  created_at: at,
  updated_at: at,
  claimed_at: null,
  finished_at: null,
  link_expired: false,
  net_amount: null,
  tx_hash: null,
  withdrawal_status: null
}

/** The fees of a TRX withdrawal of 50, as the quote gives them (a new account's creation fee in the bound). */
const fees: FeeQuote = {
  chain: "TRC20",
  currency: "TRX",
  fee_currency: "TRX",
  amount: "50.000000",
  platform_fee: "0.050000",
  network_fee: "1.885000",
  network_fee_asset: "TRX",
  network_fee_included: true,
  total_fee: "1.935000",
  net_amount: "48.065000",
  platform_fee_bps: 10,
  model: "platform_bps_plus_network_fee_deducted",
  policy_version: "2026-07-19.1",
  fee_kind: "upper_bound"
}

describe("the refund claim page's fee line", () => {
  it("before an address is known a native's fees are the quote's upper bound: the network fee at most, the net at least", () => {
    const page = renderClaimPage({ refund, fees: Option.some(fees) })
    expect(page).toContain("a network fee of at most 1.885 TRX")
    expect(page).toContain('You receive at least <strong id="net">48.065 TRX</strong>')
    expect(page).toContain("the exact figure is set when you send the form")
    expect(page).not.toContain("about")
  })

  it("exact figures are shown as they are", () => {
    const exact: FeeQuote = { ...fees, fee_kind: "exact", to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" }
    const page = renderClaimPage({ refund, fees: Option.some(exact) })
    expect(page).toContain("a network fee of 1.885 TRX")
    expect(page).toContain('You receive <strong id="net">48.065 TRX</strong>.')
  })

  it("a token's network fee is the platform's: not on the page, the net as quoted", () => {
    const usdt: FeeQuote = {
      ...fees,
      currency: "USDT",
      fee_currency: "USDT",
      network_fee_included: false,
      total_fee: "0.050000",
      net_amount: "49.950000"
    }
    const page = renderClaimPage({ refund: { ...refund, currency: "USDT" }, fees: Option.some(usdt) })
    expect(page).not.toContain("network fee")
    expect(page).toContain('You receive <strong id="net">49.95 USDT</strong>.')
  })
})
