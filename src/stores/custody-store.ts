import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option, Schema } from "effect"
import type { ChainAction, SignedTransfer } from "../chains/chain-client.js"
import { Chain } from "../domain/chain.js"
import { EnergyPath, OperationStatus } from "../domain/sweep.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"
import { TransactionStore } from "./transaction-store.js"

export const OperationType = Schema.Literal(
  "collection",
  "gas_funding",
  "withdrawal",
  "account_close",
  "energy_delegation",
  "energy_reclaim",
  "energy_stake",
  "energy_unstake",
  "bandwidth_stake",
  "bandwidth_unstake"
)
export type OperationType = typeof OperationType.Type

// declared with the API's view of a sweep (src/domain/sweep.ts), so the API declaration needs no store
export { EnergyPath, OperationStatus } from "../domain/sweep.js"

/** A row of `custody_operations` (amount in base units; no merchant: the platform's own stake). */
export const OperationRow = Schema.Struct({
  id: Schema.String,
  type: OperationType,
  status: OperationStatus,
  merchant_id: Schema.NullOr(Schema.String),
  chain: Chain,
  currency: Schema.String,
  wallet_id: Schema.String,
  from_address: Schema.String,
  to_wallet_id: Schema.String,
  to_address: Schema.String,
  amount: Schema.BigInt,
  parent_id: Schema.NullOr(Schema.String),
  gas_funding_id: Schema.NullOr(Schema.String),
  energy_id: Schema.NullOr(Schema.String),
  energy_path: Schema.NullOr(EnergyPath),
  energy_reason: Schema.NullOr(Schema.String),
  withdrawal_id: Schema.NullOr(Schema.String),
  waiting_for: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
  /** Why its wallet is halted (the chain cannot yet prove what became of a transfer), while it is. */
  halted_reason: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type OperationRow = typeof OperationRow.Type
export const OPERATION_COLUMNS =
  "id, type, status, merchant_id, chain, currency, wallet_id, from_address, to_wallet_id, to_address, trim_scale(amount)::text AS amount, parent_id, gas_funding_id, energy_id, energy_path, energy_reason, withdrawal_id, waiting_for, failure_reason, halted_reason, created_at, updated_at"

/** A new row of `custody_operations`, as its creator fills it in (amount in base units, as text). */
export type NewOperation = {
  readonly id: string
  readonly type: OperationType
  readonly status: OperationStatus
  readonly merchant_id: string | null
  readonly chain: Chain
  readonly currency: string
  readonly wallet_id: string
  readonly from_address: string
  readonly to_wallet_id: string
  readonly to_address: string
  readonly amount: string
  readonly parent_id?: string
  readonly withdrawal_id?: string
  readonly energy_path?: EnergyPath
  readonly energy_reason?: string
  readonly waiting_for: string
}

/** A row of `custody_transactions`: one signed transaction of an operation. */
/** `replaced`: an EVM attempt outbid by a replacement at its nonce; it can still land until the nonce is used. */
export const AttemptStatus = Schema.Literal(
  "signed",
  "broadcast",
  "included",
  "final",
  "reverted",
  "dropped",
  "rejected",
  "replaced"
)
export type AttemptStatus = typeof AttemptStatus.Type
export const AttemptRow = Schema.Struct({
  chain: Chain,
  tx_hash: Schema.String,
  operation_id: Schema.String,
  attempt: Schema.Number,
  from_address: Schema.String,
  amount: Schema.BigInt,
  raw: Schema.String,
  nonce: Schema.NullOr(Schema.BigInt),
  valid_until: Schema.NullOr(Schema.BigInt),
  max_fee: Schema.BigInt,
  status: AttemptStatus,
  block_number: Schema.NullOr(Schema.BigInt),
  fee: Schema.NullOr(Schema.BigInt),
  /** Handed to a node at least once (it may have accepted it, whatever it answered). */
  sent: Schema.Boolean,
  /** How long ago it was first handed to a node (ms), if it was. */
  sent_ms_ago: Schema.NullOr(Schema.Number),
  /** The unit price it was signed at (attempts stored before migration 0026: unknown). */
  gas_price: Schema.NullOr(Schema.BigInt),
  /** How long ago it was signed and stored (ms). */
  created_ms_ago: Schema.Number,
  /** What it does when it is not a plain transfer: a chain action's tag, or `Cancel` (EVM: fills its nonce). */
  action: Schema.NullOr(Schema.String),
  /** The last documented refusal a node answered when it was sent (evidence of nothing: see migration 0035). */
  refusal: Schema.NullOr(Schema.String)
})
export type AttemptRow = typeof AttemptRow.Type
export const ATTEMPT_COLUMNS =
  "chain, tx_hash, operation_id, attempt, from_address, trim_scale(amount)::text AS amount, raw, nonce::text AS nonce, valid_until::text AS valid_until, trim_scale(max_fee)::text AS max_fee, status, block_number::text AS block_number, trim_scale(fee)::text AS fee, first_sent_at IS NOT NULL AS sent, " +
  "(extract(epoch FROM clock_timestamp() - first_sent_at) * 1000)::float8 AS sent_ms_ago, trim_scale(gas_price)::text AS gas_price, " +
  "(extract(epoch FROM clock_timestamp() - created_at) * 1000)::float8 AS created_ms_ago, action, refusal"

/** An operation as `npm run custody -- list` prints it (one JSON line each, in this order). */
const OperatorRow = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  status: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  amount_base_units: Schema.String,
  wallet_id: Schema.String,
  from_address: Schema.String,
  to_address: Schema.String,
  withdrawal_id: Schema.NullOr(Schema.String),
  waiting_for: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
  halted_reason: Schema.NullOr(Schema.String),
  halted_at: Schema.NullOr(Schema.DateFromSelf),
  kicks: Schema.Number,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf,
  age_seconds: Schema.Number
})
export type OperatorRow = typeof OperatorRow.Type

