import { SqlClient } from "@effect/sql"
import { Data, Effect, Either, Option } from "effect"
import type { ChainClient, ChainRpcError, TransferRequest } from "../src/chains/chain-client.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import type { KeyRef } from "../src/keys/signer.js"
import { fromBaseUnits } from "../src/money.js"
import { newId } from "../src/ids.js"
import { CustodyConfig } from "./custody-config.js"
import type { OperationRow } from "./custody-operation.js"
import { CustodyStore } from "./custody-store.js"

/** One outgoing transfer of an operation: who signs, where it goes, and who pays the fee (Solana). */
export interface TransferLeg {
  readonly from: KeyRef
  readonly to: string
  readonly currency: string
  readonly amount: bigint
  readonly decimals: number
  readonly feePayer?: KeyRef
  /** The receive wallet the `transactions` row belongs to (the swept one, or the one gas goes to). */
  readonly walletId: string
}

export type SendOutcome = Data.TaggedEnum<{
  /** `amount` and `maxFee` as signed (a native sweep sends less than it asked, to pay its own fee). */
  Final: { readonly txHash: string; readonly amount: bigint; readonly fee: bigint; readonly maxFee: bigint; readonly blockNumber: bigint; readonly confirmations: number }
  /** `burned`: the fee a transaction that failed on chain still cost (native base units; 0 when none was mined). */
  Failed: { readonly reason: string; readonly burned: bigint }
}>
export const SendOutcome = Data.taggedEnum<SendOutcome>()

type Step = Data.TaggedEnum<{ Wait: { readonly what: string }; Again: {}; Done: { readonly outcome: SendOutcome } }>
const Step = Data.taggedEnum<Step>()

/**
 * Drives one transfer of an operation from nothing to final, from durable state only, so it can be
 * run again at any point after a crash: the stored attempt is looked up on chain first; stored bytes are
 * re-sent while they can still land; a new transaction is signed only once the old one is proven dead
 * (EVM: its nonce used by another; TRON: expired; Solana: past lastValidBlockHeight). The caller books
 * the ledger when this returns Final, in the transaction that completes the operation.
 */
