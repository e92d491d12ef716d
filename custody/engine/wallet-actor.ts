import { ClusterSchema, Entity, Sharding } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Effect, Schema } from "effect"

/**
 * The actor of one wallet (entity id = wallet id): every transfer that leaves the wallet runs inside its
 * `Drive` handler, and the cluster runs one handler per entity id at a time, on whichever runner holds its
 * shard, so one address never has two transfers racing for a nonce, a reference block or a balance.
 * Messages are persisted (SqlMessageStorage) and delivered at least once: a runner that dies mid-handler
 * has the same message delivered again where the shard moves, and the handler resumes from durable state.
 */
export const CustodyWallet = Entity.make("CustodyWallet", [
  Rpc.make("Drive", {
    payload: { operation_id: Schema.String, kick: Schema.Number },
    // a re-sent kick is the same message: it runs once, later senders get its reply
    primaryKey: (payload) => `${payload.operation_id}:${payload.kick}`
  })
]).annotateRpcs(ClusterSchema.Persisted, true)

/** Handing operations to wallet actors. */
export class WalletActors extends Effect.Service<WalletActors>()("facet/WalletActors", {
  effect: Effect.gen(function* () {
    const clientFor = yield* CustodyWallet.client
    yield* Sharding.Sharding

    /** Persists the message and returns; the actor runs it (a crash before that redelivers it). */
    const kick = Effect.fn("WalletActors.kick")(function* (walletId: string, operationId: string, kick: number) {
      yield* clientFor(walletId).Drive({ operation_id: operationId, kick }, { discard: true }).pipe(Effect.orDie)
    })

    /** Hands the operation over and waits for the actor to finish it. */
    const run = Effect.fn("WalletActors.run")(function* (walletId: string, operationId: string, kick: number) {
      yield* clientFor(walletId).Drive({ operation_id: operationId, kick }).pipe(Effect.orDie)
    })

    return { kick, run } as const
  })
}) {}