const StatusCountRow = Schema.Struct({ type: Schema.String, status: Schema.String, n: Schema.Number })
const OldestRow = Schema.Struct({
  id: Schema.NullOr(Schema.String),
  seconds: Schema.NullOr(Schema.Number),
  waiting_for: Schema.NullOr(Schema.String)
})
const AttemptCountRow = Schema.Struct({ status: Schema.String, n: Schema.Number })
const HaltedRow = Schema.Struct({
  id: Schema.String,
  chain: Schema.String,
  from_address: Schema.String,
  halted_reason: Schema.String,
  seconds: Schema.Number
})
const BusyRow = Schema.Struct({ id: Schema.String, status: Schema.String })
const KicksRow = Schema.Struct({ kicks: Schema.Number })
const NonceRow = Schema.Struct({ next_nonce: Schema.BigInt })
const NextAttemptRow = Schema.Struct({ next: Schema.Number })
const HashRow = Schema.Struct({ tx_hash: Schema.String })
const WaitedRow = Schema.Struct({ waited_ms: Schema.Number })
const SumRow = Schema.Struct({ total: Schema.BigInt })
const CountRow = Schema.Struct({ n: Schema.Number })
const HashIdRow = Schema.Struct({ id: Schema.String })
const LentRow = Schema.Struct({ total: Schema.BigInt, n: Schema.Number })

/**
 * The custody engine's durable state: operations and the transactions they sign (migration 0012), and
 * the EVM nonces custody reserved. Every step of a transfer is a row change here before or after the
 * chain is touched, so any step can be run again after a crash.
 */
