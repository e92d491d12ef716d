import type { EffectivePolicy, PolicyChange } from "../../custody/withdrawal-policy.js"
import { describeSetting } from "../../custody/withdrawal-policy.js"
import { AuditAction, type AuditFilter, type AuditRow } from "../../src/audit/audit-log.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { can } from "../../src/console/console-roles.js"
import type { ConsoleInvite, ConsoleUser } from "../../custody/console-users.js"
import type { WithdrawalAddress } from "../../src/domain/withdrawal-address.js"
import { html } from "../html.js"
import { confirmFields, hidden, newAccountForm, notice, page } from "./console-pages.js"

/** The console's pages for the withdrawal policy, the address book, the people and the audit log. */

const when = (date: Date) => date.toISOString().replace(".000Z", "Z")

const addressRow = (session: ConsoleSession, e: WithdrawalAddress) =>
  html`<tr id="entry-${e.id}" data-status="${e.status}"><td>${e.label}</td><td>${e.chain}</td><td><code>${e.address}</code></td>
<td class="${e.status === "pending" ? "pending" : ""}">${e.status === "pending" ? `pending until ${e.usable_from}` : "usable"}</td><td>${e.created_by}</td>
<td>${
    can(session.role, "manage") &&
    html`<form method="post" action="/console/address-book/${e.id}/remove" class="remove">${hidden(session.csrfToken)}${confirmFields(session)}
<button type="submit">${e.status === "pending" ? "Cancel" : "Remove"}</button></form>`
  }</td></tr>
`

export const addressBookPage = (
  session: ConsoleSession,
  entries: ReadonlyArray<WithdrawalAddress>,
  enforced: boolean,
  coolingOff: string,
  message?: string
) =>
  page(
    "Address book",
    html`${notice(message)}
<p class="hint">The address book is <strong id="address-book-state">${enforced ? "on: withdrawals go only to usable entries" : "off: withdrawals may go to any address"}</strong>.
A new entry becomes usable after the cooling-off (${coolingOff}); until then it is pending and can be cancelled. Removal is at once.</p>
${
  entries.length === 0
    ? html`<p>No entries.</p>`
    : html`<table><thead><tr><th>Label</th><th>Network</th><th>Address</th><th>Status</th><th>Added by</th><th></th></tr></thead><tbody>
${entries.map((e) => addressRow(session, e))}
</tbody></table>`
}
${
  can(session.role, "manage") &&
  html`<h2>Add an address</h2>
<form method="post" action="/console/address-book" class="add-address">${hidden(session.csrfToken)}
<label>Network <select name="chain"><option>TRC20</option><option>BEP20</option><option>SOLANA</option></select></label>
<label>Address <input name="address" required></label>
<label>Label <input name="label" maxlength="100"></label>
${confirmFields(session)}
<button type="submit">Add</button></form>`
}`,
    session
  )

const SETTING_HELP: Record<string, string> = {
  address_book: "on: withdrawals only to usable address-book entries",
  refund_address_book:
    "on: refunds too go only to usable entries (off: a refund goes to the address its customer gives on the claim page)",
  cooling_off: "how long a new address, a new approver or a loosening waits",
  quorum: "distinct approvals every withdrawal needs"
}

