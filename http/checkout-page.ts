import { Option } from "effect"
import QRCode from "qrcode"
import type { CheckoutView } from "../src/orders/checkout.js"
import { html, raw } from "./html.js"

/**
 * The hosted checkout page: server-rendered HTML, the QR codes as inline SVG made here, one stylesheet
 * and one script from the same origin (the Content-Security-Policy allows nothing else), live status by
 * polling `/checkout/{id}/status`.
 */

export const CHECKOUT_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const STATUS_WORDS: Record<string, string> = {
  PENDING: "Waiting for your payment",
  CONFIRMING: "Payment seen — confirming",
  PAID: "Paid",
  PARTIALLY_PAID: "Partially paid",
  EXPIRED: "Expired"
}

const qrSvg = (uri: string) => QRCode.toString(uri, { type: "svg", errorCorrectionLevel: "M", margin: 2, width: 240 })

export const renderCheckoutPage = async (view: CheckoutView): Promise<string> => {
  const panels = await Promise.all(
    view.assets.map(
      async (asset, i) => html`
    <section class="asset" data-asset="${i}"${i === 0 ? "" : " hidden"}>
      <p class="amount"><span class="value">${asset.amount}</span> <span class="unit">${asset.currency}</span></p>
      <p class="network">on ${asset.network}${Option.match(asset.tokenContract, { onNone: () => undefined, onSome: (c) => html`<br><span class="contract">token contract <code>${c}</code></span>` })}</p>
      <div class="qr" role="img" aria-label="QR code of the payment">${raw(await qrSvg(asset.paymentUri))}</div>
      <p class="label">Send exactly this amount to</p>
      <p class="address"><code id="address-${i}">${asset.address}</code></p>
      <button type="button" class="copy" data-copy="address-${i}">Copy address</button>
      <p class="warning">Only ${asset.currency} on ${asset.network}. Other assets or networks are not credited to this order.</p>
    </section>`
    )
  )
  const choices =
    view.checkoutMode === "multi_asset" && view.assets.length > 1
      ? html`<label class="choose">Pay with <select id="asset-choice">${view.assets.map((a, i) => html`<option value="${i}">${a.currency} — ${a.network}</option>`)}</select></label>`
      : undefined
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Pay ${view.merchantName}</title>
<link rel="stylesheet" href="/checkout-assets/checkout.css">
<script src="/checkout-assets/checkout.js" defer></script>
</head>
<body>
<main id="checkout" data-order="${view.orderId}" data-expire="${view.expire_at}" data-status="${view.status}">
  <header>
    <p class="merchant">${view.merchantName}</p>
    ${view.productName === null ? undefined : html`<p class="product">${view.productName}</p>`}
    <p class="total">${view.amount} ${view.currency}</p>
  </header>
  <p class="status" id="status" data-status="${view.status}">${STATUS_WORDS[view.status] ?? view.status}</p>
  <p class="detail" id="detail"></p>
  <p class="countdown" id="countdown"></p>
  ${choices}
  ${panels}
  <p class="late" id="late"${view.late_payment ? "" : " hidden"}>This payment arrived after the order expired; the merchant has been told.</p>
  ${view.return_url === null ? undefined : html`<p><a class="return" id="return" href="${view.return_url}" hidden>Back to ${view.merchantName}</a></p>`}
</main>
</body>
</html>`.text
}

export const renderNotFoundPage = () => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Order not found</title><link rel="stylesheet" href="/checkout-assets/checkout.css"></head>
<body><main><p class="status">Order not found</p><p>Check the link you were given, or ask the merchant for a new one.</p></main></body></html>`

export const CHECKOUT_CSS = `
*{box-sizing:border-box}
[hidden]{display:none!important}
main[data-status=PAID] .asset,main[data-status=PAID] .choose,main[data-status=EXPIRED] .asset,main[data-status=EXPIRED] .choose{display:none}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330}
main{max-width:440px;margin:0 auto;padding:20px 16px 40px;background:#fff;min-height:100vh}
header{text-align:center;border-bottom:1px solid #e3e6ea;padding-bottom:12px}
.merchant{font-weight:600;margin:0}.product{color:#5b6472;margin:4px 0 0}.total{font-size:1.6rem;font-weight:700;margin:8px 0 0}
.status{text-align:center;font-size:1.15rem;font-weight:600;margin:16px 0 4px}
.status[data-status=PAID]{color:#127a3a}.status[data-status=EXPIRED]{color:#9a1c1c}.status[data-status=CONFIRMING],.status[data-status=PARTIALLY_PAID]{color:#9a6a00}
.detail,.countdown{text-align:center;color:#5b6472;margin:4px 0}
.choose{display:block;text-align:center;margin:12px 0}
.asset{text-align:center}.amount{font-size:1.3rem;margin:16px 0 0}.network{color:#5b6472;margin:4px 0 12px;overflow-wrap:anywhere}
.qr svg{width:240px;height:240px;max-width:100%}
.label{margin:8px 0 4px;color:#5b6472}
.address code,.contract code{overflow-wrap:anywhere;word-break:break-all;font-size:.95rem}
.copy{margin-top:8px;padding:10px 18px;border:0;border-radius:8px;background:#1d4ed8;color:#fff;font-size:1rem}
.warning{font-size:.85rem;color:#9a6a00;margin-top:16px}
.late{color:#9a6a00;text-align:center}
.return{display:block;text-align:center;margin-top:20px;padding:12px;border-radius:8px;background:#127a3a;color:#fff;text-decoration:none}
`

/** Polls the status, counts down, copies the address, switches assets. No third-party code. */
export const CHECKOUT_JS = `"use strict";
(function () {
  var root = document.getElementById("checkout");
  if (!root) return;
  var orderId = root.getAttribute("data-order");
  var expireAt = Date.parse(root.getAttribute("data-expire"));
  var words = ${JSON.stringify(STATUS_WORDS)};
  var statusEl = document.getElementById("status");
  var detail = document.getElementById("detail");
  var countdown = document.getElementById("countdown");
  var finished = false;
  var closed = false;
  function show(s) {
    statusEl.setAttribute("data-status", s.status);
    root.setAttribute("data-status", s.status);
    statusEl.textContent = words[s.status] || s.status;
    var text = "";
    if (s.status === "CONFIRMING" && s.payment) text = s.payment.amount + " " + s.payment.currency + " seen, " + s.payment.confirmations + " of " + s.payment.required + " confirmations";
    if (s.status === "PARTIALLY_PAID" || (s.status === "PENDING" && s.paid_amount !== "0")) text = s.paid_amount + " " + s.currency + " received, " + s.due + " " + s.currency + " still due";
    if (s.status === "PAID") text = s.paid_amount + " " + s.currency + " received";
    if (s.status === "PAID" && s.underpaid_amount) text = s.paid_amount + " " + s.currency + " received: paid (within the merchant's tolerance)";
    detail.textContent = text;
    document.getElementById("late").hidden = !s.late_payment;
    var back = document.getElementById("return");
    if (back) back.hidden = s.status !== "PAID";
    // only PAID ends the page's watch: after EXPIRED or PARTIALLY_PAID a late payment can still arrive
    finished = s.status === "PAID";
    closed = s.status === "EXPIRED" || s.status === "PARTIALLY_PAID";
    if (finished || closed) countdown.textContent = "";
  }
  function poll() {
    fetch("/checkout/" + encodeURIComponent(orderId) + "/status", { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) { if (s) show(s); })
      .catch(function () {})
      .then(function () { if (!finished) setTimeout(poll, closed ? 5000 : 2000); });
  }
  function tick() {
    if (finished || closed) return;
    var left = Math.max(0, Math.floor((expireAt - Date.now()) / 1000));
    countdown.textContent = left > 0 ? "Expires in " + Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0") : "Time is up: a payment already sent is still honoured";
    setTimeout(tick, 1000);
  }
  document.querySelectorAll("button.copy").forEach(function (button) {
    button.addEventListener("click", function () {
      var target = document.getElementById(button.getAttribute("data-copy"));
      if (target && navigator.clipboard) navigator.clipboard.writeText(target.textContent).then(function () { button.textContent = "Copied"; });
    });
  });
  var choice = document.getElementById("asset-choice");
  if (choice) choice.addEventListener("change", function () {
    document.querySelectorAll("section.asset").forEach(function (section) { section.hidden = section.getAttribute("data-asset") !== choice.value; });
  });
  show({ status: root.getAttribute("data-status"), paid_amount: "0", due: "", currency: "", late_payment: false, payment: null });
  tick();
  poll();
})();
`
