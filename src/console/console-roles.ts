/**
 * What each console role may do. owner ⊇ admin ⊇ approver ⊇ viewer, except that only the owner invites
 * and removes people. Enforced by the services that act (a withdrawal decision, the policy); the pages
 * use the same table to show only what a person may press.
 */
export type Capability =
  /** approve, reject or cancel a withdrawal */
  | "decide"
  /** create withdrawals, the address book, the policy, keys, sweeps, assets, webhooks */
  | "manage"
  /** invite and remove console users */
  | "people"
  /** read the audit log */
  | "audit"

const GRANTS: Record<Capability, ReadonlyArray<string>> = {
  decide: ["owner", "admin", "approver"],
  manage: ["owner", "admin"],
  people: ["owner"],
  audit: ["owner", "admin"]
}

export const can = (role: string, capability: Capability) => GRANTS[capability].includes(role)