export const policyPage = (
  session: ConsoleSession,
  policy: EffectivePolicy,
  changes: ReadonlyArray<PolicyChange>,
  assets: ReadonlyArray<string>,
  now: Date,
  message?: string
) => {
  const pending = changes.filter((c) => c.status === "PENDING" && c.effective_at > now)
  const history = changes.filter((c) => !(c.status === "PENDING" && c.effective_at > now)).slice(0, 20)
  const perAsset = policy.settings.filter((s) => s.setting.includes(":"))
  return page(
    "Withdrawal policy",
    html`${notice(message)}
<p class="hint">Tightening takes effect at once. Loosening (turning the address book off, raising a limit, lowering the quorum, shortening the cooling-off)
takes effect only after the cooling-off in force, and can be cancelled until then.</p>
<table class="policy"><thead><tr><th>Setting</th><th>In force</th><th></th></tr></thead><tbody>
${["address_book", "refund_address_book", "cooling_off", "quorum"].map((s) => html`<tr id="setting-${s}"><td>${s}</td><td class="value">${describeSetting(s, policy.value(s))}</td><td class="hint">${SETTING_HELP[s] ?? ""}</td></tr>\n`)}
${perAsset.map((s) => html`<tr id="setting-${s.setting.replace(":", "-")}"><td>${s.setting}</td><td class="value">${describeSetting(s.setting, s.value)}</td><td></td></tr>\n`)}
</tbody></table>
<h2>Pending changes</h2>
${
  pending.length === 0
    ? html`<p>None.</p>`
    : html`<table class="pending-changes"><thead><tr><th>Setting</th><th>From → to</th><th>In force from</th><th>Asked by</th><th></th></tr></thead><tbody>
${pending.map(
  (
    c
  ) => html`<tr id="change-${c.id}"><td>${c.setting}</td><td>${describeSetting(c.setting, c.previous_value)} → ${describeSetting(c.setting, c.value)}</td><td class="pending">${when(c.effective_at)}</td>
<td>${c.requested_by}</td><td>${can(session.role, "manage") && html`<form method="post" action="/console/policy/changes/${c.id}/cancel" class="inline">${hidden(session.csrfToken)}<button type="submit">Cancel</button></form>`}</td></tr>
`
)}
</tbody></table>`
}
${
  can(session.role, "manage") &&
  html`<h2>Change</h2>
<form method="post" action="/console/policy" class="change-policy">${hidden(session.csrfToken)}
<p class="hint">Leave a field empty to keep it. Per asset: an amount, or "off" for no limit; more approvals above an amount as AMOUNT:N (e.g. 1000:2), judged on a withdrawal's amount and on a batch's total per asset.</p>
<label>Address book <select name="address_book"><option value="">(keep)</option><option value="on">on</option><option value="off">off</option></select></label>
<label>Address book for refunds <select name="refund_address_book"><option value="">(keep)</option><option value="on">on</option><option value="off">off</option></select></label>
<label>Cooling-off (e.g. 24h, 2d) <input name="cooling_off"></label>
<label>Quorum <input name="quorum" inputmode="numeric"></label>
<label>Asset <select name="asset">${assets.map((a) => html`<option value="${a}">${a}</option>`)}</select></label>
<label>Maximum per withdrawal <input name="per_tx"></label>
<label>Maximum per rolling 24 h <input name="per_day"></label>
<label>More approvals above an amount <input name="quorum_above" placeholder="1000:2"></label>
${confirmFields(session)}
<button type="submit">Apply</button></form>`
}
<h2>History</h2>
<table class="history"><thead><tr><th>Setting</th><th>From → to</th><th>Status</th><th>Asked</th><th>By</th></tr></thead><tbody>
${history.map(
  (
    c
  ) => html`<tr><td>${c.setting}</td><td>${describeSetting(c.setting, c.previous_value)} → ${describeSetting(c.setting, c.value)}</td><td>${c.status.toLowerCase()}${c.ended_by !== null && c.status !== "APPLIED" && ` by ${c.ended_by}`}</td>
<td>${when(c.requested_at)}</td><td>${c.requested_by}</td></tr>
`
)}
</tbody></table>`,
    session
  )
}

const approvalsCount = (user: ConsoleUser, now: Date) =>
  !can(user.role, "decide")
    ? "never"
    : user.approver_from === null || user.approver_from <= now
      ? "now"
      : html`<span class="pending">from ${when(user.approver_from)}</span>`

