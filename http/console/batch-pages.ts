import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { can } from "../../src/console/console-roles.js"
import type { Withdrawal } from "../../src/domain/withdrawal.js"
import type { WithdrawalBatch } from "../../src/domain/withdrawal-batch.js"
import { html } from "../html.js"
import { CSV_COLUMNS, MAX_CSV_BYTES } from "./batch-csv.js"
import { confirmFields, hidden, notice, page } from "./console-pages.js"

/** The console's pages for withdrawal batches: the list with the CSV upload, and one batch with its decision. */

/** A refused row of an upload, as the page lists it. */
export interface RefusedRow {
  readonly line: number
  readonly outWithdrawalNo?: string | undefined
  readonly error: string
}

const totalsText = (batch: WithdrawalBatch) =>
  batch.totals.map((t) => `${t.amount} ${t.currency} on ${t.chain}`).join(", ")

const progressText = (batch: WithdrawalBatch) =>
  Object.entries(batch.item_counts)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`)
    .join(", ")

const uploadForm = (
  session: ConsoleSession
) => html`<details class="new-batch" open><summary>New batch from a CSV file</summary>
<form method="post" action="/console/batches" enctype="multipart/form-data" class="upload">${hidden(session.csrfToken)}
<label>CSV file <input type="file" name="file" accept=".csv,text/csv" required></label>
<label>Description (optional) <input name="description" maxlength="500"></label>
<p class="hint">A header row naming the columns <code>${CSV_COLUMNS.join(",")}</code>, then one withdrawal per row (at most 500 rows, ${MAX_CSV_BYTES / 1024} KiB). Each row needs its own out_withdrawal_no. The batch is admitted whole or refused whole, with every refused row listed; someone else must approve it.</p>
<button type="submit">Upload batch</button></form></details>`

const refusedRows = (rows: ReadonlyArray<RefusedRow>) =>
  rows.length === 0
    ? undefined
    : html`<table class="refused"><thead><tr><th>Row</th><th>out_withdrawal_no</th><th>Why</th></tr></thead><tbody>
${rows.map((r) => html`<tr><td>${r.line}</td><td>${r.outWithdrawalNo ?? ""}</td><td>${r.error}</td></tr>`)}
</tbody></table>`

export const batchesPage = (
  session: ConsoleSession,
  batches: ReadonlyArray<WithdrawalBatch>,
  total: number,
  message?: string,
  refused: ReadonlyArray<RefusedRow> = []
) =>
  page(
    "Withdrawal batches",
    html`${notice(message)}
${refusedRows(refused)}
<p class="hint">A batch is many withdrawals asked for at once (by your backend through the API, or a CSV file here). It is approved, rejected or cancelled once, as a whole; then each withdrawal is sent on its own.</p>
${can(session.role, "manage") && uploadForm(session)}
${
  batches.length === 0
    ? html`<p>No batches yet.</p>`
    : html`<p class="hint">${total} batch(es); the newest 100.</p>
<table class="batches"><thead><tr><th>Batch</th><th>Status</th><th>Items</th><th>Total</th><th>Approvals</th><th>Created</th></tr></thead><tbody>
${batches.map(
  (
    b
  ) => html`<tr id="${b.batch_id}" data-status="${b.status}"><td><a href="/console/batches/${b.batch_id}">${b.batch_id}</a>${b.description !== null && html`<br><span class="hint">${b.description}</span>`}</td>
<td>${b.status}</td><td>${b.item_count}<br><span class="hint">${progressText(b)}</span></td><td>${totalsText(b)}</td>
<td>${b.approvals.length} of ${b.required_approvals}</td><td>${b.created_at}</td></tr>
`
)}
</tbody></table>`
}`,
    session
  )

const decisionForms = (b: WithdrawalBatch, csrf: string, totp: boolean) => html`
<form method="post" action="/console/batches/${b.batch_id}/approve" class="approve">
${hidden(csrf)}
${confirmFields({ totp })}
<button type="submit">Approve the batch</button></form>
<form method="post" action="/console/batches/${b.batch_id}/reject" class="reject">
${hidden(csrf)}
<label>Reason <input name="reason" required></label><button type="submit">Reject the batch</button></form>
<form method="post" action="/console/batches/${b.batch_id}/cancel" class="cancel">
${hidden(csrf)}<button type="submit">Cancel the batch</button></form>`

export const batchPage = (
  session: ConsoleSession,
  batch: WithdrawalBatch,
  items: ReadonlyArray<Withdrawal>,
  message?: string
) =>
  page(
    `Batch ${batch.batch_id}`,
    html`${notice(message)}
<section class="batch" id="${batch.batch_id}" data-status="${batch.status}">
<p><strong class="status">${batch.status}</strong> ${batch.item_count} withdrawal(s)${batch.description !== null && html` — ${batch.description}`}</p>
<table class="totals"><thead><tr><th>Asset</th><th>Items</th><th>Amount</th><th>Net</th><th>Fees</th></tr></thead><tbody>
${batch.totals.map(
  (t) =>
    html`<tr><td>${t.currency} on ${t.chain}</td><td>${t.count}</td><td>${t.amount}</td><td>${t.net_amount}</td><td>${t.total_fee}</td></tr>`
)}
</tbody></table>
<p class="hint">Items: ${progressText(batch)}; created ${batch.created_at}${batch.decided_by !== null && `; decided by ${batch.decided_by}`}${batch.decision_reason !== null && ` (${batch.decision_reason})`}</p>
<p class="approvals">Approvals: <strong>${batch.approvals.length} of ${batch.required_approvals}</strong>${batch.approvals.length > 0 && ` (${batch.approvals.map((a) => a.approved_by).join(", ")})`}</p>
${batch.status === "PENDING" && can(session.role, "decide") && decisionForms(batch, session.csrfToken, session.totp)}
</section>
<h2>Items</h2>
<table class="items"><thead><tr><th>#</th><th>Reference</th><th>Status</th><th>Amount</th><th>Net</th><th>To</th><th>Transaction</th></tr></thead><tbody>
${items.map(
  (
    w,
    i
  ) => html`<tr id="${w.withdrawal_id}" data-status="${w.status}"><td>${i}</td><td>${w.out_withdrawal_no ?? ""}</td><td>${w.status}</td>
<td>${w.amount} ${w.currency}</td><td>${w.net_amount}</td><td><code>${w.to_address}</code></td>
<td>${w.tx_hash !== null && html`<code>${w.tx_hash}</code>`}${w.failure_reason !== null && html`<br><span class="notice">${w.failure_reason}</span>`}</td></tr>
`
)}
</tbody></table>`,
    session
  )
