import { describe, expect, it } from "@effect/vitest"
import type { EffectivePolicy, PolicyChange } from "../../custody/withdrawal-policy.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import type { AssetPolicy } from "../../src/domain/asset-policy.js"
import type { Order } from "../../src/domain/order.js"
import type { Transaction } from "../../src/domain/transaction.js"
import type { Withdrawal } from "../../src/domain/withdrawal.js"
import type { WithdrawalAddress } from "../../src/domain/withdrawal-address.js"
import { type Html, raw } from "../html.js"
import {
  assetsPage,
  balancesPage,
  collectPage,
  depositAddressesPage,
  keysPage,
  loginPage,
  messagePage,
  ordersPage,
  securityPage,
  setupPage,
  transactionsPage,
  webhooksPage,
  withdrawalsPage
} from "./console-pages.js"
import { addressBookPage, auditPage, invitePage, policyPage, usersPage } from "./policy-pages.js"
import { refundsPage } from "./refund-pages.js"
import type { Refund } from "../../src/domain/refund.js"
import type { ClaimRow } from "../../src/stores/refund-store.js"
import { Option } from "effect"
import { renderClaimPage, renderClaimRetryPage, renderClaimStatusPage } from "../refund-claim-page.js"

// a value that would open a script, break out of a quoted attribute into an element, and an entity already escaped
const HOSTILE = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>&amp;`
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;&amp;amp;"

/** The hostile value came out escaped (once), and nowhere as markup: no script, no element, no broken-out attribute. */
const expectEscaped = (name: string, page: Html) => {
  expect(page.text, name).toContain(ESCAPED)
  expect(page.text, name).not.toContain("<script")
  expect(page.text, name).not.toContain("<img")
  expect(page.text, name).not.toContain(`"'>`)
  expect(page.text, name).not.toContain("&amp;lt;") // a fragment placed in another is not escaped twice
}

const session: ConsoleSession = {
  userId: HOSTILE,
  merchantId: HOSTILE,
  loginName: HOSTILE,
  role: "owner",
  csrfToken: HOSTILE,
  totp: false
}
const at = new Date("2026-01-02T03:04:05Z")

const withdrawal: Withdrawal = {
  withdrawal_id: HOSTILE,
  out_withdrawal_no: HOSTILE,
  status: "PENDING",
  chain: "TRC20",
  currency: HOSTILE,
  amount: HOSTILE,
  platform_fee: HOSTILE,
  network_fee: HOSTILE,
  network_fee_asset: HOSTILE,
  network_fee_included: false,
  total_fee: HOSTILE,
  net_amount: HOSTILE,
  to_address: HOSTILE,
  tx_hash: HOSTILE,
  fee_policy_version: HOSTILE,
  failure_reason: HOSTILE,
  required_approvals: 2,
  approvals: [{ approved_by: HOSTILE, approver_kind: "console_user", approved_at: HOSTILE }],
  kind: "refund",
  refund_id: HOSTILE,
  order_id: HOSTILE,
  created_at: HOSTILE,
  updated_at: HOSTILE
}

const addressEntry: WithdrawalAddress = {
  id: HOSTILE,
  chain: "TRC20",
  address: HOSTILE,
  label: HOSTILE,
  status: "pending",
  usable_from: HOSTILE,
  created_at: HOSTILE,
  created_by: HOSTILE
}

const assetPolicy: AssetPolicy = {
  asset_key: HOSTILE,
  chain: "TRC20",
  currency: HOSTILE,
  display_name: HOSTILE,
  main_key_mode: HOSTILE,
  receive_key_mode: HOSTILE,
  collection_mode: HOSTILE,
  sweep_requires_gas: true,
  signing_implemented: true,
  status: "live",
  default_for_new_merchants: false,
  merchant_enabled: false,
  decimals: 6,
  amount_precision: 6,
  gas_asset: HOSTILE,
  actions: { deposit: true, checkout: true, collect: true, withdraw: true },
  metadata: {}
}

const order: Order = {
  order_id: HOSTILE,
  out_trade_no: HOSTILE,
  status: "PAID",
  amount: HOSTILE,
  paid_amount: HOSTILE,
  refunded_amount: HOSTILE,
  currency: HOSTILE,
  chain: "TRC20",
  checkout_mode: "single_asset",
  pay_address: HOSTILE,
  checkout_url: HOSTILE,
  tx_hash: HOSTILE,
  late_payment: false,
  available_assets: [],
  expire_at: HOSTILE,
  created_at: HOSTILE,
  updated_at: HOSTILE
}

