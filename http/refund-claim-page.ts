import { Option } from "effect"
import type { FeeQuote } from "../src/domain/withdrawal.js"
import { normalizeDecimal } from "../src/money.js"
import { NETWORK_NAMES } from "../src/orders/checkout.js"
import type { ClaimRow } from "../src/stores/refund-store.js"
import { type Html, html } from "./html.js"

/**
 * The refund claim page a merchant's customer opens from the claim link: server-rendered HTML, no script,
 * one stylesheet from the same origin, one form posting back to the same URL. Every value is escaped by
 * `html`. The token in the URL is the customer's credential: the page sends no referrer and is not cached.
 */

export const CLAIM_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

/** What the page shows: the refund, whose it is, its fees now (when the chain could quote them), and a message. */
export interface ClaimPageView {
  readonly refund: ClaimRow
  readonly fees: Option.Option<FeeQuote>
  /** An answer to the form (a refusal, with what was typed). */
  readonly notice?: string | undefined
  readonly address?: string | undefined
}

const frame = (title: string, body: Html) => html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><meta name="robots" content="noindex">
<title>${title}</title><link rel="stylesheet" href="/refund-claim-assets/claim.css"></head>
<body><main id="refund-claim">
${body}
</main></body></html>`

const when = (date: Date) =>
  date
    .toISOString()
    .replace(/\.\d{3}Z$/, " UTC")
    .replace("T", " ")

const header = (refund: ClaimRow) => html`<header>
<p class="merchant">${refund.merchant_name}</p>
<p class="what">Refund</p>
<p class="total"><span id="amount">${normalizeDecimal(refund.amount)}</span> ${refund.currency}</p>
<p class="network">on ${NETWORK_NAMES[refund.chain]}</p>
${refund.reason !== null && html`<p class="reason">${refund.reason}</p>`}
</header>`

/**
 * What the customer receives, as the withdrawal's fees are quoted now: before the address is known an upper
 * bound (a native's network fee at most, the net at least); the exact figure is set when the form is sent.
 */
const feeLine = (refund: ClaimRow, fees: Option.Option<FeeQuote>) =>
  Option.match(fees, {
    onNone: () =>
      html`<p class="fees">Fees are taken from this amount when it is sent, as for any withdrawal; the exact figure is set when you send the form.</p>`,
    onSome: (q) => {
      const bound = q.network_fee_included && q.fee_kind === "upper_bound"
      return html`<p class="fees">Fees are taken from this amount when it is sent: a platform fee of ${normalizeDecimal(q.platform_fee)} ${q.currency}${q.network_fee_included && html` and a network fee of ${bound && "at most "}${normalizeDecimal(q.network_fee)} ${q.network_fee_asset}`}. You receive ${bound && "at least "}<strong id="net">${normalizeDecimal(q.net_amount)} ${refund.currency}</strong>${bound && "; the exact figure is set when you send the form"}.</p>`
    }
  })

const STATUS_WORDS: Record<string, string> = {
  CLAIMED: "Claimed: the refund is being sent",
  COMPLETED: "Refund sent",
  FAILED: "The refund could not be sent",
  CANCELLED: "This refund was cancelled",
  EXPIRED: "This refund link has expired",
  PENDING_CLAIM: "This refund link has expired"
}

/** The form: an address for the chain, and the customer's word that it is their own and needs no memo. */
export const renderClaimPage = (view: ClaimPageView): string => {
  const { refund } = view
  const network = NETWORK_NAMES[refund.chain]
  return frame(
    `Refund from ${refund.merchant_name}`,
    html`${header(refund)}
