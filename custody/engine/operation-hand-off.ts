import { Context, Effect, Layer } from "effect"
import { type HandOff, Operations } from "./operations.js"

/**
 * How an approval's new operations reach their wallets' actors, chosen by the process (a port): the service,
 * which hosts the actors, hands them over by message once the approving transaction committed
 * (`OperationHandOffLive`); an operator command, which runs no cluster, leaves them to the running
 * service's resume pass, which hands over within seconds what nobody handed over yet
 * (`OperationHandOffByResumeLive`).
 */
export class OperationHandOff extends Context.Tag("facet/OperationHandOff")<
  OperationHandOff,
  { readonly handOver: (operations: ReadonlyArray<HandOff>) => Effect.Effect<void> }
>() {}

/** The service: by message, at once. */
export const OperationHandOffLive = Layer.effect(
  OperationHandOff,
  Effect.map(Operations, (operations) => ({ handOver: operations.handOverAll }))
).pipe(Layer.provide(Operations.Default))

/** An operator command: the running service's resume pass hands the operations over (kicks = 0). */
export const OperationHandOffByResumeLive = Layer.succeed(OperationHandOff, { handOver: () => Effect.void })
