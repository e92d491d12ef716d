import { Context, Effect, Layer } from "effect"
import { CustodyConfig } from "./custody-config.js"

/**
 * Where a transfer's driver waits before it looks at the chain again. In the service: a sleep of
 * FACET_CUSTODY_POLL_MS. In the simulation (`npm run sim`): the point where its scheduler takes the turn
 * and gives it to another driver, the chain or a crash — so one seed replays one interleaving exactly.
 */
export class SendPacer extends Context.Tag("facet/SendPacer")<
  SendPacer,
  { readonly pause: (operationId: string) => Effect.Effect<void> }
>() {}

/** The service's pacer: a sleep of FACET_CUSTODY_POLL_MS. */
export const SendPacerLive = Layer.effect(
  SendPacer,
  Effect.map(CustodyConfig, (config) => ({ pause: () => Effect.sleep(config.pollInterval) }))
)