${view.notice !== undefined && html`<p class="notice" role="alert">${view.notice}</p>`}
${feeLine(refund, view.fees)}
<div class="warning" role="note"><p><strong>Only ${refund.currency} on ${network}.</strong> Give an address of a wallet you control on ${network}.</p>
<p>Do not give an exchange deposit address that needs a memo, tag or payment ID: the refund is sent without one and could be lost. A refund sent cannot be reversed.</p></div>
<form method="post" class="claim">
<label>Your ${refund.currency} address on ${network} <input name="address" value="${view.address ?? ""}" autocomplete="off" spellcheck="false" required></label>
<label class="check"><input type="checkbox" name="own_address" value="yes" required> This is my own address on ${network}, and it needs no memo or tag</label>
<button type="submit">Send my refund to this address</button>
</form>
<p class="hint">The merchant approves the transfer before it is sent. This link works until ${when(refund.claim_expires_at)}, once.</p>`
  ).text
}

/** A refund that is not waiting for an address any more: where it stands. */
export const renderClaimStatusPage = (refund: ClaimRow, notice?: string): string =>
  frame(
    `Refund from ${refund.merchant_name}`,
    html`${header(refund)}
${notice !== undefined && html`<p class="notice" role="alert">${notice}</p>`}
<p class="status" id="status" data-status="${refund.status}">${STATUS_WORDS[refund.status] ?? refund.status}</p>
${refund.to_address !== null && html`<p class="detail">To <code id="to-address">${refund.to_address}</code>${refund.net_amount !== null && html`: ${normalizeDecimal(refund.net_amount)} ${refund.currency} after fees`}</p>`}
${refund.status === "CLAIMED" && html`<p class="hint">The merchant approves the transfer, then it is signed and sent. This page shows the transaction once it is on chain.</p>`}
${refund.tx_hash !== null && html`<p class="detail">Transaction <code id="tx-hash">${refund.tx_hash}</code></p>`}
${(refund.status === "FAILED" || refund.status === "CANCELLED" || refund.status === "EXPIRED" || refund.status === "PENDING_CLAIM") && html`<p class="hint">Ask ${refund.merchant_name} about it: nothing was sent from this link.</p>`}`
  ).text

/** No refund has this link: mistyped, or replaced by a newer one. */
export const renderClaimNotFoundPage = (): string =>
  frame(
    "Refund link not found",
    html`<p class="status">Refund link not found</p><p>Check the link you were given, or ask the merchant for a new one (a new link replaces the old one).</p>`
  ).text

/** A refusal that is nobody's typing error (too many tries, the chain unreachable): try later. */
export const renderClaimRetryPage = (message: string): string =>
  frame("Try again later", html`<p class="status">Try again later</p><p class="notice" role="alert">${message}</p>`)
    .text

export const CLAIM_CSS = `
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330}
main{max-width:460px;margin:0 auto;padding:20px 16px 40px;background:#fff;min-height:100vh}
header{text-align:center;border-bottom:1px solid #e3e6ea;padding-bottom:12px}
.merchant{font-weight:600;margin:0}.what{color:#5b6472;margin:4px 0 0}.total{font-size:1.6rem;font-weight:700;margin:8px 0 0}
.network,.reason{color:#5b6472;margin:4px 0 0}
.fees{margin:16px 0 8px}
.warning{border:1px solid #e0b44c;background:#fff8e6;border-radius:8px;padding:4px 12px;margin:12px 0;font-size:.92rem}
.claim label{display:block;margin:12px 0}
.claim input[name=address]{display:block;width:100%;padding:10px;font-size:1rem;font-family:ui-monospace,monospace;margin-top:4px}
.check{font-size:.92rem}.check input{margin-right:6px}
button{width:100%;padding:12px 18px;border:0;border-radius:8px;background:#1d4ed8;color:#fff;font-size:1rem}
.hint{color:#5b6472;font-size:.88rem}.notice{color:#9a1c1c;font-weight:600}
.status{text-align:center;font-size:1.15rem;font-weight:600;margin:16px 0 4px}
.status[data-status=COMPLETED]{color:#127a3a}.status[data-status=FAILED],.status[data-status=CANCELLED],.status[data-status=EXPIRED]{color:#9a1c1c}
.detail{overflow-wrap:anywhere;word-break:break-all}
`
