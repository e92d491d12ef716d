import { Effect, Option, Schema } from "effect"
import type { Network } from "../config.js"
import { ChainIdentityStore } from "../stores/chain-identity-store.js"

/** The node of a chain is not the chain the database has indexed (another network, or a new devnet). */
export class ChainIdentityMismatch extends Schema.TaggedError<ChainIdentityMismatch>()("ChainIdentityMismatch", {
  chain: Schema.String,
  message: Schema.String
}) {}

/**
 * Checks that `genesis` is the genesis the database recorded for `chain`, recording it the first time.
 * Fails with a message an operator can act on when it is not.
 */
export const checkChainIdentity = Effect.fn("checkChainIdentity")(function* (
  chain: string,
  network: Network,
  genesis: string
) {
  const store = yield* ChainIdentityStore
  yield* store.recordFirst(chain, network, genesis)
  const recorded = Option.getOrUndefined(yield* store.find(chain))
  if (recorded !== undefined && (recorded.genesis_hash !== genesis || recorded.network !== network)) {
    return yield* new ChainIdentityMismatch({
      chain,
      message:
        `${chain}: the node's chain (genesis ${genesis}, ${network}) is not the one this database indexed (genesis ${recorded.genesis_hash}, ${recorded.network})` +
        (network === "devnet"
          ? "; `npm run devnet:reset` starts the devnets and their rows afresh"
          : "; point the service at the right node")
    })
  }
})
