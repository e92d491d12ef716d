import type { ConsoleSession } from "../../src/console/console-accounts.js"
import type { WalletPortfolio } from "../../src/domain/wallet-portfolio.js"
import type { AssetPolicy } from "../../src/domain/asset-policy.js"
import type { Order } from "../../src/domain/order.js"
import type { Transaction } from "../../src/domain/transaction.js"
import type { Withdrawal } from "../../src/domain/withdrawal.js"
import type { DeliveryRow } from "../../src/stores/webhook-store.js"
import { type Capability, can } from "../../src/console/console-roles.js"
import { type Html, html } from "../html.js"
import type { WithdrawalAddress } from "../../src/domain/withdrawal-address.js"

/**
 * The merchant console's pages: server-rendered HTML, one stylesheet, no script, forms with a CSRF token.
 * Every page is built with `html`, so each value placed in one is escaped without being asked.
 */

export const CONSOLE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

/** The menu; a link that needs a capability shows only to the roles that have it. */
const NAV_LINKS: ReadonlyArray<{ readonly href: string; readonly label: string; readonly needs?: Capability }> = [
  { href: "/console/balances", label: "Balances" },
  { href: "/console/withdrawals", label: "Withdrawals" },
  { href: "/console/batches", label: "Batches" },
  { href: "/console/refunds", label: "Refunds" },
  { href: "/console/address-book", label: "Address book" },
  { href: "/console/policy", label: "Policy" },
  { href: "/console/orders", label: "Orders" },
  { href: "/console/payment-links", label: "Payment links" },
  { href: "/console/transactions", label: "Transactions" },
  { href: "/console/ledger-export", label: "Ledger export" },
  { href: "/console/deposit-addresses", label: "Deposit addresses" },
  { href: "/console/collect", label: "Collect", needs: "manage" },
  { href: "/console/assets", label: "Assets" },
  { href: "/console/keys", label: "API keys" },
  { href: "/console/webhooks", label: "Webhooks" },
  { href: "/console/users", label: "Users" },
  { href: "/console/audit", label: "Audit log", needs: "audit" },
  { href: "/console/security", label: "Security" }
]

const navLinks = (session: ConsoleSession) =>
  NAV_LINKS.filter((link) => link.needs === undefined || can(session.role, link.needs)).map(
    (link) => html`<a href="${link.href}">${link.label}</a> `
  )

/** The session's CSRF token, carried by every form that changes something. */
export const hidden = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`

export const page = (title: string, body: Html, session?: ConsoleSession) => html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<title>${title} — Facet console</title><link rel="stylesheet" href="/console-assets/console.css"></head>
<body>
${
  session === undefined
    ? undefined
    : html`<nav>${navLinks(session)}
<form method="post" action="/console/logout" class="inline">${hidden(session.csrfToken)}<span class="who">${session.loginName}</span> <span class="role">${session.role}</span> <button type="submit">Log out</button></form></nav>`
}
<main><h1>${title}</h1>
${body}
</main></body></html>`

export const notice = (message: string | undefined) =>
  message === undefined ? undefined : html`<p class="notice" role="alert">${message}</p>`

/** The one-time link's form (the owner's setup, an invited person's): a login name and a password. */
export const newAccountForm = (
  action: string,
  token: string,
  loginName: string,
  fixedName: boolean
) => html`<form method="post" action="${action}">
<input type="hidden" name="token" value="${token}">
<label>Login name <input name="login_name" value="${loginName}" autocomplete="username" ${fixedName ? "readonly" : "required"}></label>
<label>Password (12 characters or more) <input type="password" name="password" autocomplete="new-password" minlength="12" required></label>
<button type="submit">Create my account</button>
</form>`

export const setupPage = (
  offer: { readonly merchantName: string; readonly suggestedLoginName: string },
  consoleToken: string,
  error?: string
) =>
  page(
    "Set up your console account",
    html`${notice(error)}
<p>You are the owner of <strong>${offer.merchantName}</strong>. Choose how you will log in; this link works once.</p>
${newAccountForm("/console/setup", consoleToken, offer.suggestedLoginName, false)}`
  )