export class CustodyStore extends Effect.Service<CustodyStore>()("facet/CustodyStore", {
  dependencies: [TransactionStore.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transactions = yield* TransactionStore

    const operation = Effect.fn("CustodyStore.operation")(function* (id: string) {
      return yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = ${id}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeFirst(OperationRow))
      )
    })

    /** The operation locked for the rest of the caller's transaction (the step that finishes it). */
    const lockOperation = Effect.fn("CustodyStore.lockOperation")(function* (id: string) {
      const row =
        yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = ${id} FOR UPDATE`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeFirst(OperationRow))
        )
      return Option.isNone(row) ? yield* Effect.dieMessage(`no custody operation ${id}`) : row.value
    })

    /** Unfinished operations never handed to an actor, or untouched for a while, oldest first (what resume hands over). */
    const open = Effect.fn("CustodyStore.open")(function* (olderThanMs = 0) {
      return yield* sql`
        SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations
        WHERE status NOT IN ('COMPLETED', 'FAILED')
          AND ((kicks = 0 AND created_at < clock_timestamp() - interval '1 second')
               OR updated_at < clock_timestamp() - ${olderThanMs} * interval '1 millisecond')
        ORDER BY created_at LIMIT 1000`.pipe(Effect.orDie, Effect.flatMap(decodeAll(OperationRow)))
    })

    /**
     * A new collection, unless the wallet has one in flight (one per wallet, by the partial unique index):
     * true when this call stored it.
     */
    const insertCollection = Effect.fn("CustodyStore.insertCollection")(function* (row: NewOperation) {
      const inserted = yield* Effect.orDie(sql`
        INSERT INTO custody_operations ${sql.insert(row)}
        ON CONFLICT (wallet_id) WHERE type = 'collection' AND status NOT IN ('COMPLETED', 'FAILED') DO NOTHING
        RETURNING id`)
      return inserted.length > 0
    })

    /** The collection a wallet has in flight, if any (what refused a second one). */
    const collectionInFlight = Effect.fn("CustodyStore.collectionInFlight")(function* (walletId: string) {
      return yield* Effect.orDie(sql`
          SELECT id, status FROM custody_operations
          WHERE wallet_id = ${walletId} AND type = 'collection' AND status NOT IN ('COMPLETED', 'FAILED')`).pipe(
        Effect.flatMap(decodeFirst(BusyRow))
      )
    })

    /** A gas funding stored with its parent pointing at it, in one database transaction. */
    const startGasFunding = (funding: NewOperation & { readonly parent_id: string }) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`INSERT INTO custody_operations ${sql.insert(funding)}`
          yield* sql`UPDATE custody_operations SET gas_funding_id = ${funding.id}, waiting_for = 'gas funding', updated_at = clock_timestamp() WHERE id = ${funding.parent_id}`
        })
      )

    /** A token account's close (Solana), unless one of that wallet and token is in flight: stored or not. */
    const insertAccountClose = Effect.fn("CustodyStore.insertAccountClose")(function* (row: NewOperation) {
      const inserted = yield* sql`
        INSERT INTO custody_operations ${sql.insert(row)}
        ON CONFLICT (wallet_id, currency) WHERE type = 'account_close' AND status NOT IN ('COMPLETED', 'FAILED') DO NOTHING
        RETURNING id`
      return inserted.length > 0
    })

    /** A new operation (a withdrawal's, in the transaction that approves it). */
    const insertOperation = (row: NewOperation) =>
      sql`INSERT INTO custody_operations ${sql.insert(row)}`.pipe(Effect.asVoid)

    /** New operations in one statement (a withdrawal batch's items, in the transaction that approves it); each row with the same fields. */
    const insertOperations = (rows: ReadonlyArray<NewOperation>) =>
      rows.length === 0 ? Effect.void : sql`INSERT INTO custody_operations ${sql.insert(rows)}`.pipe(Effect.asVoid)

    /** Each hand-over to an actor is counted: the count after this one. */
    const kick = Effect.fn("CustodyStore.kick")(function* (id: string) {
      const row = yield* Effect.orDie(sql`
          UPDATE custody_operations SET kicks = kicks + 1, updated_at = clock_timestamp() WHERE id = ${id} RETURNING kicks`).pipe(
        Effect.flatMap(decodeFirst(KicksRow))
      )
      return Option.map(row, (r) => r.kicks)
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

    /** COMPLETED, in the caller's transaction (the one that posts its ledger transfers). */
    const complete = (id: string) =>
      sql`
          UPDATE custody_operations SET status = 'COMPLETED', waiting_for = NULL, updated_at = clock_timestamp(), finished_at = clock_timestamp()
          WHERE id = ${id}`.pipe(Effect.asVoid)

    const fail = Effect.fn("CustodyStore.fail")(function* (id: string, reason: string) {
      yield* Effect.orDie(sql`
        UPDATE custody_operations SET status = 'FAILED', failure_reason = ${reason}, waiting_for = NULL,
               updated_at = clock_timestamp(), finished_at = clock_timestamp()
        WHERE id = ${id} AND status NOT IN ('COMPLETED', 'FAILED')`)
      // the operation's merchant-visible rows still pending never will be anything else
      yield* Effect.orDie(transactions.failPendingOfOperation(id))
    })

    /** An open operation made to look untouched for a day: the service's next resume pass hands it over again. */
    const markForResume = (id: string) =>
      sql`UPDATE custody_operations SET updated_at = clock_timestamp() - interval '1 day' WHERE id = ${id}`.pipe(
        Effect.asVoid
      )

    /** The latest 200 operations (only unfinished ones unless `all`), newest first, for operators. */
    const operatorList = (all: boolean) =>
      sql`
        SELECT id, type, status, chain, currency, trim_scale(amount)::text AS amount_base_units, wallet_id, from_address, to_address, withdrawal_id,
               waiting_for, failure_reason, halted_reason, halted_at, kicks, created_at, updated_at,
               round(extract(epoch FROM clock_timestamp() - created_at))::int AS age_seconds
        FROM custody_operations
        WHERE ${all ? sql`true` : sql`status NOT IN ('COMPLETED', 'FAILED')`}
        ORDER BY created_at DESC LIMIT 200`.pipe(Effect.flatMap(decodeAll(OperatorRow)))

    const attempts = Effect.fn("CustodyStore.attempts")(function* (operationId: string) {
      return yield* sql`SELECT ${sql.literal(ATTEMPT_COLUMNS)} FROM custody_transactions WHERE operation_id = ${operationId} ORDER BY attempt`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeAll(AttemptRow))
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
     * The next nonce for an EVM sender: the lowest one, from the chain's final count up, that no attempt
     * custody stored for the address holds (signed, sent, mined, or replaced and still able to land). A nonce
     * whose attempt was given up is so filled by the next transfer, never left as a gap no node would mine past.
     */
    const nextNonce = Effect.fn("CustodyStore.nextNonce")(function* (
      chain: Chain,
      address: string,
      finalOnChain: bigint
    ) {
      const from = finalOnChain.toString()
      return yield* Effect.orDie(sql`
        SELECT min(n)::text AS next_nonce FROM generate_series(${from}::bigint, ${from}::bigint + (
          SELECT count(*) FROM custody_transactions
          WHERE chain = ${chain} AND lower(from_address) = ${address.toLowerCase()} AND nonce >= ${from}::bigint)) AS n
        WHERE NOT EXISTS (
          SELECT 1 FROM custody_transactions t
          WHERE t.chain = ${chain} AND lower(t.from_address) = ${address.toLowerCase()} AND t.nonce = n
            AND t.status IN ('signed', 'broadcast', 'included', 'final', 'replaced', 'reverted'))`).pipe(
        Effect.flatMap(decodeScalar(NonceRow, "next_nonce", () => finalOnChain))
      )
    })

    /**
     * The nonce by the stored counter (the database's count, or the chain's final count when higher): the
     * rule before issue 46, kept only for the simulation's switch (SendRules.lowestFreeNonce off).
     */
    const counterNonce = Effect.fn("CustodyStore.counterNonce")(function* (
      chain: Chain,
      address: string,
      finalOnChain: bigint
    ) {
      const stored = yield* Effect.orDie(sql`
        SELECT next_nonce::text AS next_nonce FROM evm_nonces WHERE chain = ${chain} AND address = ${address.toLowerCase()}`).pipe(
        Effect.flatMap(decodeScalar(NonceRow, "next_nonce", () => 0n))
      )
      return stored > finalOnChain ? stored : finalOnChain
    })

    /**
     * Stores a signed transaction (and, for EVM, the nonce it used) in one database transaction, before
     * it is broadcast. The unique live-attempt index refuses a second live signature for the operation.
     */
    const recordSigned = Effect.fn("CustodyStore.recordSigned")(function* (
      operation: OperationRow,
      signed: SignedTransfer,
      leg: {
        readonly to: string
        readonly currency: string
        readonly amount: bigint
        /** A chain action, or `Cancel`: an EVM attempt that only fills its nonce (a zero-value self-transfer). */
        readonly action?: ChainAction | { readonly _tag: "Cancel" }
      }
    ) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const next = yield* sql`
          SELECT coalesce(max(attempt), 0) + 1 AS next FROM custody_transactions WHERE operation_id = ${operation.id}`.pipe(
              Effect.flatMap(decodeScalar(NextAttemptRow, "next", () => 1))
            )
            yield* sql`INSERT INTO custody_transactions ${sql.insert({
              chain: operation.chain,
              tx_hash: signed.txHash,
              operation_id: operation.id,
              attempt: next,
              from_address: signed.from,
              fee_payer: signed.feePayer,
              to_address: leg.to,
              currency: leg.currency,
              amount: (signed.amount ?? leg.amount).toString(),
              raw: signed.raw,
              nonce: Option.getOrNull(Option.map(signed.nonce, String)),
              valid_until: Option.getOrNull(Option.map(signed.validUntil, String)),
              max_fee: signed.maxFee.toString(),
              gas_price: signed.gasPrice.toString(),
              status: "signed",
              action: leg.action?._tag ?? null
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
     * Of a batch's hashes, those custody itself signed for a collection or a gas funding (never deposits:
     * custody stored them before broadcasting them). A withdrawal's are not among them: a withdrawal to
     * someone's deposit address is a real payment to them. One indexed lookup; none for no hashes.
     */
    const ownHashes = (chain: Chain, hashes: ReadonlyArray<string>) =>
      hashes.length === 0
        ? Effect.succeed<ReadonlySet<string>>(new Set())
        : sql`
            SELECT ct.tx_hash FROM custody_transactions ct JOIN custody_operations o ON o.id = ct.operation_id
            WHERE ct.chain = ${chain} AND ct.tx_hash = ANY(string_to_array(${hashes.join(",")}, ',')) AND o.type <> 'withdrawal'`.pipe(
            Effect.flatMap(decodeAll(HashRow)),
            Effect.map((rows): ReadonlySet<string> => new Set(rows.map((r) => r.tx_hash)))
          )

    /**
     * Fragment: custody's transfers on a chain that are in a block (included, final or reverted), with the
     * addresses normalised for comparing (lower case on BEP20) — what the reconciliation composes as a CTE. An
     * action (a closed token account's rent, energy staked or lent) moves no balance between the addresses it
     * names: only its fee counts.
     */
    const transfersInBlocks = (chain: Chain) =>
      sql`
            SELECT ct.currency, CASE WHEN ct.action IS NULL THEN ct.amount ELSE 0 END AS amount, ct.fee, ct.status, ct.block_number,
                   CASE WHEN ${chain} = 'BEP20' THEN lower(ct.to_address) ELSE ct.to_address END AS to_norm,
                   CASE WHEN ${chain} = 'BEP20' THEN lower(ct.from_address) ELSE ct.from_address END AS from_norm,
                   CASE WHEN ${chain} = 'BEP20' THEN lower(ct.fee_payer) ELSE ct.fee_payer END AS fee_payer_norm
            FROM custody_transactions ct WHERE ct.chain = ${chain} AND ct.status IN ('included', 'final', 'reverted')`

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
            const gone = yield* sql`
          UPDATE custody_transactions SET status = 'dropped', last_error = ${`its nonce was used by ${landed.tx_hash}`}, updated_at = clock_timestamp()
          WHERE operation_id = ${landed.operation_id} AND status = 'replaced' AND tx_hash <> ${landed.tx_hash} RETURNING tx_hash`.pipe(
              Effect.flatMap(decodeAll(HashRow))
            )
            yield* transactions.failPendingByHashes(
              landed.chain,
              gone.map((g) => g.tx_hash)
            )
          })
        )
        .pipe(Effect.orDie)
    })

    /**
     * The attempt is in a block. Final: it used its nonce, so any other attempt of the operation still live (a
     * replacement or a cancellation signed after a reader took its look, or one a node on another branch
     * showed in a block) never lands — dropped in the same database transaction. Not final: it is marked only
     * while no other attempt of the operation is live (a block not yet final may still be left). An attempt
     * already final stays final. False when it was not marked.
     */
    const markIncluded = Effect.fn("CustodyStore.markIncluded")(function* (
      attempt: AttemptRow,
      blockNumber: bigint,
      fee: bigint | undefined,
      final: boolean
    ) {
      const mark = Effect.map(
        sql`
          UPDATE custody_transactions SET status = CASE WHEN status = 'final' THEN 'final' ELSE 'included' END, block_number = ${blockNumber.toString()},
            fee = ${fee === undefined ? sql`fee` : sql`${fee.toString()}`}, updated_at = clock_timestamp()
          WHERE chain = ${attempt.chain} AND tx_hash = ${attempt.tx_hash} AND NOT EXISTS (
            SELECT 1 FROM custody_transactions other WHERE other.operation_id = ${attempt.operation_id}
              AND other.tx_hash <> ${attempt.tx_hash} AND other.status IN ('signed', 'broadcast', 'included', 'final'))
          RETURNING tx_hash`,
        (marked) => marked.length > 0
      )
      // one statement needs no transaction of its own; the nonce's other attempts are dropped with it, atomically
      const nonce = attempt.nonce
      if (!final || nonce === null) return yield* Effect.orDie(mark)
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const gone = yield* sql`
              UPDATE custody_transactions SET status = 'dropped', last_error = ${`its nonce was used by ${attempt.tx_hash}`}, updated_at = clock_timestamp()
              WHERE operation_id = ${attempt.operation_id} AND tx_hash <> ${attempt.tx_hash} AND nonce = ${nonce.toString()}
                AND status IN ('signed', 'broadcast', 'included') RETURNING tx_hash`.pipe(
              Effect.flatMap(decodeAll(HashRow))
            )
            yield* transactions.failPendingByHashes(
              attempt.chain,
              gone.map((g) => g.tx_hash)
            )
            return yield* mark
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
                        ORDER BY created_at`.pipe(Effect.orDie, Effect.flatMap(decodeAll(AttemptRow)))
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
      const waited = yield* Effect.orDie(sql`
        UPDATE custody_operations SET fee_capped_since = coalesce(fee_capped_since, clock_timestamp())
        WHERE id = ${id} RETURNING (extract(epoch FROM clock_timestamp() - fee_capped_since) * 1000)::float8 AS waited_ms`).pipe(
        Effect.flatMap(decodeScalar(WaitedRow, "waited_ms", () => 0))
      )
      return Duration.millis(waited)
    })

    const clearHalt = Effect.fn("CustodyStore.clearHalt")(function* (id: string) {
      yield* Effect.orDie(
        sql`UPDATE custody_operations SET halted_reason = NULL, halted_at = NULL WHERE id = ${id} AND halted_reason IS NOT NULL`
      )
    })

    /**
     * A node accepted the transaction: the attempt and the operation say so, in the caller's transaction
     * (with, for a withdrawal, the withdrawal's own mark).
     */
    const markBroadcast = (operation: OperationRow, txHash: string) =>
      Effect.zipRight(
        sql`UPDATE custody_transactions SET status = 'broadcast', updated_at = clock_timestamp()
                   WHERE chain = ${operation.chain} AND tx_hash = ${txHash} AND status = 'signed'`,
        sql`UPDATE custody_operations SET status = 'BROADCAST', waiting_for = ${`${txHash} to be mined`}, updated_at = clock_timestamp()
                   WHERE id = ${operation.id} AND status NOT IN ('COMPLETED', 'FAILED')`
      ).pipe(Effect.asVoid)

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

    /**
     * Written before the bytes go to a node, as a compare-and-set: true for the one call that sends them
     * first (every later send is a re-send, whatever an earlier row read said).
     */
    const markSending = Effect.fn("CustodyStore.markSending")(function* (chain: Chain, txHash: string) {
      const rows =
        yield* Effect.orDie(sql`UPDATE custody_transactions SET first_sent_at = clock_timestamp(), updated_at = clock_timestamp()
                              WHERE chain = ${chain} AND tx_hash = ${txHash} AND first_sent_at IS NULL RETURNING tx_hash`)
      return rows.length > 0
    })

    /**
     * A node's documented refusal of a send, kept on the attempt (it stays live: a refusal proves nothing);
     * null when a later send of it was accepted.
     */
    const markRefused = Effect.fn("CustodyStore.markRefused")(function* (
      chain: Chain,
      txHash: string,
      refusal: string | null
    ) {
      yield* Effect.orDie(sql`UPDATE custody_transactions SET refusal = ${refusal}, last_error = coalesce(${refusal}, last_error),
                              updated_at = clock_timestamp() WHERE chain = ${chain} AND tx_hash = ${txHash}`)
    })

    /** Operations per status, and how long the oldest unfinished one has been in flight (health, metrics). */
    const stats = Effect.fn("CustodyStore.stats")(function* () {
      const byStatus = yield* sql`
        SELECT type, status, count(*)::int AS n FROM custody_operations GROUP BY type, status ORDER BY type, status`.pipe(
        Effect.flatMap(decodeAll(StatusCountRow))
      )
      const [oldest] = yield* sql`
        SELECT id, extract(epoch FROM clock_timestamp() - created_at)::float8 AS seconds, waiting_for FROM custody_operations
        WHERE status NOT IN ('COMPLETED', 'FAILED') ORDER BY created_at LIMIT 1`.pipe(
        Effect.flatMap(decodeAll(OldestRow))
      )
      const transactions = yield* sql`
        SELECT status, count(*)::int AS n FROM custody_transactions GROUP BY status ORDER BY status`.pipe(
        Effect.flatMap(decodeAll(AttemptCountRow))
      )
      const halted = yield* sql`
        SELECT id, chain, from_address, halted_reason, extract(epoch FROM clock_timestamp() - halted_at)::float8 AS seconds FROM custody_operations
        WHERE halted_reason IS NOT NULL AND status NOT IN ('COMPLETED', 'FAILED') ORDER BY halted_at`.pipe(
        Effect.flatMap(decodeAll(HaltedRow))
      )
      return { byStatus, oldest, transactions, halted }
    })

    /**
     * A devnet reset: every operation, signed transaction and reserved nonce goes (they belong to the chains
     * that go). The operations let go of their withdrawals first; `withdrawalsGone` runs then (the withdrawals
     * deleted by their owner), before the rest, in this order, in the caller's transaction.
     */
    const forgetAll = <E, R>(withdrawalsGone: Effect.Effect<unknown, E, R>) =>
      Effect.gen(function* () {
        yield* sql`UPDATE custody_operations SET withdrawal_id = NULL`
        yield* withdrawalsGone
        yield* sql`DELETE FROM custody_transactions`
        yield* sql`UPDATE custody_operations SET gas_funding_id = NULL, energy_id = NULL, parent_id = NULL`
        yield* sql`DELETE FROM custody_operations`
        yield* sql`DELETE FROM evm_nonces`
      })

    // ---- TRON energy lent from the stake (custody/energy.ts)

    /**
     * Takes the stake's lock for the rest of the caller's transaction: lendings are decided one at a time,
     * each counting those decided before it (the chain's figures lag what custody has signed).
     */
    const lockStake = sql`SELECT pg_advisory_xact_lock(hashtext('facet/energy-stake'))`.pipe(Effect.asVoid)

    /** Sun of stake lent by lendings not yet final (not yet in the chain's figures), in the caller's transaction. */
    /**
     * Sun of stake lent by lendings final since `since` (the moment the chain's figures were read: they may
     * not show them), in the caller's transaction.
     */
    const lendingFinalSince = (since: Date) =>
      sql`
        SELECT coalesce(sum(amount), 0)::text AS total FROM custody_operations
        WHERE type = 'energy_delegation' AND status = 'COMPLETED' AND finished_at >= ${since}`.pipe(
        Effect.flatMap(decodeScalar(SumRow, "total", () => 0n))
      )

    const lendingInFlight = sql`
        SELECT coalesce(sum(amount), 0)::text AS total FROM custody_operations
        WHERE type = 'energy_delegation' AND status NOT IN ('COMPLETED', 'FAILED')`.pipe(
      Effect.flatMap(decodeScalar(SumRow, "total", () => 0n))
    )

    /** A lending stored with its transfer pointing at it, in the caller's transaction. */
    const insertLending = (lending: NewOperation & { readonly parent_id: string }) =>
      Effect.gen(function* () {
        yield* sql`INSERT INTO custody_operations ${sql.insert(lending)}`
        yield* sql`
          UPDATE custody_operations SET energy_id = ${lending.id}, energy_path = 'delegated', energy_reason = NULL,
                 updated_at = clock_timestamp()
          WHERE id = ${lending.parent_id}`
      })

    /** How a transfer's energy is paid for, decided (and why, when it is not lent). */
    const setEnergyPath = (id: string, path: EnergyPath, reason: string | null) =>
      sql`
        UPDATE custody_operations SET energy_path = ${path}, energy_reason = ${reason}, updated_at = clock_timestamp()
        WHERE id = ${id}`.pipe(Effect.asVoid)

    /**
     * Lendings final on chain whose transfer is finished and that nothing takes back yet get their taking
     * back, one each (the unique index), driven by the same wallet's actor: the ids stored. A taking back
     * that FAILED (the node refused it) is tried again `retryAfterMs` after it failed: energy is never left
     * lent for good on one refusal, and a chain that keeps refusing is told in the log at that pace.
     */
    const insertDueReclaims = Effect.fn("CustodyStore.insertDueReclaims")(function* (retryAfterMs: number) {
      const rows = yield* sql`
        INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address,
                                        to_wallet_id, to_address, amount, parent_id, waiting_for)
        SELECT facet_id('op'), 'energy_reclaim', 'SWEEPING', d.merchant_id, d.chain,
               d.currency, d.wallet_id, d.from_address, d.to_wallet_id, d.to_address, d.amount, d.id,
               'the wallet''s actor'
        FROM custody_operations d JOIN custody_operations t ON t.id = d.parent_id
        WHERE d.type = 'energy_delegation' AND d.status = 'COMPLETED' AND d.taken_back_at IS NULL
          AND t.status IN ('COMPLETED', 'FAILED')
          AND NOT EXISTS (SELECT 1 FROM custody_operations r WHERE r.type = 'energy_reclaim' AND r.parent_id = d.id
                          AND (r.status <> 'FAILED' OR r.finished_at > clock_timestamp() - ${retryAfterMs} * interval '1 millisecond'))
        ON CONFLICT DO NOTHING
        RETURNING id`.pipe(Effect.orDie, Effect.flatMap(decodeAll(HashIdRow)))
      return rows.map((r) => r.id)
    })

    /** The lending is over (its taking back is final, or the chain shows nothing of it lent), in the caller's transaction. */
    const markTakenBack = (lendingId: string) =>
      sql`UPDATE custody_operations SET taken_back_at = clock_timestamp() WHERE id = ${lendingId} AND taken_back_at IS NULL`.pipe(
        Effect.asVoid
      )

    /**
     * Another lending to the same address whose transfer is not finished (it may be sending on that energy
     * now): taking an earlier one back meanwhile would take part of its energy with it (java-tron moves the
     * borrower's use back in proportion), so a taking back waits for it.
     */
    const lendingInUse = Effect.fn("CustodyStore.lendingInUse")(function* (toAddress: string, exceptId: string) {
      return yield* sql`
        SELECT d.id FROM custody_operations d JOIN custody_operations t ON t.id = d.parent_id
        WHERE d.type = 'energy_delegation' AND d.status <> 'FAILED' AND d.taken_back_at IS NULL
          AND d.to_address = ${toAddress} AND d.id <> ${exceptId} AND t.status NOT IN ('COMPLETED', 'FAILED')
        LIMIT 1`.pipe(Effect.orDie, Effect.flatMap(decodeFirst(HashIdRow)))
    })

    /** How many takings back of the lending the node refused (a retry checks the chain first). */
    const refusedReclaims = Effect.fn("CustodyStore.refusedReclaims")(function* (lendingId: string) {
      return yield* sql`
        SELECT count(*)::int AS n FROM custody_operations
        WHERE type = 'energy_reclaim' AND parent_id = ${lendingId} AND status = 'FAILED'`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
    })

    /** Whether custody ever completed a gas funding to the wallet (its address exists on chain, whatever a node says). */
    const everFunded = Effect.fn("CustodyStore.everFunded")(function* (walletId: string) {
      return yield* sql`
        SELECT count(*)::int AS n FROM custody_operations
        WHERE type = 'gas_funding' AND to_wallet_id = ${walletId} AND status = 'COMPLETED'`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0)),
        Effect.map((n) => n > 0)
      )
    })

    /** Sun lent by lendings final on chain and not yet taken back (what custody has out), and how many. */
    const lentOut = Effect.fn("CustodyStore.lentOut")(function* () {
      const [row] = yield* sql`
        SELECT coalesce(sum(d.amount), 0)::text AS total, count(*)::int AS n FROM custody_operations d
        WHERE d.type = 'energy_delegation' AND d.status = 'COMPLETED' AND d.taken_back_at IS NULL`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeAll(LentRow))
      )
      return row ?? { total: 0n, n: 0 }
    })

    /** TRX (sun) custody's TRON transactions burned, final or reverted: what energy and bandwidth cost. */
    const tronBurned = sql`
        SELECT coalesce(sum(fee), 0)::text AS total FROM custody_transactions
        WHERE chain = 'TRC20' AND status IN ('final', 'reverted')`.pipe(
      Effect.orDie,
      Effect.flatMap(decodeScalar(SumRow, "total", () => 0n))
    )

    return {
      lockStake,
      lendingInFlight,
      lendingFinalSince,
      insertLending,
      setEnergyPath,
      insertDueReclaims,
      markTakenBack,
      lendingInUse,
      refusedReclaims,
      everFunded,
      lentOut,
      tronBurned,
      stats,
      operation,
      lockOperation,
      open,
      insertCollection,
      collectionInFlight,
      startGasFunding,
      insertAccountClose,
      insertOperation,
      insertOperations,
      kick,
      setStatus,
      waitingFor,
      complete,
      fail,
      markForResume,
      operatorList,
      attempts,
      attemptsAtNonce,
      hashTaken,
      ownHashes,
      transfersInBlocks,
      reject,
      restoreReplaced,
      dropReplaced,
      halt,
      clearHalt,
      feeCapped,
      liveAttempt,
      nextNonce,
      counterNonce,
      markRefused,
      recordSigned,
      markAttempt,
      markIncluded,
      markBroadcast,
      markSending,
      forgetAll
    } as const
  })
}) {}
