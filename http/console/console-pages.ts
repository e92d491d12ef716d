import type { ConsoleSession } from "../../src/console/console-accounts.js"
import type { WalletPortfolio } from "../../src/domain/wallet-portfolio.js"
import type { AssetPolicy } from "../../src/domain/asset-policy.js"
import type { Order } from "../../src/domain/order.js"
import type { Transaction } from "../../src/domain/transaction.js"
import type { Withdrawal } from "../../src/domain/withdrawal.js"
import type { DeliveryRow } from "../../src/webhooks/webhook-admin.js"
import { can } from "../../src/console/console-roles.js"
import { escapeHtml } from "../html.js"
import type { WithdrawalAddress } from "../../src/domain/withdrawal-address.js"

/** The merchant console's pages: server-rendered HTML, one stylesheet, no script, forms with a CSRF token. */

export const CONSOLE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// the console's pages still escape each value by hand (`escapeHtml`); they move to `html` next (#33)

const navLinks = (session: ConsoleSession) =>
  [
    ["/console/balances", "Balances"],
    ["/console/withdrawals", "Withdrawals"],
    ["/console/address-book", "Address book"],
    ["/console/policy", "Policy"],
    ["/console/orders", "Orders"],
    ["/console/transactions", "Transactions"],
    ["/console/deposit-addresses", "Deposit addresses"],
    ...(can(session.role, "manage") ? [["/console/collect", "Collect"]] : []),
    ["/console/assets", "Assets"],
    ["/console/keys", "API keys"],
    ["/console/webhooks", "Webhooks"],
    ["/console/users", "Users"],
    ...(can(session.role, "audit") ? [["/console/audit", "Audit log"]] : []),
    ["/console/security", "Security"]
  ]
    .map(([href, label]) => `<a href="${href ?? ""}">${label ?? ""}</a>`)
    .join(" ")

export const page = (title: string, body: string, session?: ConsoleSession) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} — Facet console</title><link rel="stylesheet" href="/console-assets/console.css"></head>
<body>
${
  session === undefined
    ? ""
    : `<nav>${navLinks(session)}
<form method="post" action="/console/logout" class="inline"><input type="hidden" name="csrf" value="${escapeHtml(session.csrfToken)}"><span class="who">${escapeHtml(session.loginName)}</span> <span class="role">${escapeHtml(session.role)}</span> <button type="submit">Log out</button></form></nav>`
}
<main><h1>${escapeHtml(title)}</h1>
${body}
</main></body></html>`

export const notice = (message: string | undefined) =>
  message === undefined ? "" : `<p class="notice" role="alert">${escapeHtml(message)}</p>`

/** The one-time link's form (the owner's setup, an invited person's): a login name and a password. */
export const newAccountForm = (
  action: string,
  token: string,
  loginName: string,
  fixedName: boolean
) => `<form method="post" action="${action}">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<label>Login name <input name="login_name" value="${escapeHtml(loginName)}" autocomplete="username" ${fixedName ? "readonly" : "required"}></label>
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
    `${notice(error)}
<p>You are the owner of <strong>${escapeHtml(offer.merchantName)}</strong>. Choose how you will log in; this link works once.</p>
${newAccountForm("/console/setup", consoleToken, offer.suggestedLoginName, false)}`
  )

export const loginPage = (error?: string) =>
  page(
    "Log in",
    `${notice(error)}
<form method="post" action="/console/login">
<label>Login name <input name="login_name" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<label>Authenticator code (if you enrolled one) <input name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}"></label>
<button type="submit">Log in</button>
</form>`
  )

export const messagePage = (title: string, message: string, session?: ConsoleSession) =>
  page(title, `<p>${escapeHtml(message)}</p>`, session)