export const loginPage = (error?: string) =>
  page(
    "Log in",
    html`${notice(error)}
<form method="post" action="/console/login">
<label>Login name <input name="login_name" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<label>Authenticator code (if you enrolled one) <input name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}"></label>
<button type="submit">Log in</button>
</form>`
  )

export const messagePage = (title: string, message: string, session?: ConsoleSession) =>
  page(title, html`<p>${message}</p>`, session)

export const balancesPage = (session: ConsoleSession, portfolio: WalletPortfolio) =>
  page(
    "Balances",
    html`<p class="hint">Available is collected and can be withdrawn; uncollected is still in receive addresses; locked is reserved by withdrawals.</p>
<table><thead><tr><th>Asset</th><th>Network</th><th>Available</th><th>Uncollected</th><th>Locked</th><th>Gas</th></tr></thead><tbody>
${portfolio.assets.flatMap((a) =>
  a.networks.map(
    (n) => html`<tr><td>${a.currency}</td><td>${n.chain}</td><td>${n.available_balance}</td>
<td>${n.uncollected_balance}</td><td>${n.locked_balance}</td><td class="gas-${n.gas_status}">${n.gas_status}</td></tr>
`
  )
)}
</tbody></table>
<p class="hint">Total value ${portfolio.totals.value_usdt} USDT (${portfolio.price_source}), ${portfolio.totals.unpriced_asset_count} unpriced.</p>`,
    session
  )

/** Password (and the TOTP code once enrolled) asked again before a change that matters. */
export const confirmFields = (session: {
  readonly totp: boolean
}) => html`<label>Your password <input type="password" name="password" autocomplete="current-password" required></label>
${session.totp && html`<label>Authenticator code <input name="code" inputmode="numeric" autocomplete="one-time-code" required></label>`}`

const decisionForms = (w: Withdrawal, csrf: string, totp: boolean) => html`
<form method="post" action="/console/withdrawals/${w.withdrawal_id}/approve" class="approve">
${hidden(csrf)}
${confirmFields({ totp })}
<button type="submit">Approve</button></form>
<form method="post" action="/console/withdrawals/${w.withdrawal_id}/reject" class="reject">
${hidden(csrf)}
<label>Reason <input name="reason" required></label><button type="submit">Reject</button></form>
<form method="post" action="/console/withdrawals/${w.withdrawal_id}/cancel" class="cancel">
${hidden(csrf)}<button type="submit">Cancel</button></form>`

const approvalLine = (w: Withdrawal) =>
  html`<p class="approvals">Approvals: <strong>${w.approvals.length} of ${w.required_approvals}</strong>${w.approvals.length > 0 && ` (${w.approvals.map((a) => a.approved_by).join(", ")})`}</p>`

/** What the new-withdrawal form offers: the withdrawable assets and the address book's usable entries. */
export interface NewWithdrawalOffer {
  readonly assets: ReadonlyArray<string>
  readonly addresses: ReadonlyArray<WithdrawalAddress>
}

const newWithdrawalForm = (
  session: ConsoleSession,
  offer: NewWithdrawalOffer
) => html`<details class="new-withdrawal"><summary>New withdrawal</summary>
<form method="post" action="/console/withdrawals" class="create">${hidden(session.csrfToken)}
<label>Asset <select name="asset">${offer.assets.map((a) => html`<option value="${a}">${a}</option>`)}</select></label>
<label>To address <input name="to_address" list="address-book" required></label>
<datalist id="address-book">${offer.addresses
  .filter((a) => a.status === "usable")
  .map((a) => html`<option value="${a.address}">${a.label} (${a.chain})</option>`)}</datalist>
<label>Amount <input name="amount" inputmode="decimal" required></label>
<p class="hint">Someone else must approve a withdrawal you create here.</p>
<button type="submit">Request withdrawal</button></form></details>`