const transaction: Transaction = {
  id: HOSTILE,
  type: "deposit",
  status: "confirmed",
  chain: "TRC20",
  currency: HOSTILE,
  amount: HOSTILE,
  tx_hash: HOSTILE,
  event_index: 0,
  from_address: HOSTILE,
  to_address: HOSTILE,
  block_number: 1,
  confirmations: 1,
  created_at: HOSTILE,
  updated_at: HOSTILE
}

const change: PolicyChange = {
  id: HOSTILE,
  setting: `per_tx:${HOSTILE}`,
  previous_value: HOSTILE,
  value: HOSTILE,
  requested_by: HOSTILE,
  requested_at: at,
  effective_at: new Date("2030-01-01T00:00:00Z"),
  status: "PENDING",
  ended_by: null
}

const policy: EffectivePolicy = {
  addressBook: true,
  refundAddressBook: false,
  coolingOffSeconds: 86_400,
  quorum: 1,
  perTx: () => undefined,
  perDay: () => undefined,
  quorumAbove: () => undefined,
  value: () => HOSTILE,
  settings: [{ setting: `per_tx:${HOSTILE}`, value: HOSTILE }]
}

// amounts come from numeric columns: decimals, never text of a client's
const refund: Refund = {
  refund_id: HOSTILE,
  order_id: HOSTILE,
  status: "CLAIMED",
  chain: "TRC20",
  currency: HOSTILE,
  amount: "12.5",
  order_amount: "25",
  rate: "0.5",
  reason: HOSTILE,
  claim_url: HOSTILE,
  claim_expires_at: HOSTILE,
  to_address: HOSTILE,
  withdrawal_id: HOSTILE,
  net_amount: "12.4875",
  tx_hash: HOSTILE,
  failure_reason: HOSTILE,
  claimed_at: HOSTILE,
  created_at: HOSTILE,
  updated_at: HOSTILE
}

const claimRow: ClaimRow = {
  id: HOSTILE,
  merchant_id: HOSTILE,
  order_id: HOSTILE,
  status: "PENDING_CLAIM",
  chain: "TRC20",
  currency: HOSTILE,
  amount: "12.5",
  order_amount: null,
  rate: null,
  reason: HOSTILE,
  claim_expires_at: at,
  to_address: HOSTILE,
  withdrawal_id: HOSTILE,
  failure_reason: HOSTILE,
  created_by: HOSTILE,
  created_by_user_id: null,
  created_at: at,
  updated_at: at,
  claimed_at: null,
  finished_at: null,
  link_expired: false,
  net_amount: "12.4875",
  tx_hash: HOSTILE,
  withdrawal_status: null,
  merchant_name: HOSTILE
}