export const balancesPage = (session: ConsoleSession, portfolio: WalletPortfolio) =>
  page(
    "Balances",
    `<p class="hint">Available is collected and can be withdrawn; uncollected is still in receive addresses; locked is reserved by withdrawals.</p>
<table><thead><tr><th>Asset</th><th>Network</th><th>Available</th><th>Uncollected</th><th>Locked</th><th>Gas</th></tr></thead><tbody>
${portfolio.assets
  .flatMap((a) =>
    a.networks.map(
      (
        n
      ) => `<tr><td>${escapeHtml(a.currency)}</td><td>${escapeHtml(n.chain)}</td><td>${escapeHtml(n.available_balance)}</td>
<td>${escapeHtml(n.uncollected_balance)}</td><td>${escapeHtml(n.locked_balance)}</td><td class="gas-${escapeHtml(n.gas_status)}">${escapeHtml(n.gas_status)}</td></tr>`
    )
  )
  .join("\n")}
</tbody></table>
<p class="hint">Total value ${escapeHtml(portfolio.totals.value_usdt)} USDT (${escapeHtml(portfolio.price_source)}), ${portfolio.totals.unpriced_asset_count} unpriced.</p>`,
    session
  )

/** Password (and the TOTP code once enrolled) asked again before a change that matters. */
export const confirmFields = (session: {
  readonly totp: boolean
}) => `<label>Your password <input type="password" name="password" autocomplete="current-password" required></label>
${session.totp ? `<label>Authenticator code <input name="code" inputmode="numeric" autocomplete="one-time-code" required></label>` : ""}`

const decisionForms = (w: Withdrawal, csrf: string, totp: boolean) => `
<form method="post" action="/console/withdrawals/${escapeHtml(w.withdrawal_id)}/approve" class="approve">
<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">
${confirmFields({ totp })}
<button type="submit">Approve</button></form>
<form method="post" action="/console/withdrawals/${escapeHtml(w.withdrawal_id)}/reject" class="reject">
<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">
<label>Reason <input name="reason" required></label><button type="submit">Reject</button></form>
<form method="post" action="/console/withdrawals/${escapeHtml(w.withdrawal_id)}/cancel" class="cancel">
<input type="hidden" name="csrf" value="${escapeHtml(csrf)}"><button type="submit">Cancel</button></form>`

const approvalLine = (w: Withdrawal) =>
  `<p class="approvals">Approvals: <strong>${w.approvals.length} of ${w.required_approvals}</strong>${w.approvals.length === 0 ? "" : ` (${escapeHtml(w.approvals.map((a) => a.approved_by).join(", "))})`}</p>`

/** What the new-withdrawal form offers: the withdrawable assets and the address book's usable entries. */
export interface NewWithdrawalOffer {
  readonly assets: ReadonlyArray<string>
  readonly addresses: ReadonlyArray<WithdrawalAddress>
}

const newWithdrawalForm = (
  session: ConsoleSession,
  offer: NewWithdrawalOffer
) => `<details class="new-withdrawal"><summary>New withdrawal</summary>
<form method="post" action="/console/withdrawals" class="create">${hidden(session.csrfToken)}
<label>Asset <select name="asset">${offer.assets.map((a) => `<option value="${escapeHtml(a)}">${escapeHtml(a)}</option>`).join("")}</select></label>
<label>To address <input name="to_address" list="address-book" required></label>
<datalist id="address-book">${offer.addresses
  .filter((a) => a.status === "usable")
  .map((a) => `<option value="${escapeHtml(a.address)}">${escapeHtml(a.label)} (${escapeHtml(a.chain)})</option>`)
  .join("")}</datalist>
<label>Amount <input name="amount" inputmode="decimal" required></label>
<p class="hint">Someone else must approve a withdrawal you create here.</p>
<button type="submit">Request withdrawal</button></form></details>`