const withdrawalSection = (session: ConsoleSession, w: Withdrawal) =>
  html`<section class="withdrawal" id="${w.withdrawal_id}" data-status="${w.status}">
<p><strong class="status">${w.status}</strong> ${w.amount} ${w.currency} on ${w.chain} to <code>${w.to_address}</code></p>
<p class="hint">net ${w.net_amount}, fees ${w.total_fee} ${w.currency}${!w.network_fee_included && ` + network ${w.network_fee} ${w.network_fee_asset} paid by the platform`}; created ${w.created_at}${w.out_withdrawal_no !== null && `; your reference ${w.out_withdrawal_no}`}</p>
${w.kind === "refund" && html`<p class="refund-of">Refund <a href="/console/refunds?order=${encodeURIComponent(w.order_id ?? "")}">${w.refund_id ?? ""}</a> of order <strong>${w.order_id ?? ""}</strong>: the customer chose this address on the refund's claim page</p>`}
${w.batch_id === undefined ? approvalLine(w) : html`<p class="hint">An item of <a href="/console/batches/${w.batch_id}">batch ${w.batch_id}</a>: decided with its batch.</p>`}
${w.tx_hash !== null && html`<p class="hint">transaction <code>${w.tx_hash}</code></p>`}
${w.failure_reason !== null && html`<p class="notice">${w.failure_reason}</p>`}
${w.status === "PENDING" && w.batch_id === undefined && can(session.role, "decide") && decisionForms(w, session.csrfToken, session.totp)}
</section>
`

export const withdrawalsPage = (
  session: ConsoleSession,
  items: ReadonlyArray<Withdrawal>,
  message?: string,
  offer?: NewWithdrawalOffer
) =>
  page(
    "Withdrawals",
    html`${notice(message)}
<p class="hint">A withdrawal your backend requests waits here for the approvals your policy requires. Approving asks for your password; once enough people approved, it is signed and sent automatically. Withdrawals asked for in a batch are on the <a href="/console/batches">Batches</a> page.</p>
${offer !== undefined && can(session.role, "manage") && newWithdrawalForm(session, offer)}
${items.length === 0 ? html`<p>No withdrawals yet.</p>` : items.map((w) => withdrawalSection(session, w))}`,
    session
  )

export const ordersPage = (session: ConsoleSession, orders: ReadonlyArray<Order>, total: number) =>
  page(
    "Orders",
    html`<p class="hint">${total} order(s); the newest 100.</p>
<table><thead><tr><th>Order</th><th>Status</th><th>Amount</th><th>Paid</th><th>Refunded</th><th>Network</th><th>Latest payment</th><th>Created</th></tr></thead><tbody>
${orders.map(
  (
    o
  ) => html`<tr><td><a href="/checkout/${o.order_id}">${o.order_id}</a>${o.out_trade_no !== "" && html`<br><span class="hint">${o.out_trade_no}</span>`}</td>
<td>${o.status}</td><td>${o.amount} ${o.currency}</td><td>${o.paid_amount ?? "0"}${o.overpaid_amount !== undefined && html`<br><span class="hint">overpaid ${o.overpaid_amount}: refund or keep</span>`}</td>
<td>${o.paid_amount === "0" ? "" : html`<a href="/console/refunds?order=${encodeURIComponent(o.order_id)}">${o.refunded_amount}</a>`}</td><td>${o.chain}</td>
<td><code>${o.tx_hash ?? ""}</code></td><td>${o.created_at}</td></tr>
`
)}
</tbody></table>`,
    session
  )

export const transactionsPage = (
  session: ConsoleSession,
  q: string,
  items: ReadonlyArray<Transaction>,
  total: number
) =>
  page(
    "Transactions",
    html`<form method="get" action="/console/transactions" class="search">
