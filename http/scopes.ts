import { Effect } from "effect"
import { ForbiddenError } from "../src/domain/errors.js"
import { CurrentMerchant } from "../src/merchants/principal.js"

/**
 * The key's scopes gate what it may do: `orders` creates orders, `deposits` deposit addresses, `wallet`
 * sweeps, `withdrawals` withdrawals, `read` the fee quote. Any key of the merchant reads its own data.
 * A key without the scope gets 403 saying which one it lacks.
 */
export const requireScope = (scope: string, what: string) =>
  Effect.flatMap(CurrentMerchant, (principal) =>
    principal.scopes.includes(scope)
      ? Effect.succeed(principal)
      : Effect.fail(new ForbiddenError({ error: `this API key lacks the ${scope} scope that ${what} needs` }))
  )
