import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { can } from "../../src/console/console-roles.js"
import type { Order } from "../../src/domain/order.js"
import type { PaymentLink } from "../../src/domain/payment-link.js"
import { priceWords } from "../../src/payment-links/payment-links.js"
import { html } from "../html.js"
import { hidden, notice, page } from "./console-pages.js"

/**
 * The console's payment links: the list with each link's status, uses, totals and public URL, a form for a
 * new one (owner and admin), and a link's page with its orders. Built with `html`: every value is escaped.
 */

const uses = (link: PaymentLink) => `${link.uses}${link.max_uses === undefined ? "" : ` / ${link.max_uses}`}`

const paidWords = (link: PaymentLink) =>
  link.totals.paid.length === 0 ? "nothing yet" : link.totals.paid.map((p) => `${p.amount} ${p.asset_key}`).join(", ")

const ordersWords = (link: PaymentLink) =>
  Object.entries(link.totals.orders)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`)
    .join(", ") || "none"

/** What the new-link form offers: the assets the merchant can take payments in. */
export interface NewLinkOffer {
  readonly assets: ReadonlyArray<string>
}

const newLinkForm = (
  session: ConsoleSession,
  offer: NewLinkOffer
) => html`<details class="new-link"><summary>New payment link</summary>
<form method="post" action="/console/payment-links" class="create">${hidden(session.csrfToken)}
<label>Product name <input name="product_name" required maxlength="256"></label>
<label>Description (optional) <input name="product_desc" maxlength="2000"></label>
<label>Price (a fixed amount; leave it empty to let the customer choose) <input name="amount" inputmode="decimal"></label>
<label>Or the customer chooses: at least <input name="min_amount" inputmode="decimal"></label>
<label>and at most <input name="max_amount" inputmode="decimal"></label>
<fieldset><legend>Accepted assets (none ticked: your first usable USDT)</legend>
${offer.assets.map((a) => html`<label class="check"><input type="checkbox" name="asset" value="${a}"> ${a}</label>`)}
</fieldset>
<label>At most this many payments (optional) <input name="max_uses" inputmode="numeric"></label>
<label>Expires at the end of (optional, UTC) <input type="date" name="expires_on"></label>
<label>Each order expires after (minutes) <input name="order_expire_minutes" inputmode="numeric" value="15"></label>
<label>Return URL after payment (optional) <input name="return_url" type="url"></label>
<button type="submit">Create link</button></form></details>`

const deactivateForm = (session: ConsoleSession, link: PaymentLink) =>
  link.status !== "inactive" &&
  can(session.role, "manage") &&
  html`<form method="post" action="/console/payment-links/${link.payment_link_id}/deactivate" class="inline deactivate cancel">${hidden(session.csrfToken)}<button type="submit">Deactivate</button></form>`

export const paymentLinksPage = (
  session: ConsoleSession,
  links: ReadonlyArray<PaymentLink>,
  total: number,
  offer: NewLinkOffer,
  message?: string
) =>
  page(
    "Payment links",
    html`${notice(message)}
<p class="hint">A payment link is a page you share: each customer who opens it and continues gets an order of their own, with its own address. ${total} link(s); the newest 100.</p>
${can(session.role, "manage") && newLinkForm(session, offer)}
<table><thead><tr><th>Link</th><th>Status</th><th>Price</th><th>Uses</th><th>Orders</th><th>Paid</th><th></th></tr></thead><tbody>
${links.map(
  (
    l
  ) => html`<tr id="${l.payment_link_id}" data-status="${l.status}"><td><a href="/console/payment-links/${l.payment_link_id}">${l.product_name}</a><br><a class="hint" href="${l.url}">${l.url}</a></td>
<td class="status">${l.status}</td><td>${priceWords(l)}</td><td class="uses">${uses(l)}</td><td>${ordersWords(l)}</td><td class="paid">${paidWords(l)}</td>
<td>${deactivateForm(session, l)}</td></tr>
`
)}
</tbody></table>`,
    session
  )

export const paymentLinkPage = (
  session: ConsoleSession,
  link: PaymentLink,
  orders: ReadonlyArray<Order>,
  total: number,
  message?: string
) =>
  page(
    link.product_name,
    html`${notice(message)}
<section class="link" id="${link.payment_link_id}" data-status="${link.status}">
<p><strong class="status">${link.status}</strong> · ${priceWords(link)} · <span class="uses">${uses(link)}</span> use(s)${link.expires_at !== undefined && ` · expires ${link.expires_at}`}</p>
${link.product_desc !== undefined && html`<p class="hint">${link.product_desc}</p>`}
<p>Public page: <a href="${link.url}"><code>${link.url}</code></a></p>
<p class="hint">Assets: ${(link.accepted_assets ?? []).map((a) => `${a.chain}-${a.currency}`).join(", ") || `your first usable ${link.currency}`}; each order expires after ${link.order_expire_minutes} min; created ${link.created_at}${link.deactivated_at !== undefined && `; deactivated ${link.deactivated_at}`}.</p>
<p>Orders: ${ordersWords(link)}. Paid: <span class="paid">${paidWords(link)}</span>.</p>
${deactivateForm(session, link)}
</section>
<h2>Orders</h2>
<p class="hint">${total} order(s); the newest 100.</p>
<table><thead><tr><th>Order</th><th>Status</th><th>Amount</th><th>Paid</th><th>Network</th><th>Created</th></tr></thead><tbody>
${orders.map(
  (
    o
  ) => html`<tr><td><a href="/checkout/${o.order_id}">${o.order_id}</a></td><td>${o.status}</td><td>${o.amount} ${o.currency}</td>
<td>${o.paid_amount}</td><td>${o.chain}</td><td>${o.created_at}</td></tr>
`
)}
</tbody></table>
<p><a href="/console/payment-links">All payment links</a></p>`,
    session
  )