<label>Search by transaction hash, address, order, deposit address, withdrawal or operation id <input name="q" value="${q}"></label>
<button type="submit">Search</button></form>
<p class="hint">${total} found; the newest 100.</p>
<table><thead><tr><th>Type</th><th>Status</th><th>Amount</th><th>Network</th><th>From → to</th><th>Hash</th><th>When</th></tr></thead><tbody>
${items.map(
  (t) => html`<tr><td>${t.type}</td><td>${t.status}</td><td>${t.amount} ${t.currency}</td><td>${t.chain}</td>
<td><code>${t.from_address ?? ""}</code> → <code>${t.to_address}</code></td><td><code>${t.tx_hash}</code></td><td>${t.created_at}</td></tr>
`
)}
</tbody></table>`,
    session
  )

const yesNo = (on: boolean) => (on ? "yes" : "no")

/** An asset's underpayment tolerance in words: "off", "0.5 %", "1 USDT", "0.5 % and at most 1 USDT". */
const toleranceWords = (p: AssetPolicy) => {
  const t = p.underpayment_tolerance
  if (t === undefined) return "off"
  return [
    ...(t.percent === undefined ? [] : [`${t.percent} %`]),
    ...(t.amount === undefined ? [] : [`${t.amount} ${p.currency}`])
  ].join(" and at most ")
}

export const assetsPage = (session: ConsoleSession, policies: ReadonlyArray<AssetPolicy>, message?: string) => {
  const checkout = policies.filter((p) => p.actions.checkout)
  return page(
    "Assets",
    html`${notice(message)}
<table><thead><tr><th>Asset</th><th>Status</th><th>Enabled</th><th>Deposit</th><th>Checkout</th><th>Collect</th><th>Withdraw</th><th>Underpayment tolerance</th><th></th></tr></thead><tbody>
${policies.map(
  (
    p
  ) => html`<tr id="asset-${p.asset_key}"><td>${p.display_name}<br><span class="hint">${p.asset_key}</span></td><td>${p.status}</td>
<td>${yesNo(p.merchant_enabled)}</td><td>${yesNo(p.actions.deposit)}</td><td>${yesNo(p.actions.checkout)}</td><td>${yesNo(p.actions.collect)}</td><td>${yesNo(p.actions.withdraw)}</td>
<td class="tolerance">${p.actions.checkout ? toleranceWords(p) : ""}</td>
<td>${!p.merchant_enabled && (p.status === "live" || p.status === "deposit_live") && html`<form method="post" action="/console/assets/enable" class="inline">${hidden(session.csrfToken)}<input type="hidden" name="asset_key" value="${p.asset_key}"><button type="submit">Enable</button></form>`}</td></tr>
`
)}
</tbody></table>
<h2>Underpayment tolerance</h2>
<p class="hint">Customers paying from an exchange often arrive a little short: the exchange keeps its withdrawal fee. With a tolerance, a checkout order paid short by no more than it becomes PAID at once, with <code>underpaid_amount</code> on the order and its webhook. Off by default. A percent of the order's amount (at most 10) and/or an amount of the asset; with both, both limits hold (the smaller shortfall). A shortfall never passes a tenth of the amount. It applies to orders created after you save it; open orders keep theirs.</p>
${
  can(session.role, "manage") && checkout.length > 0
    ? html`<form method="post" action="/console/assets/tolerance" class="tolerance-form">${hidden(session.csrfToken)}
<label>Asset <select name="asset_key">${checkout.map((p) => html`<option value="${p.asset_key}">${p.asset_key}</option>`)}</select></label>
<label>Percent of the amount (empty: no percent limit) <input name="percent" inputmode="decimal" placeholder="0.5"></label>
<label>Amount in the asset's units (empty: no amount limit) <input name="amount" inputmode="decimal" placeholder="1"></label>
<p class="hint">Both empty: off.</p>
<button type="submit">Save tolerance</button></form>`
    : html`<p class="hint">An owner or admin sets it.</p>`
}`,
    session
  )
}

const SCOPES = ["read", "orders", "deposits", "wallet", "withdrawals"] as const

export const keysPage = (
  session: ConsoleSession,
  keys: ReadonlyArray<{
    readonly id: string
    readonly key_prefix: string
    readonly scopes: ReadonlyArray<string>
    readonly label: string
    readonly status: string
    readonly last_used_at: Date | null
  }>,
  shownOnce?: { readonly what: string; readonly value: string },
  message?: string
) =>
  page(
    "API keys",
    html`${notice(message)}
