import { Context, Schema } from "effect"

/** Scopes a key can carry; the onboarding key has all of them. */
export const KeyScope = Schema.Literal("read", "orders", "deposits", "wallet", "withdrawals")
export type KeyScope = typeof KeyScope.Type
export const ALL_SCOPES: ReadonlyArray<KeyScope> = ["read", "orders", "deposits", "wallet", "withdrawals"]

/** The merchant a request acts for, resolved from its X-API-Key. */
export interface Principal {
  readonly merchantId: string
  readonly apiKeyId: string
  readonly scopes: ReadonlyArray<string>
  /** The console user who minted the key (null: the onboarding key, or one the operator made). */
  readonly mintedByUserId: string | null
}

export class CurrentMerchant extends Context.Tag("facet/CurrentMerchant")<CurrentMerchant, Principal>() {}
