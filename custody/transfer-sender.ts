import { SqlClient } from "@effect/sql"
import { Data, Duration, Effect, Either, Option } from "effect"
import type {
  ChainAction,
  ChainClient,
  ChainRpcError,
  FeeAboveCap,
  SignedTransfer,
  TransactionLookup,
  TransferRequest
} from "../src/chains/chain-client.js"
import { TransferRejected } from "../src/chains/chain-client.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import type { KeyRef } from "../src/keys/signer.js"
import { fromBaseUnits } from "../src/money.js"
import { newId } from "../src/ids.js"
import { TransactionStore } from "../src/stores/transaction-store.js"
import { CustodyConfig } from "./custody-config.js"
import { SendPacer, SendPacerLive } from "./send-pacer.js"
import { SendRules } from "./send-rules.js"
import { type AttemptRow, CustodyStore, type OperationRow } from "../src/stores/custody-store.js"
import { WithdrawalStore } from "../src/stores/withdrawal-store.js"

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
  /** The most its fee may be, in native base units (a native withdrawal: its quote); the chain's cap otherwise. */
  readonly maxFee?: bigint
  /** Not a transfer but this (closing a Solana token account): the platform's own, no merchant-visible row. */
  readonly action?: ChainAction
  /** EVM: not the transfer but its cancellation, a zero-value self-transfer that only fills the nonce. */
  readonly cancels?: true
  /**
   * A native sweep paying its fee out of what it sends: a replacement at a higher price sends the operation's
   * amount less its own whole fee, so amount and fee never ask more than the sweep moves.
   */
  readonly paysOwnFee?: true
}

export type SendOutcome = Data.TaggedEnum<{
  /** `amount` and `maxFee` as signed (a native sweep sends less than it asked, to pay its own fee). */
  Final: {
    readonly txHash: string
    readonly amount: bigint
    readonly fee: bigint
    readonly maxFee: bigint
    readonly blockNumber: bigint
    readonly confirmations: number
    /** Solana: what the fee payer's balance fell by in it (fee and rent it paid), when the lookup said. */
    readonly payerSpent: bigint | undefined
  }
  /** `burned`: the fee a transaction that failed on chain still cost (native base units; 0 when none was mined). */
  Failed: { readonly reason: string; readonly burned: bigint }
}>
export const SendOutcome = Data.taggedEnum<SendOutcome>()

/** Wait and look again; Halt: wait, and the wallet is halted with an alert until the chain shows more. */
/** A transaction a lookup found in a block. */
type Included = Omit<TransactionLookup, "blockNumber"> & { readonly blockNumber: bigint }

type Step = Data.TaggedEnum<{
  /** Nothing of the transfer is out and this caller may not sign one (`watch`). */
  Stop: {}
  /** `inBlock`: a lookup found the transfer in a block, and only its finality is waited for. */
  Wait: { readonly what: string; readonly inBlock?: true }
  Halt: { readonly why: string }
  Again: {}
  Done: { readonly outcome: SendOutcome }
}>
const Step = Data.taggedEnum<Step>()

/**
 * Who drives: the `owner` (the sending wallet's actor, the one broadcaster: it signs, sends, replaces and
 * cancels); a `follower` (the same actor for a transfer it can no longer sign for: it sends stored bytes again,
 * never signs); a `reader` (another wallet's actor waiting for it: it only looks, and books what final
 * state shows).
 */
type Role = "owner" | "follower" | "reader"

/**
 * EVM: a documented refusal that says the transfer itself cannot go (no funds for it, a gas limit no block
 * takes, a bad signature): its nonce is filled by a cancellation. Any other (the nonce taken or outbid, a
 * price too low) is waited out: landing evidence or a replacement at a higher price decides.
 */
const CANCEL_ON = /insufficient funds|intrinsic gas too low|exceeds block gas limit|invalid sender/i

/**
 * A documented refusal that may only say the node is behind (a reference block or blockhash it has not
 * seen): once final state proves such an attempt never landed, the transfer is signed again, not failed.
 */
const STALE_VIEW = /blockhash not found|TAPOS_ERROR|TRANSACTION_EXPIRATION_ERROR|nonce too low/i

/**
 * Drives one transfer of an operation from nothing to final, from durable state only, so it can be
 * run again at any point after a crash: the stored attempt is looked up on chain first; stored bytes are
 * re-sent while they can still land; a new transaction is signed only once the old one is proven dead
 * (EVM: its nonce used by another; TRON: expired; Solana: past lastValidBlockHeight). The caller books
 * the ledger when this returns Final, in the transaction that completes the operation.
 */
