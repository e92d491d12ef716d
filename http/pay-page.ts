import { Option } from "effect"
import type { PaymentLinkPage } from "../src/payment-links/payment-links.js"
import { html } from "./html.js"

/**
 * The public page of a payment link: server-rendered HTML, one stylesheet from the same origin, no script.
 * Its form posts the customer's amount (a link without a fixed price) and asset back to the page; the
 * answer sends the browser on to the new order's checkout page.
 */

export const PAY_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const head = (title: string) => html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="stylesheet" href="/pay-assets/pay.css">
</head>`

const bounds = (view: PaymentLinkPage) =>
  view.minAmount !== undefined && view.maxAmount !== undefined
    ? `from ${view.minAmount} to ${view.maxAmount} ${view.currency}`
    : view.minAmount !== undefined
      ? `at least ${view.minAmount} ${view.currency}`
      : `up to ${view.maxAmount ?? ""} ${view.currency}`

/**
 * The page: merchant, product, the price or an amount field within its bounds, a choice of asset when
 * there are several; or, for a link that takes no visit, why. `error` is what was wrong with the last
 * submission, `amount` what the customer had typed.
 */
export const renderPayPage = (view: PaymentLinkPage, error?: string, amount?: string): string => {
  const closed = Option.getOrUndefined(view.closed)
  const form =
    closed === undefined
      ? html`<form method="post" action="/pay/${view.paymentLinkId}" class="pay">
  ${
    view.amount === undefined &&
    html`<label for="amount">Amount (${view.currency})</label>
  <input id="amount" name="amount" inputmode="decimal" autocomplete="off" required value="${amount ?? ""}" placeholder="${view.minAmount ?? ""}" pattern="[0-9]+([.][0-9]+)?">
  <p class="hint">Choose an amount ${bounds(view)}.</p>`
  }
  ${
    view.assets.length > 1
      ? html`<label for="asset">Pay with</label>
  <select id="asset" name="asset">${view.assets.map((a) => html`<option value="${a.key}">${a.currency} — ${a.network}</option>`)}</select>`
      : view.assets.map(
          (a) =>
            html`<p class="network">Paid in ${a.currency} on ${a.network}</p><input type="hidden" name="asset" value="${a.key}">`
        )
  }
  <button type="submit">Continue to payment</button>
</form>
<p class="hint">The next page shows the address to pay, for this payment alone.</p>`
      : html`<p class="closed" role="alert">${closed.message}</p>`
  return html`<!doctype html>
<html lang="en">
${head(`${view.productName} — ${view.merchantName}`)}
<body>
<main id="pay" data-link="${view.paymentLinkId}" data-state="${closed === undefined ? "active" : closed.state}">
  <header>
    <p class="merchant">${view.merchantName}</p>
    <h1 class="product">${view.productName}</h1>
    ${view.productDesc !== null && html`<p class="desc">${view.productDesc}</p>`}
    ${view.amount !== undefined && html`<p class="total">${view.amount} ${view.currency}</p>`}
  </header>
  ${error !== undefined && html`<p class="error" role="alert">${error}</p>`}
  ${form}
</main>
</body>
</html>`.text
}

/** A page that is only a message: an unknown link, a visit refused by the rate limit. */
export const renderPayMessage = (title: string, message: string) =>
  html`<!doctype html>
<html lang="en">
${head(title)}
<body><main><p class="closed">${title}</p><p>${message}</p></main></body>
</html>`.text

export const PAY_CSS = `
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330}
main{max-width:440px;margin:0 auto;padding:20px 16px 40px;background:#fff;min-height:100vh}
header{text-align:center;border-bottom:1px solid #e3e6ea;padding-bottom:12px}
.merchant{font-weight:600;margin:0;color:#5b6472}.product{font-size:1.4rem;margin:8px 0 0}.desc{color:#5b6472;margin:6px 0 0}
.total{font-size:1.6rem;font-weight:700;margin:10px 0 0}
form.pay{margin-top:16px}
label{display:block;font-weight:600;margin:14px 0 6px}
input,select{display:block;width:100%;padding:12px;font-size:1.1rem;border:1px solid #c9ced6;border-radius:8px;background:#fff}
.network{text-align:center;color:#5b6472;margin:16px 0 0}
button{display:block;width:100%;margin-top:20px;padding:14px;border:0;border-radius:8px;background:#1d4ed8;color:#fff;font-size:1.1rem}
.hint{color:#5b6472;font-size:.9rem;margin:6px 0 0}
.error{color:#9a1c1c;text-align:center;font-weight:600;margin:16px 0 0}
.closed{text-align:center;font-size:1.15rem;font-weight:600;margin:24px 0 8px;color:#9a1c1c}
`
