import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option, Schema } from "effect"
import type { SignedTransfer } from "../src/chains/chain-client.js"
import type { Chain } from "../src/domain/chain.js"
import {
  ATTEMPT_COLUMNS,
  AttemptRow,
  type AttemptStatus,
  OPERATION_COLUMNS,
  OperationRow,
  type OperationStatus
} from "./custody-operation.js"

const decodeOperations = Schema.decodeUnknown(Schema.Array(OperationRow))
const decodeAttempts = Schema.decodeUnknown(Schema.Array(AttemptRow))

/**
 * The custody engine's durable state: operations and the transactions they sign (migration 0012). Every
 * step of a transfer is a row change here before or after the chain is touched, so any step can be run
 * again after a crash.
 */
export class CustodyStore extends Effect.Service<CustodyStore>()("facet/CustodyStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const operation = Effect.fn("CustodyStore.operation")(function* (id: string) {
      const rows = yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeOperations),
        Effect.orDie
      )
      return Option.fromNullable(rows[0])
    })

    /** The operation locked for the rest of the caller's transaction (the step that finishes it). */
    const lockOperation = Effect.fn("CustodyStore.lockOperation")(function* (id: string) {
      const rows =
        yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = ${id} FOR UPDATE`.pipe(
          Effect.flatMap(decodeOperations),
          Effect.orDie
        )
      const row = rows[0]
      return row === undefined ? yield* Effect.dieMessage(`no custody operation ${id}`) : row
    })

    /** Unfinished operations never handed to an actor, or untouched for a while, oldest first (what resume hands over). */
    const open = Effect.fn("CustodyStore.open")(function* (olderThanMs = 0) {
      return yield* sql`
        SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations
        WHERE status NOT IN ('COMPLETED', 'FAILED')
          AND ((kicks = 0 AND created_at < clock_timestamp() - interval '1 second')
               OR updated_at < clock_timestamp() - ${olderThanMs} * interval '1 millisecond')
        ORDER BY created_at LIMIT 1000`.pipe(Effect.flatMap(decodeOperations), Effect.orDie)
    })

    const setStatus = Effect.fn("CustodyStore.setStatus")(function* (
      id: string,
      status: OperationStatus,
      waitingFor: string | null
    ) {
      yield* Effect.orDie(sql`
        UPDATE custody_operations SET status = ${status}, waiting_for = ${waitingFor}, updated_at = clock_timestamp()
        WHERE id = ${id} AND status NOT IN ('COMPLETED', 'FAILED')`)
    })

    /** What the operation waits for now, for operators; also shows it is alive (updated_at). */
    const waitingFor = Effect.fn("CustodyStore.waitingFor")(function* (id: string, what: string) {
      yield* Effect.orDie(sql`
        UPDATE custody_operations SET waiting_for = ${what}, updated_at = clock_timestamp()
        WHERE id = ${id} AND status NOT IN ('COMPLETED', 'FAILED')`)
    })

    const fail = Effect.fn("CustodyStore.fail")(function* (id: string, reason: string) {
      yield* Effect.orDie(sql`
        UPDATE custody_operations SET status = 'FAILED', failure_reason = ${reason}, waiting_for = NULL,
               updated_at = clock_timestamp(), finished_at = clock_timestamp()
        WHERE id = ${id} AND status NOT IN ('COMPLETED', 'FAILED')`)
      yield* Effect.orDie(
        sql`UPDATE transactions SET status = 'failed', updated_at = clock_timestamp() WHERE operation_id = ${id} AND status = 'pending'`
      )
    })

    const attempts = Effect.fn("CustodyStore.attempts")(function* (operationId: string) {
      return yield* sql`SELECT ${sql.literal(ATTEMPT_COLUMNS)} FROM custody_transactions WHERE operation_id = ${operationId} ORDER BY attempt`.pipe(
        Effect.flatMap(decodeAttempts),
        Effect.orDie
      )
    })

    /** The attempt that may still land (signed, broadcast, included or final), if any. */
    const liveAttempt = Effect.fn("CustodyStore.liveAttempt")(function* (operationId: string) {
      const all = yield* attempts(operationId)
      return Option.fromNullable(
        all.find(
          (a) => a.status === "signed" || a.status === "broadcast" || a.status === "included" || a.status === "final"
        )
      )
    })

    /**
     * The next nonce for an EVM sender: the database's count, or the chain's final count when that is
     * higher (the first use, or transactions sent from the address by someone else).
     */
    const nextNonce = Effect.fn("CustodyStore.nextNonce")(function* (
      chain: Chain,
      address: string,
      finalOnChain: bigint
    ) {
      const [row] = yield* Effect.orDie(sql<{ next_nonce: string }>`
        SELECT next_nonce::text AS next_nonce FROM evm_nonces WHERE chain = ${chain} AND address = ${address.toLowerCase()}`)
      const stored = row === undefined ? 0n : BigInt(row.next_nonce)
      return stored > finalOnChain ? stored : finalOnChain
    })

    /**
     * Stores a signed transaction (and, for EVM, the nonce it used) in one database transaction, before
     * it is broadcast. The unique live-attempt index refuses a second live signature for the operation.
     */
    const recordSigned = Effect.fn("CustodyStore.recordSigned")(function* (
      operation: OperationRow,
      signed: SignedTransfer,
      leg: { readonly to: string; readonly currency: string; readonly amount: bigint }
    ) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const [{ next } = { next: 1 }] = yield* sql<{ next: number }>`
          SELECT coalesce(max(attempt), 0) + 1 AS next FROM custody_transactions WHERE operation_id = ${operation.id}`
            yield* sql`INSERT INTO custody_transactions ${sql.insert({
              chain: operation.chain,
              tx_hash: signed.txHash,
              operation_id: operation.id,
              attempt: next,
              from_address: signed.from,
              fee_payer: signed.feePayer,
              to_address: leg.to,
              currency: leg.currency,
              amount: leg.amount.toString(),
              raw: signed.raw,
              nonce: Option.getOrNull(Option.map(signed.nonce, String)),
              valid_until: Option.getOrNull(Option.map(signed.validUntil, String)),
              max_fee: signed.maxFee.toString(),
              gas_price: signed.gasPrice.toString(),
              status: "signed"
            })}`
            yield* sql`UPDATE custody_operations SET fee_capped_since = NULL WHERE id = ${operation.id} AND fee_capped_since IS NOT NULL`
            if (Option.isSome(signed.nonce)) {
              const next = (signed.nonce.value + 1n).toString()
              yield* sql`
            INSERT INTO evm_nonces (chain, address, next_nonce) VALUES (${operation.chain}, ${signed.from.toLowerCase()}, ${next})
            ON CONFLICT (chain, address) DO UPDATE SET next_nonce = greatest(evm_nonces.next_nonce, excluded.next_nonce)`
            }
          })
        )
        .pipe(Effect.orDie)
    })

    /** Whether custody ever stored a transaction with this hash (a new signature must not reuse one). */
    const hashTaken = Effect.fn("CustodyStore.hashTaken")(function* (chain: Chain, txHash: string) {
      const rows = yield* Effect.orDie(
        sql`SELECT 1 FROM custody_transactions WHERE chain = ${chain} AND tx_hash = ${txHash}`
      )
      return rows.length > 0
    })

    /**
     * Refused at its first send by the first node asked: it never goes out. An EVM nonce it reserved is
     * given back when nothing was reserved after it, so the address's next transfer is not signed above a
     * gap that no node mines.
     */
    const reject = Effect.fn("CustodyStore.reject")(function* (attempt: AttemptRow, error: string) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* markAttempt(attempt.chain, attempt.tx_hash, "rejected", { error })
            if (attempt.nonce !== null) {
              yield* sql`UPDATE evm_nonces SET next_nonce = ${attempt.nonce.toString()}
                     WHERE chain = ${attempt.chain} AND address = ${attempt.from_address.toLowerCase()} AND next_nonce = ${(attempt.nonce + 1n).toString()}`
            }
          })
        )
        .pipe(Effect.orDie)
    })

    /** A replacement was refused at its first send: the attempt it would have replaced is the live one again. */
    const restoreReplaced = Effect.fn("CustodyStore.restoreReplaced")(function* (refused: AttemptRow, error: string) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* markAttempt(refused.chain, refused.tx_hash, "rejected", { error })
            yield* sql`UPDATE custody_transactions SET status = 'broadcast', updated_at = clock_timestamp()
                   WHERE operation_id = ${refused.operation_id} AND attempt = (
                     SELECT max(attempt) FROM custody_transactions WHERE operation_id = ${refused.operation_id} AND status = 'replaced' AND nonce = ${refused.nonce?.toString() ?? null})`
          })
        )
        .pipe(Effect.orDie)
    })

    /** The attempt that landed used the nonce: the ones it replaced (or that replaced it) never will. */
    const dropReplaced = Effect.fn("CustodyStore.dropReplaced")(function* (landed: AttemptRow) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const gone = yield* sql<{ tx_hash: string }>`
          UPDATE custody_transactions SET status = 'dropped', last_error = ${`its nonce was used by ${landed.tx_hash}`}, updated_at = clock_timestamp()
          WHERE operation_id = ${landed.operation_id} AND status = 'replaced' AND tx_hash <> ${landed.tx_hash} RETURNING tx_hash`
            if (gone.length > 0) {
              yield* sql`UPDATE transactions SET status = 'failed', updated_at = clock_timestamp()
                     WHERE chain = ${landed.chain} AND tx_hash IN ${sql.in(gone.map((g) => g.tx_hash))} AND status = 'pending'`
            }
          })
        )
        .pipe(Effect.orDie)
    })

    /** Every transaction custody signed from `address` with `nonce`, of any operation (which one used it). */
    const attemptsAtNonce = Effect.fn("CustodyStore.attemptsAtNonce")(function* (
      chain: Chain,
      address: string,
      nonce: bigint
    ) {
      return yield* sql`SELECT ${sql.literal(ATTEMPT_COLUMNS)} FROM custody_transactions
                        WHERE chain = ${chain} AND lower(from_address) = ${address.toLowerCase()} AND nonce = ${nonce.toString()}
                        ORDER BY created_at`.pipe(Effect.flatMap(decodeAttempts), Effect.orDie)
    })

    /** The wallet halts on this operation: nothing is signed until the chain shows what became of its transfer. */
    const halt = Effect.fn("CustodyStore.halt")(function* (id: string, reason: string) {
      yield* Effect.orDie(sql`
        UPDATE custody_operations SET halted_reason = ${reason}, halted_at = coalesce(halted_at, clock_timestamp()),
               waiting_for = ${reason}, updated_at = clock_timestamp()
        WHERE id = ${id} AND status NOT IN ('COMPLETED', 'FAILED')`)
    })

    /** The node's price is above the operation's fee cap: since when that has been so, as a duration. */
    const feeCapped = Effect.fn("CustodyStore.feeCapped")(function* (id: string) {
      const [row] = yield* Effect.orDie(sql<{ waited_ms: number }>`
        UPDATE custody_operations SET fee_capped_since = coalesce(fee_capped_since, clock_timestamp())
        WHERE id = ${id} RETURNING (extract(epoch FROM clock_timestamp() - fee_capped_since) * 1000)::float8 AS waited_ms`)
      return Duration.millis(row?.waited_ms ?? 0)
    })

    const clearHalt = Effect.fn("CustodyStore.clearHalt")(function* (id: string) {
      yield* Effect.orDie(
        sql`UPDATE custody_operations SET halted_reason = NULL, halted_at = NULL WHERE id = ${id} AND halted_reason IS NOT NULL`
      )
    })

    /** A node accepted the transaction: the attempt, the operation and (for a withdrawal) the withdrawal say so. */
    const markBroadcast = Effect.fn("CustodyStore.markBroadcast")(function* (operation: OperationRow, txHash: string) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE custody_transactions SET status = 'broadcast', updated_at = clock_timestamp()
                   WHERE chain = ${operation.chain} AND tx_hash = ${txHash} AND status = 'signed'`
            yield* sql`UPDATE custody_operations SET status = 'BROADCAST', waiting_for = ${`${txHash} to be mined`}, updated_at = clock_timestamp()
                   WHERE id = ${operation.id} AND status NOT IN ('COMPLETED', 'FAILED')`
            yield* sql`UPDATE withdrawals SET status = 'BROADCAST', tx_hash = ${txHash}, updated_at = clock_timestamp()
                   WHERE operation_id = ${operation.id} AND status IN ('APPROVED', 'BROADCAST')`
          })
        )
        .pipe(Effect.orDie)
    })

    const markAttempt = Effect.fn("CustodyStore.markAttempt")(function* (
      chain: Chain,
      txHash: string,
      status: AttemptStatus,
      detail: {
        readonly blockNumber?: bigint | undefined
        readonly fee?: bigint | undefined
        readonly error?: string | undefined
      } = {}
    ) {
      yield* Effect.orDie(sql`
        UPDATE custody_transactions SET status = ${status},
          block_number = ${detail.blockNumber === undefined ? sql`block_number` : sql`${detail.blockNumber.toString()}`},
          fee = ${detail.fee === undefined ? sql`fee` : sql`${detail.fee.toString()}`},
          last_error = ${detail.error === undefined ? sql`last_error` : sql`${detail.error}`},
          updated_at = clock_timestamp()
        WHERE chain = ${chain} AND tx_hash = ${txHash}`)
    })

    /** Written before the bytes first go to a node: from then on a refusal no longer proves they are not out. */
    const markSending = Effect.fn("CustodyStore.markSending")(function* (chain: Chain, txHash: string) {
      yield* Effect.orDie(sql`UPDATE custody_transactions SET first_sent_at = clock_timestamp(), updated_at = clock_timestamp()
                              WHERE chain = ${chain} AND tx_hash = ${txHash} AND first_sent_at IS NULL`)
    })

    /** Operations per status, and how long the oldest unfinished one has been in flight (health, metrics). */
    const stats = Effect.fn("CustodyStore.stats")(function* () {
      const byStatus = yield* sql<{ type: string; status: string; n: number }>`
        SELECT type, status, count(*)::int AS n FROM custody_operations GROUP BY type, status ORDER BY type, status`
      const [oldest] = yield* sql<{ id: string | null; seconds: number | null; waiting_for: string | null }>`
        SELECT id, extract(epoch FROM clock_timestamp() - created_at)::float8 AS seconds, waiting_for FROM custody_operations
        WHERE status NOT IN ('COMPLETED', 'FAILED') ORDER BY created_at LIMIT 1`
      const transactions = yield* sql<{ status: string; n: number }>`
        SELECT status, count(*)::int AS n FROM custody_transactions GROUP BY status ORDER BY status`
      const halted = yield* sql<{
        id: string
        chain: string
        from_address: string
        halted_reason: string
        seconds: number
      }>`
        SELECT id, chain, from_address, halted_reason, extract(epoch FROM clock_timestamp() - halted_at)::float8 AS seconds FROM custody_operations
        WHERE halted_reason IS NOT NULL AND status NOT IN ('COMPLETED', 'FAILED') ORDER BY halted_at`
      return { byStatus, oldest, transactions, halted }
    })

    return {
      stats,
      operation,
      lockOperation,
      open,
      setStatus,
      waitingFor,
      fail,
      attempts,
      attemptsAtNonce,
      hashTaken,
      reject,
      restoreReplaced,
      dropReplaced,
      halt,
      clearHalt,
      feeCapped,
      liveAttempt,
      nextNonce,
      recordSigned,
      markAttempt,
      markBroadcast,
      markSending
    } as const
  })
}) {}