export const withdrawalsPage = (
  session: ConsoleSession,
  items: ReadonlyArray<Withdrawal>,
  message?: string,
  offer?: NewWithdrawalOffer
) =>
  page(
    "Withdrawals",
    `${notice(message)}
<p class="hint">A withdrawal your backend requests waits here for the approvals your policy requires. Approving asks for your password; once enough people approved, it is signed and sent automatically.</p>
${offer !== undefined && can(session.role, "manage") ? newWithdrawalForm(session, offer) : ""}
${
  items.length === 0
    ? "<p>No withdrawals yet.</p>"
    : items
        .map(
          (w) => `<section class="withdrawal" id="${escapeHtml(w.withdrawal_id)}" data-status="${escapeHtml(w.status)}">
<p><strong class="status">${escapeHtml(w.status)}</strong> ${escapeHtml(w.amount)} ${escapeHtml(w.currency)} on ${escapeHtml(w.chain)} to <code>${escapeHtml(w.to_address)}</code></p>
<p class="hint">net ${escapeHtml(w.net_amount)}, fees ${escapeHtml(w.total_fee)} ${escapeHtml(w.currency)}${w.network_fee_included ? "" : ` + network ${escapeHtml(w.network_fee)} ${escapeHtml(w.network_fee_asset)} paid by the platform`}; created ${escapeHtml(w.created_at)}${w.out_withdrawal_no === null ? "" : `; your reference ${escapeHtml(w.out_withdrawal_no)}`}</p>
${approvalLine(w)}
${w.tx_hash === null ? "" : `<p class="hint">transaction <code>${escapeHtml(w.tx_hash)}</code></p>`}
${w.failure_reason === null ? "" : `<p class="notice">${escapeHtml(w.failure_reason)}</p>`}
${w.status === "PENDING" && can(session.role, "decide") ? decisionForms(w, session.csrfToken, session.totp) : ""}
</section>`
        )
        .join("\n")
}`,
    session
  )

export const hidden = (csrf: string) => `<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">`

