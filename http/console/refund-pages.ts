import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { can } from "../../src/console/console-roles.js"
import type { Refund } from "../../src/domain/refund.js"
import { normalizeDecimal } from "../../src/money.js"
import { html } from "../html.js"
import { hidden, notice, page } from "./console-pages.js"

/** The console's refunds: the list (of one order when asked), a new refund, a new claim link, a cancellation. */

const claimState = (r: Refund) =>
  r.status === "PENDING_CLAIM"
    ? html`<span class="pending">link out until ${r.claim_expires_at.slice(0, 16).replace("T", " ")}</span>`
    : r.to_address === null
      ? html`<span class="hint">${r.status === "EXPIRED" ? "never claimed" : "not claimed"}</span>`
      : html`claimed to <code>${r.to_address}</code>${r.net_amount !== null && html`<br><span class="hint">net ${normalizeDecimal(r.net_amount)} ${r.currency}</span>`}`

const refundRow = (session: ConsoleSession, r: Refund) =>
  html`<tr id="${r.refund_id}" data-status="${r.status}"><td><code>${r.refund_id}</code><br><span class="hint">${r.created_at.slice(0, 16).replace("T", " ")}</span></td>
<td><a href="/console/refunds?order=${encodeURIComponent(r.order_id)}">${r.order_id}</a></td>
<td class="status">${r.status}${r.failure_reason !== null && html`<br><span class="hint">${r.failure_reason}</span>`}</td>
<td><strong>${normalizeDecimal(r.amount)} ${r.currency}</strong><br><span class="hint">${r.chain}${r.rate !== null && ` · ${r.order_amount ?? ""} × ${r.rate}`}</span>${r.reason !== null && html`<br><span class="hint">${r.reason}</span>`}</td>
<td>${claimState(r)}</td>
<td>${r.withdrawal_id !== null && html`<a href="/console/withdrawals#${r.withdrawal_id}">${r.withdrawal_id}</a>`}${r.tx_hash !== null && html`<br><span class="hint">tx <code title="${r.tx_hash}">${r.tx_hash.slice(0, 12)}…</code></span>`}</td>
<td>${
    r.status === "PENDING_CLAIM" &&
    can(session.role, "manage") &&
    html`<form method="post" action="/console/refunds/${r.refund_id}/link" class="inline relink">${hidden(session.csrfToken)}<button type="submit">New link</button></form>
<form method="post" action="/console/refunds/${r.refund_id}/cancel" class="inline cancel">${hidden(session.csrfToken)}<button type="submit">Cancel</button></form>`
  }</td></tr>
`

const newRefundForm = (
  session: ConsoleSession,
  orderId: string
) => html`<details class="new-refund"${orderId !== "" && " open"}><summary>New refund</summary>
<form method="post" action="/console/refunds" class="create">${hidden(session.csrfToken)}
<label>Order <input name="order_id" value="${orderId}" required></label>
<label>Asset (CHAIN-CURRENCY; empty when the order was paid in one asset) <input name="asset" placeholder="TRC20-USDT"></label>
<label>Amount in that asset (empty: all that was paid and is not refunded yet) <input name="amount" inputmode="decimal"></label>
<label>Reason (the customer sees it) <input name="reason" maxlength="500"></label>
<p class="hint">The amount is locked now. You get a claim link, shown once, to give the customer: they choose the address, and the transfer then waits here for the approvals your policy requires (someone else must approve a refund you create).</p>
<button type="submit">Create refund</button></form></details>`

export const refundsPage = (
  session: ConsoleSession,
  items: ReadonlyArray<Refund>,
  total: number,
  filter: { readonly orderId: string },
  shown?: { readonly refundId: string; readonly claimUrl: string },
  message?: string
) =>
  page(
    "Refunds",
    html`${notice(message)}
${shown !== undefined && html`<div class="once" role="status"><p><strong>Claim link of ${shown.refundId}</strong>, shown this once: send it to the customer yourself. Whoever holds it chooses where the refund goes; a new link replaces it.</p><p><code id="claim-link">${shown.claimUrl}</code></p></div>`}
<p class="hint">A refund gives back what a customer paid to an order, in the asset paid. It waits for the customer's address (PENDING_CLAIM), then its withdrawal for your approvals on the withdrawals page (CLAIMED), then it is sent (COMPLETED). An unclaimed refund can be cancelled; its link expires.${filter.orderId !== "" && html` Showing the refunds of order <strong>${filter.orderId}</strong>: <a href="/console/refunds">all refunds</a>.`}</p>
${can(session.role, "manage") && newRefundForm(session, filter.orderId)}
<p class="hint">${total} refund(s); the newest 100.</p>
${
  items.length === 0
    ? html`<p>No refunds yet.</p>`
    : html`<table class="refunds"><thead><tr><th>Refund</th><th>Order</th><th>Status</th><th>Amount</th><th>Claim</th><th>Withdrawal</th><th></th></tr></thead><tbody>
${items.map((r) => refundRow(session, r))}
</tbody></table>`
}`,
    session
  )