${shownOnce !== undefined && html`<div class="once" role="status"><p><strong>${shownOnce.what}</strong>, shown this once: store it in your backend's secrets now.</p><p><code id="shown-once">${shownOnce.value}</code></p></div>`}
<table><thead><tr><th>Key</th><th>Label</th><th>Scopes</th><th>Status</th><th>Last used</th><th></th></tr></thead><tbody>
${keys.map(
  (
    k
  ) => html`<tr><td><code>${k.key_prefix}…</code></td><td>${k.label}</td><td>${k.scopes.join(", ")}</td><td>${k.status}</td>
<td>${k.last_used_at === null ? "never" : k.last_used_at.toISOString()}</td>
<td>${k.status === "active" && html`<form method="post" action="/console/keys/${k.id}/revoke" class="inline">${hidden(session.csrfToken)}<button type="submit">Revoke</button></form>`}</td></tr>
`
)}
</tbody></table>
<h2>New key</h2>
<form method="post" action="/console/keys" class="new-key">${hidden(session.csrfToken)}
<label>Label <input name="label" required></label>
<fieldset><legend>Scopes (give a key only what it needs; a key without <em>wallet</em> cannot sweep)</legend>
${SCOPES.map((scope) => html`<label class="check"><input type="checkbox" name="scope" value="${scope}"${scope !== "wallet" && scope !== "withdrawals" && html` checked`}> ${scope}</label>`)}
</fieldset>${confirmFields(session)}<button type="submit">Create key</button></form>
<h2>Webhook secret</h2>
<form method="post" action="/console/webhook-secret" class="rotate">${hidden(session.csrfToken)}
<p class="hint">A new secret signs every delivery from now on; update your receiver first.</p><button type="submit">Rotate the webhook secret</button></form>`,
    session
  )

export const webhooksPage = (session: ConsoleSession, problems: ReadonlyArray<DeliveryRow>, message?: string) =>
  page(
    "Webhooks",
    html`${notice(message)}
<p class="hint">Deliveries that are failing (retrying) or dead (given up after 24 h).</p>
${
  problems.length === 0
    ? html`<p>Every delivery went through.</p>`
    : html`<table><thead><tr><th>Event</th><th>Status</th><th>Attempts</th><th>Last answer</th><th>Destination</th></tr></thead><tbody>
${problems.map(
  (
    d
  ) => html`<tr><td>${d.event}<br><span class="hint">${d.idempotency_key}</span></td><td>${d.status}</td><td>${d.attempts}</td>
<td>${d.last_status_code === null ? (d.last_error ?? "") : d.last_status_code}</td><td>${d.destination ?? "none"}</td></tr>
`
)}
</tbody></table>
<form method="post" action="/console/webhooks/replay">${hidden(session.csrfToken)}<button type="submit">Replay them all now</button></form>`
}`,
    session
  )

export const depositAddressesPage = (
  session: ConsoleSession,
  user: string,
  items: ReadonlyArray<{
    readonly id: string
    readonly external_user_id: string
    readonly chain: string
    readonly currency: string
    readonly address: string
    readonly created_at: string
  }>,
  total: number
) =>
  page(
    "Deposit addresses",
    html`<form method="get" action="/console/deposit-addresses" class="search">
<label>Your user id <input name="user" value="${user}"></label><button type="submit">Search</button></form>
<p class="hint">${total} address(es); the newest 100.</p>
<table><thead><tr><th>User</th><th>Asset</th><th>Address</th><th>Created</th></tr></thead><tbody>
${items.map(
  (d) => html`<tr><td>${d.external_user_id}</td><td>${d.chain}-${d.currency}</td>
<td><a href="/console/transactions?q=${encodeURIComponent(d.address)}"><code>${d.address}</code></a></td><td>${d.created_at}</td></tr>
`
)}
</tbody></table>`,
    session
  )

export const collectPage = (
  session: ConsoleSession,
  assets: ReadonlyArray<AssetPolicy>,
  assetKey: string,
  wallets: ReadonlyArray<{
    readonly wallet_id: string
    readonly address: string
    readonly external_user_id: string | null
    readonly uncollected_balance: string
    readonly sweep_in_flight: string | null
  }>,
  message?: string
) =>
  page(
    "Collect",
    html`${notice(message)}
<form method="get" action="/console/collect" class="search"><label>Asset <select name="asset">${assets
      .filter((a) => a.actions.collect)
      .map(
        (a) =>
          html`<option value="${a.asset_key}"${a.asset_key === assetKey && html` selected`}>${a.asset_key}</option>`
      )}</select></label><button type="submit">Show</button></form>