export const usersPage = (
  session: ConsoleSession,
  people: { readonly users: ReadonlyArray<ConsoleUser>; readonly invites: ReadonlyArray<ConsoleInvite> },
  now: Date,
  invited?: { readonly url: string; readonly loginName: string },
  message?: string
) =>
  page(
    "Users",
    html`${notice(message)}
${invited !== undefined && html`<div class="once" role="status"><p><strong>Invite link for ${invited.loginName}</strong>, shown this once; it works once, for 72 hours. Send it to them yourself.</p><p><code id="invite-link">${invited.url}</code></p></div>`}
<table><thead><tr><th>Login</th><th>Role</th><th>Approvals count</th><th>Second factor</th><th>Invited by</th><th></th></tr></thead><tbody>
${people.users.map(
  (u) => html`<tr id="user-${u.login_name}"><td>${u.login_name}</td><td>${u.role}</td>
<td>${approvalsCount(u, now)}</td>
<td>${u.totp ? "on" : "off"}</td><td>${u.invited_by ?? ""}</td>
<td>${can(session.role, "people") && u.role !== "owner" && html`<form method="post" action="/console/users/${u.id}/remove" class="inline">${hidden(session.csrfToken)}<button type="submit">Remove</button></form>`}</td></tr>
`
)}
${people.invites.map((i) => html`<tr><td>${i.login_name}</td><td>${i.role}</td><td colspan="2" class="pending">invited, link valid until ${when(i.expires_at)}</td><td>${i.invited_by}</td><td></td></tr>\n`)}
</tbody></table>
${
  can(session.role, "people") &&
  html`<h2>Invite someone</h2>
<form method="post" action="/console/users/invite" class="invite">${hidden(session.csrfToken)}
<label>Login name <input name="login_name" required></label>
<label>Role <select name="role"><option value="approver">approver: approves and rejects withdrawals</option><option value="viewer">viewer: only looks</option><option value="admin">admin: also the address book, policy, keys</option></select></label>
<p class="hint">A new approver's approvals count after the cooling-off.</p>
<button type="submit">Create invite link</button></form>`
}`,
    session
  )

export const invitePage = (
  offer: {
    readonly merchantName: string
    readonly loginName: string
    readonly role: string
    readonly invitedBy: string
  },
  token: string,
  error?: string
) =>
  page(
    "Join the console",
    html`${notice(error)}
<p><strong>${offer.invitedBy}</strong> invites you to the console of <strong>${offer.merchantName}</strong> as <strong>${offer.role}</strong>. This link works once.</p>
${newAccountForm("/console/invite", token, offer.loginName, true)}`
  )

/** The audit filter as a query string (`?…`, or "" when there is none), for the CSV link and the next page. */
const auditQuery = (filter: AuditFilter, extra: Record<string, string> = {}) => {
  const params = new URLSearchParams()
  if (filter.action !== undefined && filter.action !== "") params.set("action", filter.action)
  if (filter.actor !== undefined && filter.actor !== "") params.set("actor", filter.actor)
  if (filter.since !== undefined) params.set("since", filter.since.toISOString().slice(0, 10))
  if (filter.until !== undefined)
    params.set("until", new Date(filter.until.getTime() - 86_400_000).toISOString().slice(0, 10))
  for (const [k, v] of Object.entries(extra)) params.set(k, v)
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

const auditRow = (r: AuditRow) =>
  html`<tr data-action="${r.action}"><td>${when(r.at)}</td><td>${r.actor}<br><span class="hint">${r.actor_kind}</span></td>
<td>${r.from_address}${r.user_agent !== "" && html`<br><span class="hint">${r.user_agent.slice(0, 60)}</span>`}</td><td>${r.action}</td><td>${r.subject}<br><span class="hint">${r.detail}</span></td></tr>
`

export const auditPage = (session: ConsoleSession, filter: AuditFilter, rows: ReadonlyArray<AuditRow>) =>
  page(
    "Audit log",
    html`<form method="get" action="/console/audit" class="search audit-filter">
<label>Act <select name="action"><option value="">(all)</option>${AuditAction.literals.map((a) => html`<option${a === filter.action && html` selected`}>${a}</option>`)}</select></label>
<label>Who (part of the name) <input name="actor" value="${filter.actor ?? ""}"></label>
<label>From day <input type="date" name="since" value="${filter.since === undefined ? "" : filter.since.toISOString().slice(0, 10)}"></label>
<label>To day <input type="date" name="until" value="${filter.until === undefined ? "" : new Date(filter.until.getTime() - 86_400_000).toISOString().slice(0, 10)}"></label>
<button type="submit">Filter</button></form>
<p><a id="audit-csv" href="/console/audit.csv${auditQuery(filter)}">Download as CSV</a> (every matching row)</p>
<table class="audit"><thead><tr><th>When</th><th>Who</th><th>From</th><th>Act</th><th>What</th></tr></thead><tbody>
${rows.map(auditRow)}
</tbody></table>
${rows.length === filter.limit && html`<p><a href="/console/audit${auditQuery(filter, { before: rows[rows.length - 1]?.id ?? "" })}">Older</a></p>`}`,
    session
  )