export const ordersPage = (session: ConsoleSession, orders: ReadonlyArray<Order>, total: number) =>
  page(
    "Orders",
    `<p class="hint">${total} order(s); the newest 100.</p>
<table><thead><tr><th>Order</th><th>Status</th><th>Amount</th><th>Paid</th><th>Network</th><th>Latest payment</th><th>Created</th></tr></thead><tbody>
${orders
  .map(
    (
      o
    ) => `<tr><td><a href="/checkout/${escapeHtml(o.order_id)}">${escapeHtml(o.order_id)}</a>${o.out_trade_no === "" ? "" : `<br><span class="hint">${escapeHtml(o.out_trade_no)}</span>`}</td>
<td>${escapeHtml(o.status)}</td><td>${escapeHtml(o.amount)} ${escapeHtml(o.currency)}</td><td>${escapeHtml(o.paid_amount ?? "0")}</td><td>${escapeHtml(o.chain)}</td>
<td><code>${escapeHtml(o.tx_hash ?? "")}</code></td><td>${escapeHtml(o.created_at)}</td></tr>`
  )
  .join("\n")}
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
    `<form method="get" action="/console/transactions" class="search">
<label>Search by transaction hash, address, order, deposit address, withdrawal or operation id <input name="q" value="${escapeHtml(q)}"></label>
<button type="submit">Search</button></form>
<p class="hint">${total} found; the newest 100.</p>
<table><thead><tr><th>Type</th><th>Status</th><th>Amount</th><th>Network</th><th>From → to</th><th>Hash</th><th>When</th></tr></thead><tbody>
${items
  .map(
    (
      t
    ) => `<tr><td>${escapeHtml(t.type)}</td><td>${escapeHtml(t.status)}</td><td>${escapeHtml(t.amount)} ${escapeHtml(t.currency)}</td><td>${escapeHtml(t.chain)}</td>
<td><code>${escapeHtml(t.from_address ?? "")}</code> → <code>${escapeHtml(t.to_address)}</code></td><td><code>${escapeHtml(t.tx_hash)}</code></td><td>${escapeHtml(t.created_at)}</td></tr>`
  )
  .join("\n")}
</tbody></table>`,
    session
  )

export const assetsPage = (session: ConsoleSession, policies: ReadonlyArray<AssetPolicy>, message?: string) =>
  page(
    "Assets",
    `${notice(message)}
<table><thead><tr><th>Asset</th><th>Status</th><th>Enabled</th><th>Deposit</th><th>Checkout</th><th>Collect</th><th>Withdraw</th><th></th></tr></thead><tbody>
${policies
  .map(
    (
      p
    ) => `<tr id="asset-${escapeHtml(p.asset_key)}"><td>${escapeHtml(p.display_name)}<br><span class="hint">${escapeHtml(p.asset_key)}</span></td><td>${escapeHtml(p.status)}</td>
<td>${p.merchant_enabled ? "yes" : "no"}</td><td>${p.actions.deposit ? "yes" : "no"}</td><td>${p.actions.checkout ? "yes" : "no"}</td><td>${p.actions.collect ? "yes" : "no"}</td><td>${p.actions.withdraw ? "yes" : "no"}</td>
<td>${!p.merchant_enabled && (p.status === "live" || p.status === "deposit_live") ? `<form method="post" action="/console/assets/enable" class="inline">${hidden(session.csrfToken)}<input type="hidden" name="asset_key" value="${escapeHtml(p.asset_key)}"><button type="submit">Enable</button></form>` : ""}</td></tr>`
  )
  .join("\n")}
</tbody></table>`,
    session
  )

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
    `${notice(message)}
${shownOnce === undefined ? "" : `<div class="once" role="status"><p><strong>${escapeHtml(shownOnce.what)}</strong>, shown this once: store it in your backend's secrets now.</p><p><code id="shown-once">${escapeHtml(shownOnce.value)}</code></p></div>`}
<table><thead><tr><th>Key</th><th>Label</th><th>Scopes</th><th>Status</th><th>Last used</th><th></th></tr></thead><tbody>
${keys
  .map(
    (
      k
    ) => `<tr><td><code>${escapeHtml(k.key_prefix)}…</code></td><td>${escapeHtml(k.label)}</td><td>${escapeHtml(k.scopes.join(", "))}</td><td>${escapeHtml(k.status)}</td>
<td>${k.last_used_at === null ? "never" : escapeHtml(k.last_used_at.toISOString())}</td>
<td>${k.status === "active" ? `<form method="post" action="/console/keys/${escapeHtml(k.id)}/revoke" class="inline">${hidden(session.csrfToken)}<button type="submit">Revoke</button></form>` : ""}</td></tr>`
  )
  .join("\n")}
</tbody></table>
<h2>New key</h2>
<form method="post" action="/console/keys" class="new-key">${hidden(session.csrfToken)}
<label>Label <input name="label" required></label>
<fieldset><legend>Scopes (give a key only what it needs; a key without <em>wallet</em> cannot sweep)</legend>
${SCOPES.map((scope) => `<label class="check"><input type="checkbox" name="scope" value="${scope}"${scope === "wallet" || scope === "withdrawals" ? "" : " checked"}> ${scope}</label>`).join("")}
</fieldset>${confirmFields(session)}<button type="submit">Create key</button></form>
<h2>Webhook secret</h2>
<form method="post" action="/console/webhook-secret" class="rotate">${hidden(session.csrfToken)}
<p class="hint">A new secret signs every delivery from now on; update your receiver first.</p><button type="submit">Rotate the webhook secret</button></form>`,
    session
  )

export const webhooksPage = (session: ConsoleSession, problems: ReadonlyArray<DeliveryRow>, message?: string) =>
  page(
    "Webhooks",
    `${notice(message)}
<p class="hint">Deliveries that are failing (retrying) or dead (given up after 24 h).</p>
${
  problems.length === 0
    ? "<p>Every delivery went through.</p>"
    : `<table><thead><tr><th>Event</th><th>Status</th><th>Attempts</th><th>Last answer</th><th>Destination</th></tr></thead><tbody>
${problems
  .map(
    (
      d
    ) => `<tr><td>${escapeHtml(d.event)}<br><span class="hint">${escapeHtml(d.idempotency_key)}</span></td><td>${escapeHtml(d.status)}</td><td>${d.attempts}</td>
<td>${escapeHtml(d.last_status_code === null ? (d.last_error ?? "") : String(d.last_status_code))}</td><td>${escapeHtml(d.destination ?? "none")}</td></tr>`
  )
  .join("\n")}
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
    `<form method="get" action="/console/deposit-addresses" class="search">
<label>Your user id <input name="user" value="${escapeHtml(user)}"></label><button type="submit">Search</button></form>
<p class="hint">${total} address(es); the newest 100.</p>
<table><thead><tr><th>User</th><th>Asset</th><th>Address</th><th>Created</th></tr></thead><tbody>
${items
  .map(
    (d) => `<tr><td>${escapeHtml(d.external_user_id)}</td><td>${escapeHtml(d.chain)}-${escapeHtml(d.currency)}</td>
<td><a href="/console/transactions?q=${encodeURIComponent(d.address)}"><code>${escapeHtml(d.address)}</code></a></td><td>${escapeHtml(d.created_at)}</td></tr>`
  )
  .join("\n")}
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
    `${notice(message)}
<form method="get" action="/console/collect" class="search"><label>Asset <select name="asset">${assets
      .filter((a) => a.actions.collect)
      .map(
        (a) =>
          `<option value="${escapeHtml(a.asset_key)}"${a.asset_key === assetKey ? " selected" : ""}>${escapeHtml(a.asset_key)}</option>`
      )
      .join("")}</select></label><button type="submit">Show</button></form>
<p class="hint">Receive addresses still holding ${escapeHtml(assetKey)}. A sweep moves it to your main wallet (the platform pays the gas); it becomes available to withdraw once final.</p>
${
  wallets.length === 0
    ? "<p>Nothing to collect.</p>"
    : `<table><thead><tr><th>Address</th><th>User</th><th>Uncollected</th><th></th></tr></thead><tbody>
${wallets
  .map(
    (
      w
    ) => `<tr id="wallet-${escapeHtml(w.wallet_id)}"><td><code>${escapeHtml(w.address)}</code></td><td>${escapeHtml(w.external_user_id ?? "")}</td><td>${escapeHtml(w.uncollected_balance)}</td>
<td>${
      w.sweep_in_flight !== null
        ? `sweeping (${escapeHtml(w.sweep_in_flight)})`
        : `<form method="post" action="/console/collect" class="inline">${hidden(session.csrfToken)}
<input type="hidden" name="asset" value="${escapeHtml(assetKey)}"><input type="hidden" name="wallet_id" value="${escapeHtml(w.wallet_id)}"><button type="submit">Sweep</button></form>`
    }</td></tr>`
  )
  .join("\n")}
</tbody></table>`
}`,
    session
  )

export const securityPage = (
  session: ConsoleSession,
  offer: { readonly secret: string; readonly qrSvg: string } | undefined,
  message?: string
) =>
  page(
    "Security",
    `${notice(message)}
${
  session.totp
    ? '<p class="enrolled">A second factor is on: your authenticator app\'s code is asked at every login and for every approval.</p>'
    : offer === undefined
      ? ""
      : `<p>Add a second factor: scan this with an authenticator app (or type the key), then enter the code it shows.</p>
<div class="qr">${offer.qrSvg}</div><p>Key: <code id="totp-secret">${escapeHtml(offer.secret)}</code></p>
<form method="post" action="/console/security/totp" class="totp">${hidden(session.csrfToken)}<input type="hidden" name="secret" value="${escapeHtml(offer.secret)}">
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
.withdrawal{border:1px solid #e3e6ea;border-radius:8px;padding:8px 12px;margin:12px 0;overflow-wrap:anywhere}
.gas-low,.gas-empty{color:#9a1c1c}
select{padding:8px;font-size:1rem}summary{cursor:pointer;font-weight:600;margin:8px 0}
.pending{color:#8a5a00}.approvals strong{font-size:1.05rem}
.qr svg{width:200px;height:200px}
.check{display:inline-block;margin-right:12px}.check input{display:inline;width:auto}
.once{border:2px solid #127a3a;border-radius:8px;padding:8px 12px;overflow-wrap:anywhere}
fieldset{border:1px solid #e3e6ea;border-radius:6px}
`