describe("console pages", () => {
  it("escape every value placed in them: a hostile value comes out as text on every page", () => {
    const pages: Array<readonly [string, Html]> = [
      ["message", messagePage(HOSTILE, HOSTILE, session)],
      ["login", loginPage(HOSTILE)],
      ["setup", setupPage({ merchantName: HOSTILE, suggestedLoginName: HOSTILE }, HOSTILE, HOSTILE)],
      [
        "balances",
        balancesPage(session, {
          quote_currency: HOSTILE,
          as_of: HOSTILE,
          price_source: HOSTILE,
          totals: {
            value_usdt: HOSTILE,
            available_value_usdt: HOSTILE,
            uncollected_value_usdt: HOSTILE,
            locked_value_usdt: HOSTILE,
            unpriced_asset_count: 0,
            network_count: 1,
            address_count: 1
          },
          assets: []
        })
      ],
      [
        "withdrawals",
        withdrawalsPage(session, [withdrawal], HOSTILE, {
          assets: [HOSTILE],
          addresses: [{ ...addressEntry, status: "usable" }]
        })
      ],
      ["orders", ordersPage(session, [order], 1)],
      ["transactions", transactionsPage(session, HOSTILE, [transaction], 1)],
      ["assets", assetsPage(session, [assetPolicy], HOSTILE)],
      [
        "keys",
        keysPage(
          session,
          [
            {
              id: HOSTILE,
              key_prefix: HOSTILE,
              scopes: [HOSTILE],
              label: HOSTILE,
              status: "active",
              last_used_at: null
            }
          ],
          { what: HOSTILE, value: HOSTILE },
          HOSTILE
        )
      ],
      [
        "webhooks",
        webhooksPage(
          session,
          [
            {
              id: HOSTILE,
              merchant_id: HOSTILE,
              event: HOSTILE,
              idempotency_key: HOSTILE,
              destination: HOSTILE,
              status: HOSTILE,
              attempts: 3,
              last_status_code: null,
              last_error: HOSTILE,
              next_attempt_at: at,
              created_at: at
            }
          ],
          HOSTILE
        )
      ],
      [
        "deposit addresses",
        depositAddressesPage(
          session,
          HOSTILE,
          [
            {
              id: HOSTILE,
              external_user_id: HOSTILE,
              chain: HOSTILE,
              currency: HOSTILE,
              address: HOSTILE,
              created_at: HOSTILE
            }
          ],
          1
        )
      ],
      [
        "collect",
        collectPage(
          session,
          [assetPolicy],
          HOSTILE,
          [
            {
              wallet_id: HOSTILE,
              address: HOSTILE,
              external_user_id: HOSTILE,
              uncollected_balance: HOSTILE,
              sweep_in_flight: null
            }
          ],
          HOSTILE
        )
      ],
      ["security", securityPage(session, { secret: HOSTILE, qrSvg: raw("<svg></svg>") }, HOSTILE)],
      ["address book", addressBookPage(session, [addressEntry], true, HOSTILE, HOSTILE)],
      [
        "policy",
        policyPage(
          session,
          policy,
          [change, { ...change, status: "CANCELLED", ended_by: HOSTILE }],
          [HOSTILE],
          at,
          HOSTILE
        )
      ],
      [
        "users",
        usersPage(
          session,
          {
            users: [
              {
                id: HOSTILE,
                login_name: HOSTILE,
                role: HOSTILE,
                totp: false,
                approver_from: null,
                invited_by: HOSTILE,
                created_at: at
              }
            ],
            invites: [{ id: HOSTILE, login_name: HOSTILE, role: HOSTILE, invited_by: HOSTILE, expires_at: at }]
          },
          at,
          { url: HOSTILE, loginName: HOSTILE },
          HOSTILE
        )
      ],
      [
        "invite",
        invitePage({ merchantName: HOSTILE, loginName: HOSTILE, role: HOSTILE, invitedBy: HOSTILE }, HOSTILE, HOSTILE)
      ],
      [
        "audit",
        auditPage(session, { actor: HOSTILE, limit: 1 }, [
          {
            id: HOSTILE,
            at,
            actor_kind: HOSTILE,
            actor: HOSTILE,
            from_address: HOSTILE,
            user_agent: HOSTILE,
            action: HOSTILE,
            subject: HOSTILE,
            detail: HOSTILE
          }
        ])
      ]
    ]
    pages.push(
      [
        "refunds",
        refundsPage(
          session,
          [refund, { ...refund, status: "PENDING_CLAIM" }],
          2,
          { orderId: HOSTILE },
          { refundId: HOSTILE, claimUrl: HOSTILE },
          HOSTILE
        )
      ],
      // the public refund claim pages (not the console's, the same escaping)
      [
        "refund claim",
        raw(renderClaimPage({ refund: claimRow, fees: Option.none(), notice: HOSTILE, address: HOSTILE }))
      ],
      ["refund claim status", raw(renderClaimStatusPage({ ...claimRow, status: "COMPLETED" }, HOSTILE))],
      ["refund claim retry", raw(renderClaimRetryPage(HOSTILE))]
    )
    for (const [name, page] of pages) expectEscaped(name, page)
  })

  it("place trusted markup as it is: the QR code's SVG, the nested forms", () => {
    const text = securityPage(session, { secret: "ABC", qrSvg: raw('<svg id="qr"></svg>') }).text
    expect(text).toContain('<div class="qr"><svg id="qr"></svg></div>')
    expect(text).toContain(`<input type="hidden" name="csrf" value="${ESCAPED}">`)
  })
})