export class TransferSender extends Effect.Service<TransferSender>()("facet/TransferSender", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* CustodyStore
    const clients = yield* ChainClients
    const config = yield* CustodyConfig

    /** Dies here, without any cleanup, when the crash tests ask for it (FACET_FAULT_CRASH_POINT). */
    const crashPoint = (operation: OperationRow, point: "after-sign" | "after-broadcast") =>
      Option.contains(config.crashPoint, `${operation.type}:${point}`)
        ? Effect.zipRight(Effect.logWarning(`FACET_FAULT_CRASH_POINT: killing the process ${point} of ${operation.id}`), Effect.sync(() => process.kill(process.pid, "SIGKILL")))
        : Effect.void

    const sign = (client: ChainClient, operation: OperationRow, leg: TransferLeg) =>
      Effect.gen(function*() {
        const fromAddress = operation.from_address
        const nonce = client.chain === "BEP20"
          ? yield* Effect.flatMap(client.finalNonce(fromAddress), (final) => store.nextNonce(client.chain, fromAddress, final))
          : undefined
        const request: TransferRequest = {
          from: leg.from,
          to: leg.to,
          currency: leg.currency,
          amount: leg.amount,
          ...(nonce === undefined ? {} : { nonce }),
          ...(leg.feePayer === undefined ? {} : { feePayer: leg.feePayer })
        }
        return yield* client.prepare(request)
      })

    /** The merchant-visible row of a custody transaction, written with the signed bytes. */
    const recordRow = (operation: OperationRow, leg: TransferLeg, txHash: string) =>
      sql`INSERT INTO transactions ${sql.insert({
        id: newId("txn"),
        merchant_id: operation.merchant_id,
        type: operation.type,
        status: "pending",
        chain: operation.chain,
        currency: leg.currency,
        amount: fromBaseUnits(leg.amount, leg.decimals),
        tx_hash: txHash,
        event_index: -1,
        from_address: operation.from_address,
        to_address: leg.to,
        wallet_id: leg.walletId,
        operation_id: operation.id,
        withdrawal_id: operation.withdrawal_id
      })} ON CONFLICT DO NOTHING`.pipe(Effect.orDie)

    const step = (client: ChainClient, operation: OperationRow, leg: TransferLeg): Effect.Effect<Step, ChainRpcError> =>
      Effect.gen(function*() {
        const live = yield* store.liveAttempt(operation.id)
        if (Option.isNone(live)) {
          const signed = yield* sign(client, operation, leg).pipe(
            Effect.map(Either.right),
            Effect.catchTag("TransferRejected", (rejected) => Effect.succeed(Either.left(rejected.message)))
          )
          if (Either.isLeft(signed)) return Step.Done({ outcome: SendOutcome.Failed({ reason: `refused before signing: ${signed.left}`, burned: 0n }) })
          yield* sql.withTransaction(Effect.zipRight(
            store.recordSigned(operation, signed.right, leg),
            recordRow(operation, leg, signed.right.txHash)
          )).pipe(Effect.orDie)
          yield* Effect.logInfo(`custody ${operation.id}: signed ${operation.chain} ${signed.right.txHash}, stored before broadcast`)
          yield* crashPoint(operation, "after-sign")
          return Step.Again()
        }
        const attempt = live.value
        const found = yield* client.transaction(attempt.tx_hash)
        if (Option.isSome(found) && Option.isSome(found.value.blockNumber)) {
          const blockNumber = found.value.blockNumber.value
          const final = blockNumber <= (yield* client.finalized)
          const fee = Option.getOrUndefined(found.value.fee)
          if (found.value.status === "failed") {
            if (!final) return Step.Wait({ what: `a failed transaction ${attempt.tx_hash} to become final` })
            yield* store.markAttempt(attempt.chain, attempt.tx_hash, "reverted", { blockNumber, fee })
            return Step.Done({ outcome: SendOutcome.Failed({ reason: `transaction ${attempt.tx_hash} failed on chain (its fee was burned; nothing else moved)`, burned: fee ?? 0n }) })
          }
          if (attempt.status !== "included" && attempt.status !== "final") yield* store.markAttempt(attempt.chain, attempt.tx_hash, "included", { blockNumber, fee })
          if (!final) return Step.Wait({ what: `${attempt.tx_hash} in block ${blockNumber} to become final` })
          return Step.Done({ outcome: SendOutcome.Final({ txHash: attempt.tx_hash, amount: attempt.amount, fee: fee ?? attempt.fee ?? 0n, maxFee: attempt.max_fee, blockNumber, confirmations: found.value.confirmations }) })
        }
        // not in a block: still pending in a mempool, or never sent, or gone
        // (the client asks again for the transaction after its proof, of the same node: chain-client.ts)
        const window = { txHash: attempt.tx_hash, from: attempt.from_address, nonce: Option.fromNullable(attempt.nonce), validUntil: Option.fromNullable(attempt.valid_until) }
        if (!(yield* client.canStillLand(window))) {
          yield* store.markAttempt(attempt.chain, attempt.tx_hash, "dropped", { error: "proven never to land" })
          yield* Effect.orDie(sql`UPDATE transactions SET status = 'failed', updated_at = clock_timestamp() WHERE chain = ${attempt.chain} AND tx_hash = ${attempt.tx_hash}`)
          yield* Effect.logWarning(`custody ${operation.id}: ${attempt.tx_hash} can never land; signing a new transaction`)
          return Step.Again()
        }
        if (Option.isSome(found) && attempt.status === "broadcast") return Step.Wait({ what: `${attempt.tx_hash} to be mined` })
        // from here on a refusal no longer proves the bytes are not out (a lost answer, a crash after the send)
        if (!attempt.sent) yield* store.markSending(attempt.chain, attempt.tx_hash)
        const sent = yield* client.broadcast(attempt.raw).pipe(
          Effect.as(Option.none<string>()),
          Effect.catchTag("TransferRejected", (rejected) => Effect.succeed(Option.some(rejected.message)))
        )
        if (Option.isNone(sent)) {
          yield* crashPoint(operation, "after-broadcast")
          if (attempt.status === "signed") yield* store.markBroadcast(operation, attempt.tx_hash)
          return Step.Wait({ what: `${attempt.tx_hash} to be mined` })
        }
        // Refused again after an earlier send: that send may have been accepted — by another node, or before
        // a lost answer — and can still land (a lagging node says "blockhash not found", "nonce too low",
        // "insufficient funds" of a copy already in a mempool). Failing now would hand the money back while
        // it may leave: it waits until the transaction lands or is proven never to (the check above).
        if (attempt.sent) {
          yield* store.markAttempt(attempt.chain, attempt.tx_hash, attempt.status, { error: sent.value })
          return Step.Wait({ what: `${attempt.tx_hash}: refused when sent again (${sent.value}), but an earlier send may land` })
        }
        // refused at its first send: unless it is on chain after all, it never goes out again
        const again = yield* client.transaction(attempt.tx_hash)
        if (Option.isSome(again)) return Step.Wait({ what: `${attempt.tx_hash} to be mined` })
        yield* store.markAttempt(attempt.chain, attempt.tx_hash, "rejected", { error: sent.value })
        return Step.Done({ outcome: SendOutcome.Failed({ reason: `the node refused ${attempt.tx_hash}: ${sent.value}`, burned: 0n }) })
      })

    const send = Effect.fn("TransferSender.send")(function*(operation: OperationRow, leg: TransferLeg) {
      const client = yield* Option.match(clients.get(operation.chain), {
        onNone: () => Effect.dieMessage(`no chain client for ${operation.chain}`),
        onSome: Effect.succeed
      })
      for (;;) {
        const next = yield* step(client, operation, leg).pipe(
          // a node that does not answer is waited for, never a reason to sign something new
          Effect.catchTag("ChainRpcError", (error) => Effect.succeed(Step.Wait({ what: `the ${operation.chain} node (${error.message})` })))
        )
        if (next._tag === "Done") return next.outcome
        if (next._tag === "Wait") {
          yield* store.waitingFor(operation.id, next.what)
          yield* Effect.sleep(config.pollInterval)
        }
      }
    })

    return { send } as const
  })
}) {}