export class TransferSender extends Effect.Service<TransferSender>()("facet/TransferSender", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transactionStore = yield* TransactionStore
    const store = yield* CustodyStore
    const withdrawals = yield* WithdrawalStore
    const clients = yield* ChainClients
    const config = yield* CustodyConfig
    const pacer = yield* SendPacer

    const clientOf = (operation: OperationRow) =>
      Option.match(clients.get(operation.chain), {
        onNone: () => Effect.dieMessage(`no chain client for ${operation.chain}`),
        onSome: Effect.succeed
      })

    /** Dies here, without any cleanup, when the crash tests ask for it (FACET_FAULT_CRASH_POINT). */
    const crashPoint = (operation: OperationRow, point: "after-sign" | "after-broadcast") =>
      Option.contains(config.crashPoint, `${operation.type}:${point}`)
        ? Effect.zipRight(
            Effect.logWarning(`FACET_FAULT_CRASH_POINT: killing the process ${point} of ${operation.id}`),
            Effect.sync(() => process.kill(process.pid, "SIGKILL"))
          )
        : Effect.void

    /**
     * Builds and signs the leg's transfer (stored by the caller before it is sent). EVM: at the address's
     * next nonce, or, `replacing` an attempt stuck in mempools, at its nonce and a fifth above its gas price.
     * A signature custody stored before (the same bytes as an attempt refused earlier: same nonce, price and
     * call) is made again one wei dearer, so that a hash always names one attempt; elsewhere (TRON, Solana)
     * none is returned, and the next reference block or blockhash makes it new.
     */
    const sign = (client: ChainClient, operation: OperationRow, leg: TransferLeg, replacing?: AttemptRow) =>
      Effect.gen(function* () {
        const fromAddress = operation.from_address
        const rules = yield* SendRules
        const nonceFrom = rules.lowestFreeNonce ? store.nextNonce : store.counterNonce
        const nonce =
          replacing?.nonce ??
          (client.chain === "BEP20"
            ? yield* Effect.flatMap(client.finalNonce(fromAddress), (final) =>
                nonceFrom(client.chain, fromAddress, final)
              )
            : undefined)
        const outbid =
          replacing?.gas_price === null || replacing?.gas_price === undefined
            ? undefined
            : replacing.gas_price + (replacing.gas_price + 4n) / 5n
        const request: TransferRequest = {
          from: leg.from,
          to: leg.to,
          currency: leg.currency,
          amount: leg.amount,
          ...(nonce === undefined || nonce === null ? {} : { nonce }),
          ...(outbid === undefined ? {} : { gasPriceAtLeast: outbid }),
          ...(leg.feePayer === undefined ? {} : { feePayer: leg.feePayer }),
          ...(leg.action === undefined ? {} : { action: leg.action }),
          ...(client.chain === "POLYGON"
            ? {}
            : {
                feeCap: { ...config.feeCaps[client.chain], ...(leg.maxFee === undefined ? {} : { maxFee: leg.maxFee }) }
              })
        }
        const signed = yield* client.prepare(request)
        if (!(yield* store.hashTaken(client.chain, signed.txHash))) return Option.some(signed)
        if (client.chain !== "BEP20") return Option.none<SignedTransfer>()
        const dearer = yield* client.prepare({ ...request, gasPriceAtLeast: signed.gasPrice + 1n })
        return (yield* store.hashTaken(client.chain, dearer.txHash))
          ? Option.none<SignedTransfer>()
          : Option.some(dearer)
      })

    /** What the attempt's row says it does: the leg's chain action, or `Cancel`. */
    const stored = (leg: TransferLeg) =>
      leg.cancels === true
        ? { to: leg.to, currency: leg.currency, amount: leg.amount, action: { _tag: "Cancel" as const } }
        : leg

    /** The merchant-visible row of a custody transaction, written with the signed bytes (the platform's own: none). */
    const recordRow = (operation: OperationRow, leg: TransferLeg, txHash: string) =>
      operation.merchant_id === null || leg.cancels === true || leg.action !== undefined
        ? Effect.void
        : transactionStore
            .recordCustodyRow({
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
            })
            .pipe(Effect.orDie)

    /**
     * The node's price is above the transfer's cap: nothing is signed; it waits for the price to fall, and
     * fails after FACET_FEE_WAIT_MINUTES of waiting (counted from the first refusal, across restarts).
     */
    const feeAboveCap = (operation: OperationRow, above: FeeAboveCap) =>
      Effect.gen(function* () {
        const waited = yield* store.feeCapped(operation.id)
        if (Duration.greaterThanOrEqualTo(waited, config.feeWait)) {
          return Step.Done({
            outcome: SendOutcome.Failed({
              reason: `the network fee stayed above its cap for ${Duration.format(config.feeWait)}: ${above.message}`,
              burned: 0n
            })
          })
        }
        return Step.Wait({ what: `the network fee to fall under its cap (${above.message})` })
      })

    /**
     * A replacement of `stuck`, and the leg it signs. A native sweep paying its own fee (`paysOwnFee`) sends
     * what its operation moves less the replacement's whole fee (amount + fee = the operation's amount, never
     * more: the first attempt kept back a margin on an estimate, which a higher price eats). A price that rose
     * again between the two signatures refuses it this time (the next poll tries again).
     */
    const signReplacement = (client: ChainClient, operation: OperationRow, leg: TransferLeg, stuck: AttemptRow) =>
      Effect.gen(function* () {
        const first = yield* sign(client, operation, leg, stuck)
        const budget = operation.amount
        if (leg.paysOwnFee !== true || Option.isNone(first) || leg.amount + first.value.maxFee <= budget)
          return { leg, signed: first }
        const smaller: TransferLeg = { ...leg, amount: budget - first.value.maxFee }
        if (smaller.amount <= 0n)
          return yield* new TransferRejected({
            chain: client.chain,
            message: `a replacement at ${first.value.gasPrice} wei/gas would cost all ${budget} the sweep has`
          })
        const signed = yield* sign(client, operation, smaller, stuck)
        if (Option.isSome(signed) && smaller.amount + signed.value.maxFee > budget)
          return yield* new TransferRejected({
            chain: client.chain,
            message: `the gas price rose while the replacement was signed (${signed.value.gasPrice} wei/gas)`
          })
        return { leg: smaller, signed }
      })

    /**
     * EVM: an attempt sent FACET_FEE_BUMP_AFTER_SECONDS ago and still not mined (underpriced) is replaced at
     * its nonce with a higher gas price, within the leg's fee cap. Both are kept: the first becomes
     * `replaced` and may still land until the nonce is used; whichever lands is booked (`nonceUsed`). Left,
     * saying why, when no replacement can be signed now (above the cap, refused): the first is waited for.
     */
    const replace = (client: ChainClient, operation: OperationRow, given: TransferLeg, stuck: AttemptRow) =>
      Effect.gen(function* () {
        const signed = yield* signReplacement(client, operation, given, stuck).pipe(
          Effect.map(Either.right),
          Effect.catchTags({
            TransferRejected: (e) => Effect.succeed(Either.left(e.message)),
            FeeAboveCap: (e) => Effect.succeed(Either.left(e.message))
          })
        )
        if (Either.isLeft(signed) || Option.isNone(signed.right.signed)) {
          return Either.left(
            `${stuck.tx_hash}, not mined ${Math.round((stuck.sent_ms_ago ?? 0) / 1000)} s after it was sent, to be mined (no replacement now: ${Either.isLeft(signed) ? signed.left : "its signature matched one stored before"})`
          )
        }
        const { leg } = signed.right
        const replacement = signed.right.signed.value
        yield* sql
          .withTransaction(
            Effect.all([
              store.markAttempt(stuck.chain, stuck.tx_hash, "replaced", {
                error: `replaced by ${replacement.txHash} at a higher gas price`
              }),
              store.recordSigned(operation, replacement, stored(leg)),
              recordRow(operation, leg, replacement.txHash)
            ])
          )
          .pipe(Effect.orDie)
        yield* Effect.logWarning(
          `custody ${operation.id}: ${stuck.tx_hash} (nonce ${stuck.nonce}, ${stuck.gas_price} wei/gas) not mined after ${Math.round((stuck.sent_ms_ago ?? 0) / 1000)} s; replaced by ${replacement.txHash} at ${replacement.gasPrice} wei/gas`
        )
        return Either.right(Step.Again())
      })

    /** The lookup's block, when it found the transaction in one. */
    const blockOf = (found: Option.Option<TransactionLookup>): Option.Option<Included> =>
      Option.flatMap(found, (f) =>
        Option.map(f.blockNumber, (blockNumber) => ({
          status: f.status,
          confirmations: f.confirmations,
          fee: f.fee,
          blockNumber,
          ...(f.payerSpent === undefined ? {} : { payerSpent: f.payerSpent })
        }))
      )

    /** The attempt is in block `found.blockNumber`: final or waited for; failed on chain, its fee burned. */
    const onChain = (client: ChainClient, attempt: AttemptRow, found: Included) =>
      Effect.gen(function* () {
        const blockNumber = found.blockNumber
        const final = blockNumber <= (yield* client.finalized)
        const fee = Option.getOrUndefined(found.fee)
        // "in block n" may be a node on another branch speaking: booked (or failed, its money given back)
        // only once the final block n, read as final, holds it
        if (final && !(yield* client.finalInclusion(attempt.tx_hash, blockNumber))) {
          return Step.Wait({
            what: `${attempt.tx_hash} is in block ${blockNumber} as looked up, but the final block ${blockNumber} as read does not hold it (a node on another branch, or one behind)`
          })
        }
        // final, it used its nonce: attempts it replaced (or that replaced it) never land
        if (final) yield* store.dropReplaced(attempt)
        if (found.status === "failed") {
          if (!final) return Step.Wait({ what: `a failed transaction ${attempt.tx_hash} to become final` })
          yield* store.markAttempt(attempt.chain, attempt.tx_hash, "reverted", { blockNumber, fee })
          return Step.Done({
            outcome: SendOutcome.Failed({
              reason: `transaction ${attempt.tx_hash} failed on chain (its fee was burned; nothing else moved)`,
              burned: fee ?? 0n
            })
          })
        }
        // a look taken before the owner replaced or cancelled it: marked only as final state allows (the store).
        // Once final it is marked whatever the row read said: that row may be stale ("included" read before
        // the owner replaced it), and the replacement must be dropped before the transfer is booked
        if (
          (final || (attempt.status !== "included" && attempt.status !== "final")) &&
          !(yield* store.markIncluded(attempt, blockNumber, fee, final))
        )
          return Step.Wait({
            what: `${attempt.tx_hash} in block ${blockNumber}, while a later attempt of the operation is live: the block to become final`
          })
        if (!final) return Step.Wait({ what: `${attempt.tx_hash} in block ${blockNumber} to become final` })
        // the cancellation used the nonce: the transfer it replaced can never land, and nothing moved but its fee
        if (attempt.action === "Cancel") {
          const refusals = (yield* store.attemptsAtNonce(attempt.chain, attempt.from_address, attempt.nonce ?? -1n))
            .filter((a) => a.operation_id === attempt.operation_id && a.refusal !== null)
            .map((a) => a.refusal)
          return Step.Done({
            outcome: SendOutcome.Failed({
              reason: `cancelled: the node refused the transfer (${refusals.join("; ")}), and ${attempt.tx_hash} filled its nonce ${attempt.nonce} in block ${blockNumber}; nothing moved but its fee`,
              burned: fee ?? 0n
            })
          })
        }
        return Step.Done({
          outcome: SendOutcome.Final({
            txHash: attempt.tx_hash,
            amount: attempt.amount,
            fee: fee ?? attempt.fee ?? 0n,
            maxFee: attempt.max_fee,
            blockNumber,
            confirmations: found.confirmations,
            payerSpent: found.payerSpent
          })
        })
      })

    /** Proven never to land: the attempt and its row say so, and a new transaction may be signed. */
    const dropped = (operation: OperationRow, attempt: AttemptRow, proof: string, role: Role) =>
      Effect.gen(function* () {
        yield* store.markAttempt(attempt.chain, attempt.tx_hash, "dropped", { error: `proven never to land: ${proof}` })
        yield* Effect.orDie(transactionStore.setCustodyStatus(attempt.chain, attempt.tx_hash, "failed"))
        // refused, and now proven never to have landed: what was refused would be refused again
        if (attempt.refusal !== null && !STALE_VIEW.test(attempt.refusal)) {
          return Step.Done({
            outcome: SendOutcome.Failed({
              reason: `the node refused ${attempt.tx_hash} (${attempt.refusal}), and final state proves it never landed (${proof})`,
              burned: 0n
            })
          })
        }
        yield* Effect.logWarning(
          `custody ${operation.id}: ${attempt.tx_hash} can never land (${proof}); ${role === "owner" ? "signing a new transaction" : "its owner signs a new one"}`
        )
        return Step.Again()
      })

    /**
     * EVM: the attempt's nonce is used in final state. Only custody signs for the key, so one of the
     * transactions custody stored with that nonce is in a block: it is found and booked. Found none, the
     * wallet halts — a "not found" is no proof, and signing again would pay twice.
     */
    const nonceUsed = (client: ChainClient, operation: OperationRow, attempt: AttemptRow) =>
      Effect.gen(function* () {
        const nonce = attempt.nonce ?? -1n
        const candidates = yield* store.attemptsAtNonce(attempt.chain, attempt.from_address, nonce)
        for (const candidate of candidates) {
          const found =
            candidate.tx_hash === attempt.tx_hash
              ? Option.none()
              : blockOf(yield* client.transaction(candidate.tx_hash))
          if (Option.isNone(found)) continue
          if (candidate.operation_id !== operation.id) {
            return Step.Halt({
              why: `nonce ${nonce} of ${attempt.from_address} was used by ${candidate.tx_hash} of operation ${candidate.operation_id}, not by this operation's ${attempt.tx_hash}: an operator must reconcile both`
            })
          }
          // an earlier attempt of this operation, given up on, landed after all: it is the operation's transfer
          yield* sql
            .withTransaction(
              Effect.all([
                store.markAttempt(attempt.chain, attempt.tx_hash, "dropped", {
                  error: `its nonce ${nonce} was used by ${candidate.tx_hash}`
                }),
                transactionStore.setCustodyStatus(attempt.chain, attempt.tx_hash, "failed"),
                store.markAttempt(candidate.chain, candidate.tx_hash, "included", {
                  blockNumber: found.value.blockNumber
                }),
                transactionStore.setCustodyStatus(candidate.chain, candidate.tx_hash, "pending")
              ])
            )
            .pipe(Effect.orDie)
          yield* Effect.logWarning(
            `custody ${operation.id}: nonce ${nonce} was used by its earlier attempt ${candidate.tx_hash} (block ${found.value.blockNumber}); that one is booked`
          )
          return Step.Again()
        }
        // the attempt itself was looked up just before; a node may find it now
        const again = blockOf(yield* client.transaction(attempt.tx_hash))
        if (Option.isSome(again)) return yield* onChain(client, attempt, again.value)
        return Step.Halt({
          why: `nonce ${nonce} of ${attempt.from_address} is used in final state, but no node finds which of custody's transactions with it (${candidates.map((c) => c.tx_hash).join(", ")}) is in a block; nothing is signed again until one is found`
        })
      })

    /** The attempt that only fills an EVM nonce: a zero-value transfer from the sender to itself. */
    const cancelLegOf = (operation: OperationRow, leg: TransferLeg): TransferLeg => ({
      from: leg.from,
      to: operation.from_address,
      currency: NATIVE_ASSETS[operation.chain].currency,
      amount: 0n,
      decimals: NATIVE_ASSETS[operation.chain].decimals,
      walletId: leg.walletId,
      cancels: true
    })

    /** No live attempt: the owner signs one and stores it before anything is sent; anyone else stops. */
    const signFresh = (client: ChainClient, operation: OperationRow, leg: TransferLeg, role: Role) =>
      Effect.gen(function* () {
        // read in the same step that would sign: whoever may not sign stops here, whatever it read before
        if (role !== "owner") return Step.Stop()
        const signed = yield* sign(client, operation, leg).pipe(
          Effect.map(Either.right),
          Effect.catchTags({
            TransferRejected: (rejected) =>
              Effect.succeed(
                Either.left(
                  Step.Done({
                    outcome: SendOutcome.Failed({ reason: `refused before signing: ${rejected.message}`, burned: 0n })
                  })
                )
              ),
            FeeAboveCap: (above) => Effect.map(feeAboveCap(operation, above), Either.left)
          })
        )
        if (Either.isLeft(signed)) return signed.left
        if (Option.isNone(signed.right))
          return Step.Wait({ what: "a new reference block (the signature matched one stored before)" })
        const fresh = signed.right.value
        yield* sql
          .withTransaction(
            Effect.zipRight(store.recordSigned(operation, fresh, stored(leg)), recordRow(operation, leg, fresh.txHash))
          )
          .pipe(Effect.orDie)
        yield* Effect.logInfo(
          `custody ${operation.id}: signed ${operation.chain} ${fresh.txHash}, stored before broadcast`
        )
        yield* crashPoint(operation, "after-sign")
        return Step.Again()
      })

    /**
     * Not in a block as far as the lookup shows: pending in a mempool, never sent, gone — or the node is
     * lagging, pruned, or another one behind the same URL. Only final state read in full says it is dead.
     * None: its window is open.
     */
    const judge = (client: ChainClient, operation: OperationRow, attempt: AttemptRow, role: Role) =>
      Effect.gen(function* () {
        const evidence = yield* client.landing({
          txHash: attempt.tx_hash,
          from: attempt.from_address,
          nonce: Option.fromNullable(attempt.nonce),
          validUntil: Option.fromNullable(attempt.valid_until),
          raw: attempt.raw
        })
        switch (evidence._tag) {
          case "NeverLanded":
            return Option.some(yield* dropped(operation, attempt, evidence.proof, role))
          case "Landed":
            return Option.some(
              Step.Halt({
                why: `${attempt.tx_hash} is in block ${evidence.blockNumber} as read block by block, but the node's lookup does not find it; waiting for a node that does`
              })
            )
          case "Unproven":
            return Option.some(
              Step.Halt({
                why: `${attempt.tx_hash} expired but whether it landed cannot be proven: ${evidence.reason}; nothing is signed again until it can`
              })
            )
          case "NonceUsed":
            return Option.some(yield* nonceUsed(client, operation, attempt))
          case "Open":
            return Option.none<Step>()
        }
      })

    /**
     * EVM: an attempt sent FACET_FEE_BUMP_AFTER_SECONDS ago and still not mined is replaced at its nonce, a
     * fifth dearer (a cancellation by another cancellation). Left: why no replacement was signed now.
     */
    const bumpIfStuck = (client: ChainClient, operation: OperationRow, leg: TransferLeg, attempt: AttemptRow) =>
      Effect.gen(function* () {
        const bumpAfter = Duration.toMillis(config.feeBumpAfter)
        if (
          // sent (a first send whose answer was lost leaves it `signed`, but out): stuck all the same
          client.chain !== "BEP20" ||
          !attempt.sent ||
          attempt.nonce === null ||
          attempt.sent_ms_ago === null ||
          attempt.sent_ms_ago < bumpAfter ||
          // one replacement per FACET_FEE_BUMP_AFTER_SECONDS at most, refused ones included (no row per poll)
          !(yield* store.attemptsAtNonce(attempt.chain, attempt.from_address, attempt.nonce)).every(
            (a) => a.operation_id !== operation.id || a.created_ms_ago >= bumpAfter
          )
        )
          return Option.none<Either.Either<Step, string>>()
        const legOf = attempt.action === "Cancel" ? cancelLegOf(operation, leg) : leg
        return Option.some(yield* replace(client, operation, legOf, attempt))
      })

    /**
     * The node refused the attempt (a documented error of a 2xx answer). That proves nothing — a balancer may
     * have passed the bytes to another node first, a lagging node answers "nonce too low" or "blockhash not
     * found" for a copy already out — so the attempt stays live and landing evidence decides. EVM: when the
     * refusal says the transfer itself cannot go, the owner fills its nonce with a cancellation; whichever of
     * the two lands decides, once final.
     */
    const refused = (
      client: ChainClient,
      operation: OperationRow,
      leg: TransferLeg,
      attempt: AttemptRow,
      refusal: string,
      role: Role
    ) =>
      Effect.gen(function* () {
        yield* store.markRefused(attempt.chain, attempt.tx_hash, refusal)
        if (
          role === "owner" &&
          client.chain === "BEP20" &&
          attempt.nonce !== null &&
          attempt.action !== "Cancel" &&
          CANCEL_ON.test(refusal)
        ) {
          const cancelled = yield* replace(client, operation, cancelLegOf(operation, leg), attempt)
          if (Either.isRight(cancelled)) {
            yield* Effect.logWarning(
              `custody ${operation.id}: ${attempt.tx_hash} was refused (${refusal}); its nonce ${attempt.nonce} is filled by a cancellation, and whichever of the two lands decides`
            )
            return cancelled.right
          }
        }
        return Step.Wait({
          what: `${attempt.tx_hash}: refused when sent (${refusal}); whether it went out all the same is for final state to show`
        })
      })

    /**
     * The rule before issue 46 (SendRules.refusalIsNoEvidence off, for the simulation only): a send refused at
     * its first broadcast and not found by one lookup is taken as never sent; its nonce given back by the
     * counter, the operation failed.
     */
    const refusedAtFirstSendIsProof = (
      client: ChainClient,
      operation: OperationRow,
      attempt: AttemptRow,
      refusal: string
    ) =>
      Effect.gen(function* () {
        if (Option.isSome(yield* client.transaction(attempt.tx_hash)))
          return Step.Wait({ what: `${attempt.tx_hash} to be mined` })
        const outbid =
          attempt.nonce === null
            ? []
            : (yield* store.attemptsAtNonce(attempt.chain, attempt.from_address, attempt.nonce)).filter(
                (a) => a.operation_id === operation.id && a.status === "replaced"
              )
        if (outbid.length > 0) {
          yield* store.restoreReplaced(attempt, refusal)
          return Step.Wait({ what: `the replacement ${attempt.tx_hash} was refused (${refusal})` })
        }
        yield* store.reject(attempt, refusal)
        return Step.Done({
          outcome: SendOutcome.Failed({ reason: `the node refused ${attempt.tx_hash}: ${refusal}`, burned: 0n })
        })
      })

    /** Sends the stored bytes: the attempt is out from here on, whatever the node answers. */
    const sendStored = (
      client: ChainClient,
      operation: OperationRow,
      leg: TransferLeg,
      attempt: AttemptRow,
      role: Role
    ) =>
      Effect.gen(function* () {
        const rules = yield* SendRules
        // the compare-and-set decides which send is the first, not a row read earlier
        const first = yield* store.markSending(attempt.chain, attempt.tx_hash)
        const answer = yield* client.broadcast(attempt.raw).pipe(
          Effect.as(Option.none<string>()),
          Effect.catchTag("TransferRejected", (rejected) => Effect.succeed(Option.some(rejected.message)))
        )
        if (Option.isSome(answer)) {
          if (!rules.refusalIsNoEvidence && first)
            return yield* refusedAtFirstSendIsProof(client, operation, attempt, answer.value)
          return yield* refused(client, operation, leg, attempt, answer.value, role)
        }
        yield* crashPoint(operation, "after-broadcast")
        if (attempt.refusal !== null) yield* store.markRefused(attempt.chain, attempt.tx_hash, null)
        // the attempt, the operation and (for a withdrawal) the withdrawal say so, in one transaction
        if (attempt.status === "signed")
          yield* sql
            .withTransaction(
              Effect.zipRight(
                store.markBroadcast(operation, attempt.tx_hash),
                withdrawals.markBroadcast(operation.id, attempt.tx_hash)
              )
            )
            .pipe(Effect.orDie)
        return Step.Wait({ what: `${attempt.tx_hash} to be mined` })
      })

    /**
     * One step of the lifecycle (docs/internals/custody.md, "The send lifecycle"): sign when nothing is live;
     * else look the attempt up, judge it from final state, replace it when stuck, send it again. A `reader`
     * only looks: the owner (the sending wallet's actor) is the one broadcaster.
     */
    const step = (
      client: ChainClient,
      operation: OperationRow,
      leg: TransferLeg,
      role: Role
    ): Effect.Effect<Step, ChainRpcError> =>
      Effect.gen(function* () {
        const live = yield* store.liveAttempt(operation.id)
        if (Option.isNone(live)) return yield* signFresh(client, operation, leg, role)
        const attempt = live.value
        const found = yield* client.transaction(attempt.tx_hash)
        const inBlock = blockOf(found)
        if (Option.isSome(inBlock)) {
          const judged = yield* onChain(client, attempt, inBlock.value)
          return judged._tag === "Wait" ? Step.Wait({ what: judged.what, inBlock: true }) : judged
        }
        if (role === "reader") return Step.Stop()
        const judged = yield* judge(client, operation, attempt, role)
        if (Option.isSome(judged)) return judged.value
        if (role === "owner") {
          const bumped = yield* bumpIfStuck(client, operation, leg, attempt)
          if (Option.isSome(bumped)) {
            if (Either.isRight(bumped.value)) return bumped.value.right
            if (Option.isSome(found)) return Step.Wait({ what: bumped.value.left })
          }
        }
        if (Option.isSome(found) && attempt.status === "broadcast")
          return Step.Wait({ what: `${attempt.tx_hash} to be mined` })
        return yield* sendStored(client, operation, leg, attempt, role)
      })

    /**
     * Takes the leg's transfer as far as `reach` says: `final` (signed, sent, final or failed); `sent` (until
     * a node has it: the wallet's next transfer may be signed while it is mined — EVM nonces in flight one
     * after another, TRON and Solana have none); `follow` (to final, sending stored bytes again but never
     * signing: a transfer the wallet can no longer sign for). None: not finished when it stopped.
     */
    const drive = (given: OperationRow, leg: TransferLeg, reach: "final" | "sent" | "follow") =>
      Effect.gen(function* () {
        // the operation as stored now: what the caller read may be older (a halt recorded since)
        const operation = Option.getOrElse(yield* store.operation(given.id), () => given)
        const client = yield* clientOf(operation)
        const role: Role = reach === "follow" ? "follower" : "owner"
        /** Whether this call is done before the transfer is: sent (`sent`), or nothing of its own out (`follow`). */
        const stopsHere = Effect.map(store.liveAttempt(operation.id), (live) =>
          reach === "follow"
            ? Option.isNone(live)
            : reach === "sent" && Option.isSome(live) && (live.value.sent || live.value.status !== "signed")
        )
        let halted = operation.halted_reason !== null
        for (;;) {
          if (reach === "follow" && (yield* stopsHere)) return Option.none<SendOutcome>()
          const next = yield* step(client, operation, leg, role).pipe(
            // a node that does not answer is waited for, never a reason to sign something new
            Effect.catchTag("ChainRpcError", (error) =>
              Effect.succeed(Step.Wait({ what: `the ${operation.chain} node (${error.message})` }))
            )
          )
          if (next._tag === "Halt") {
            if (!halted)
              yield* Effect.logError(`custody ${operation.id}: wallet ${operation.from_address} halted: ${next.why}`)
            halted = true
            yield* store.halt(operation.id, next.why)
            yield* pacer.pause(operation.id)
            continue
          }
          if (halted && next._tag !== "Wait") {
            halted = false
            yield* store.clearHalt(operation.id)
            yield* Effect.logInfo(`custody ${operation.id}: wallet ${operation.from_address} no longer halted`)
          }
          if (next._tag === "Done") return Option.some(next.outcome)
          if (next._tag === "Stop") return Option.none<SendOutcome>()
          if (next._tag === "Wait") {
            yield* store.waitingFor(operation.id, next.what)
            if (yield* stopsHere) return Option.none<SendOutcome>()
            yield* pacer.pause(operation.id)
          }
        }
      })

    /** The leg's transfer from nothing to final (or failed). */
    const send = Effect.fn("TransferSender.send")(function* (given: OperationRow, leg: TransferLeg) {
      const outcome = yield* drive(given, leg, "final")
      return Option.isSome(outcome)
        ? outcome.value
        : yield* Effect.dieMessage(`custody ${given.id}: the sender stopped before the transfer was final`)
    })

    /** The leg's transfer signed and sent, then left to be mined (the next may be signed); finished: its outcome. */
    const sendOut = Effect.fn("TransferSender.sendOut")(function* (given: OperationRow, leg: TransferLeg) {
      return yield* drive(given, leg, "sent")
    })

    /**
     * A transfer the wallet can no longer sign for (its key changed), followed to final by sending its stored
     * bytes again; none when nothing of it is out (proven dead, or never signed).
     */
    const follow = Effect.fn("TransferSender.follow")(function* (given: OperationRow, leg: TransferLeg) {
      return yield* drive(given, leg, "follow")
    })

    /**
     * One look at a transfer another wallet's actor sends (a gas funding, from the funded wallet's actor): its
     * outcome once final state shows one, and whether a block held it. It never sends, signs or gives up: the
     * sending wallet's actor is the one broadcaster.
     */
    const look = Effect.fn("TransferSender.look")(function* (operation: OperationRow, leg: TransferLeg) {
      const next = yield* step(yield* clientOf(operation), operation, leg, "reader").pipe(
        Effect.catchTag("ChainRpcError", (error) =>
          Effect.succeed(Step.Wait({ what: `the ${operation.chain} node (${error.message})` }))
        )
      )
      if (next._tag === "Done") return { outcome: Option.some(next.outcome), inBlock: true }
      if (next._tag === "Wait") yield* store.waitingFor(operation.id, next.what)
      return { outcome: Option.none<SendOutcome>(), inBlock: next._tag === "Wait" && next.inBlock === true }
    })

    return { send, sendOut, follow, look } as const
  }),
  dependencies: [TransactionStore.Default, CustodyStore.Default, WithdrawalStore.Default, SendPacerLive]
}) {}