<p class="hint">Receive addresses still holding ${assetKey}. A sweep moves it to your main wallet (the platform pays the gas); it becomes available to withdraw once final.</p>
${
  wallets.length === 0
    ? html`<p>Nothing to collect.</p>`
    : html`<table><thead><tr><th>Address</th><th>User</th><th>Uncollected</th><th></th></tr></thead><tbody>
${wallets.map(
  (
    w
  ) => html`<tr id="wallet-${w.wallet_id}"><td><code>${w.address}</code></td><td>${w.external_user_id ?? ""}</td><td>${w.uncollected_balance}</td>
<td>${
    w.sweep_in_flight !== null
      ? `sweeping (${w.sweep_in_flight})`
      : html`<form method="post" action="/console/collect" class="inline">${hidden(session.csrfToken)}
<input type="hidden" name="asset" value="${assetKey}"><input type="hidden" name="wallet_id" value="${w.wallet_id}"><button type="submit">Sweep</button></form>`
  }</td></tr>
`
)}
</tbody></table>`
}`,
    session
  )

/** The second-factor enrolment offer: a fresh secret and its QR code, an SVG the route rendered (markup). */
export interface TotpOffer {
  readonly secret: string
  readonly qrSvg: Html
}

export const securityPage = (session: ConsoleSession, offer: TotpOffer | undefined, message?: string) =>
  page(
    "Security",
    html`${notice(message)}
${
  session.totp
    ? html`<p class="enrolled">A second factor is on: your authenticator app's code is asked at every login and for every approval.</p>`
    : offer !== undefined &&
      html`<p>Add a second factor: scan this with an authenticator app (or type the key), then enter the code it shows.</p>
<div class="qr">${offer.qrSvg}</div><p>Key: <code id="totp-secret">${offer.secret}</code></p>
<form method="post" action="/console/security/totp" class="totp">${hidden(session.csrfToken)}<input type="hidden" name="secret" value="${offer.secret}">
<label>Code <input name="code" inputmode="numeric" autocomplete="one-time-code" required></label>${confirmFields({ totp: false })}<button type="submit">Turn on</button></form>`
}`,
    session
  )

export const CONSOLE_CSS = `
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330}
nav{display:flex;gap:16px;align-items:center;flex-wrap:wrap;padding:10px 16px;background:#1d2330}
nav a{color:#fff;text-decoration:none}nav .inline{margin-left:auto}nav .who,nav .role{color:#c9ced6}
main{max-width:960px;margin:0 auto;padding:16px;background:#fff;min-height:100vh}
form{margin:8px 0}label{display:block;margin:8px 0}input{display:block;width:100%;max-width:360px;padding:8px;font-size:1rem}
.inline{display:inline;margin:0}
button{padding:8px 14px;border:0;border-radius:6px;background:#1d4ed8;color:#fff;font-size:.95rem}
.reject button,.cancel button{background:#6b7280}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:6px;border-bottom:1px solid #e3e6ea}
.hint{color:#5b6472}.notice{color:#9a1c1c}
.refund-of{background:#eef3ff;border-radius:6px;padding:4px 8px}
.refunds{font-size:.88rem}.refunds td{vertical-align:top;overflow-wrap:anywhere}.refunds td:nth-child(5) code{word-break:break-all}
.refunds form.inline{display:block;margin:0 0 4px}.refunds button{padding:4px 10px;font-size:.85rem;white-space:nowrap}
.withdrawal{border:1px solid #e3e6ea;border-radius:8px;padding:8px 12px;margin:12px 0;overflow-wrap:anywhere}
.gas-low,.gas-empty{color:#9a1c1c}
select{padding:8px;font-size:1rem}summary{cursor:pointer;font-weight:600;margin:8px 0}
.pending{color:#8a5a00}.approvals strong{font-size:1.05rem}
.qr svg{width:200px;height:200px}
.check{display:inline-block;margin-right:12px}.check input{display:inline;width:auto}
.once{border:2px solid #127a3a;border-radius:8px;padding:8px 12px;overflow-wrap:anywhere}
fieldset{border:1px solid #e3e6ea;border-radius:6px}
`
