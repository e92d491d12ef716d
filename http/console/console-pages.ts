import type { ConsoleSession } from "../../src/console/console-accounts.js"
import type { WalletPortfolio } from "../../src/domain/wallet-portfolio.js"
import type { Withdrawal } from "../../src/domain/withdrawal.js"

/** The merchant console's pages: server-rendered HTML, one stylesheet, no script, forms with a CSRF token. */

export const CONSOLE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

export const escape = (value: string) =>
  value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const page = (title: string, body: string, session?: ConsoleSession) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<title>${escape(title)} — Facet console</title><link rel="stylesheet" href="/console-assets/console.css"></head>
<body>
${session === undefined ? "" : `<nav><a href="/console/balances">Balances</a> <a href="/console/withdrawals">Withdrawals</a>
<form method="post" action="/console/logout" class="inline"><input type="hidden" name="csrf" value="${escape(session.csrfToken)}"><span class="who">${escape(session.loginName)}</span> <button type="submit">Log out</button></form></nav>`}
<main><h1>${escape(title)}</h1>
${body}
</main></body></html>`

const notice = (message: string | undefined) => (message === undefined ? "" : `<p class="notice" role="alert">${escape(message)}</p>`)

export const setupPage = (offer: { readonly merchantName: string; readonly suggestedLoginName: string }, consoleToken: string, error?: string) =>
  page("Set up your console account", `${notice(error)}
<p>You are the owner of <strong>${escape(offer.merchantName)}</strong>. Choose how you will log in; this link works once.</p>
<form method="post" action="/console/setup">
<input type="hidden" name="token" value="${escape(consoleToken)}">
<label>Login name <input name="login_name" value="${escape(offer.suggestedLoginName)}" autocomplete="username" required></label>
<label>Password (12 characters or more) <input type="password" name="password" autocomplete="new-password" minlength="12" required></label>
<button type="submit">Create my account</button>
</form>`)

export const loginPage = (error?: string) =>
  page("Log in", `${notice(error)}
<form method="post" action="/console/login">
<label>Login name <input name="login_name" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Log in</button>
</form>`)

export const messagePage = (title: string, message: string, session?: ConsoleSession) => page(title, `<p>${escape(message)}</p>`, session)

export const balancesPage = (session: ConsoleSession, portfolio: WalletPortfolio) =>
  page("Balances", `<p class="hint">Available is collected and can be withdrawn; uncollected is still in receive addresses; locked is reserved by withdrawals.</p>
<table><thead><tr><th>Asset</th><th>Network</th><th>Available</th><th>Uncollected</th><th>Locked</th><th>Gas</th></tr></thead><tbody>
${portfolio.assets.flatMap((a) => a.networks.map((n) => `<tr><td>${escape(a.currency)}</td><td>${escape(n.chain)}</td><td>${escape(n.available_balance)}</td>
<td>${escape(n.uncollected_balance)}</td><td>${escape(n.locked_balance)}</td><td class="gas-${escape(n.gas_status)}">${escape(n.gas_status)}</td></tr>`)).join("\n")}
</tbody></table>
<p class="hint">Total value ${escape(portfolio.totals.value_usdt)} USDT (${escape(portfolio.price_source)}), ${portfolio.totals.unpriced_asset_count} unpriced.</p>`, session)

const decisionForms = (w: Withdrawal, csrf: string) => `
<form method="post" action="/console/withdrawals/${escape(w.withdrawal_id)}/approve" class="approve">
<input type="hidden" name="csrf" value="${escape(csrf)}">
<label>Your password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Approve</button></form>
<form method="post" action="/console/withdrawals/${escape(w.withdrawal_id)}/reject" class="reject">
<input type="hidden" name="csrf" value="${escape(csrf)}">
<label>Reason <input name="reason" required></label><button type="submit">Reject</button></form>
<form method="post" action="/console/withdrawals/${escape(w.withdrawal_id)}/cancel" class="cancel">
<input type="hidden" name="csrf" value="${escape(csrf)}"><button type="submit">Cancel</button></form>`

export const withdrawalsPage = (session: ConsoleSession, items: ReadonlyArray<Withdrawal>, message?: string) =>
  page("Withdrawals", `${notice(message)}
<p class="hint">A withdrawal your backend requests waits here for you. Approving asks for your password; it is then signed and sent automatically.</p>
${items.length === 0 ? "<p>No withdrawals yet.</p>" : items.map((w) => `<section class="withdrawal" id="${escape(w.withdrawal_id)}" data-status="${escape(w.status)}">
<p><strong class="status">${escape(w.status)}</strong> ${escape(w.amount)} ${escape(w.currency)} on ${escape(w.chain)} to <code>${escape(w.to_address)}</code></p>
<p class="hint">net ${escape(w.net_amount)}, fees ${escape(w.total_fee)} ${escape(w.currency)}${w.network_fee_included ? "" : ` + network ${escape(w.network_fee)} ${escape(w.network_fee_asset)} paid by the platform`}; created ${escape(w.created_at)}${w.out_withdrawal_no === null ? "" : `; your reference ${escape(w.out_withdrawal_no)}`}</p>
${w.tx_hash === null ? "" : `<p class="hint">transaction <code>${escape(w.tx_hash)}</code></p>`}
${w.failure_reason === null ? "" : `<p class="notice">${escape(w.failure_reason)}</p>`}
${w.status === "PENDING" ? decisionForms(w, session.csrfToken) : ""}
</section>`).join("\n")}`, session)

export const CONSOLE_CSS = `
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330}
nav{display:flex;gap:16px;align-items:center;flex-wrap:wrap;padding:10px 16px;background:#1d2330}
nav a{color:#fff;text-decoration:none}nav .inline{margin-left:auto}nav .who{color:#c9ced6}
main{max-width:960px;margin:0 auto;padding:16px;background:#fff;min-height:100vh}
form{margin:8px 0}label{display:block;margin:8px 0}input{display:block;width:100%;max-width:360px;padding:8px;font-size:1rem}
.inline{display:inline;margin:0}
button{padding:8px 14px;border:0;border-radius:6px;background:#1d4ed8;color:#fff;font-size:.95rem}
.reject button,.cancel button{background:#6b7280}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:6px;border-bottom:1px solid #e3e6ea}
.hint{color:#5b6472}.notice{color:#9a1c1c}
.withdrawal{border:1px solid #e3e6ea;border-radius:8px;padding:8px 12px;margin:12px 0;overflow-wrap:anywhere}
.gas-low,.gas-empty{color:#9a1c1c}
`
