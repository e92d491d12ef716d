import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { SimChain } from "./sim-chain.js"
import type { SimChainId } from "./sim-tx.js"

/** An operation and the transactions custody signed for it, as stored. */
const AttemptJoinRow = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  status: Schema.String,
  chain: Schema.String,
  waiting_for: Schema.NullOr(Schema.String),
  tx_hash: Schema.NullOr(Schema.String),
  nonce: Schema.NullOr(Schema.BigInt),
  from_address: Schema.NullOr(Schema.String),
  action: Schema.NullOr(Schema.String),
  attempt_status: Schema.NullOr(Schema.String),
  amount: Schema.NullOr(Schema.String),
  gas_price: Schema.NullOr(Schema.String),
  refusal: Schema.NullOr(Schema.String)
})
const decodeJoin = Schema.decodeUnknown(Schema.Array(AttemptJoinRow))

const LedgerSumRow = Schema.Struct({ reference: Schema.String, kind: Schema.String, amount: Schema.BigInt })
const decodeLedgerSums = Schema.decodeUnknown(Schema.Array(LedgerSumRow))
const BalanceRow = Schema.Struct({ account: Schema.String, currency: Schema.String, balance: Schema.BigInt })
const decodeBalances = Schema.decodeUnknown(Schema.Array(BalanceRow))

export interface OperationState {
  readonly id: string
  readonly type: string
  readonly status: string
  readonly chain: string
  readonly waitingFor: string | null
  /** `cancels`: an EVM cancellation at the transfer's nonce (a zero-value self-transfer), never its transfer. */
  readonly attempts: ReadonlyArray<{
    readonly hash: string
    readonly nonce: bigint | null
    readonly from: string
    readonly cancels: boolean
    /** What a violation prints of it: its status, amount, gas price and refusal. */
    readonly shown: string
  }>
}

export const isFinal = (state: OperationState) => state.status === "COMPLETED" || state.status === "FAILED"

/** The seed's operations and their attempts, in one statement. */
export const readOperations = (ids: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`
      SELECT o.id, o.type, o.status, o.chain, o.waiting_for, t.tx_hash, t.nonce::text AS nonce, t.from_address, t.action,
             t.status AS attempt_status, t.amount::text AS amount, t.gas_price::text AS gas_price, t.refusal
      FROM custody_operations o LEFT JOIN custody_transactions t ON t.operation_id = o.id
      WHERE ${sql.in("o.id", ids)} ORDER BY o.id, t.attempt`.pipe(Effect.flatMap(decodeJoin), Effect.orDie)
    const byId = new Map<string, OperationState & { attempts: Array<OperationState["attempts"][number]> }>()
    for (const row of rows) {
      const state = byId.get(row.id) ?? {
        id: row.id,
        type: row.type,
        status: row.status,
        chain: row.chain,
        waitingFor: row.waiting_for,
        attempts: []
      }
      if (row.tx_hash !== null)
        state.attempts.push({
          hash: row.tx_hash,
          nonce: row.nonce,
          from: row.from_address ?? "",
          cancels: row.action === "Cancel",
          shown: `${row.tx_hash.slice(0, 10)} ${row.attempt_status ?? "?"}${row.action === "Cancel" ? " cancel" : ""} nonce ${row.nonce ?? "-"} amount ${row.amount ?? "?"} at ${row.gas_price ?? "?"}${row.refusal === null ? "" : ` refused (${row.refusal})`}`
        })
      byId.set(row.id, state)
    }
    return [...byId.values()]
  })

const chainOf = (chains: ReadonlyMap<SimChainId, SimChain>, state: { readonly chain: string }) => {
  for (const [id, chain] of chains) if (id === state.chain) return chain
  return undefined
}

const StatusRow = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  status: Schema.String,
  chain: Schema.String,
  tx_hash: Schema.NullOr(Schema.String)
})
const decodeStatuses = Schema.decodeUnknown(Schema.Array(StatusRow))
const OwnerRow = Schema.Struct({ tx_hash: Schema.String, operation_id: Schema.String })
const decodeOwners = Schema.decodeUnknown(Schema.Array(OwnerRow))

/**
 * The invariants that must hold after every step, kept cheap: the operations' statuses are read after a
 * driver's turn that wrote to the database (`wrote`: whether any statement since the last call inserted,
 * updated or deleted; a turn that only read or waited changes no status), with the attempts of the FAILED
 * ones; the owners of the transactions a block includes after it is mined. No operation's transfer lands
 * twice; none is FAILED while a transfer of it landed or can still land (in a mempool, or on its way to
 * one, and still valid).
 */
export const makeStepWatch = (
  ids: ReadonlyArray<string>,
  chains: ReadonlyMap<SimChainId, SimChain>,
  wrote: () => boolean
) => {
  const failed = new Map<string, { type: string; chain: string; hashes: Array<string> }>()
  const paid = new Map<string, Set<string>>()
  let finalCount = 0
  /** The statuses as last read, and whether the last read or block changed anything (progress). */
  let fingerprint = ""
  let moved = false

  const failedViolations = () =>
    [...failed.entries()].flatMap(([id, op]) => {
      const chain = chainOf(chains, op)
      if (chain === undefined) return []
      const landed = op.hashes.find((h) => chain.landed(h)?.success === true)
      const live = op.hashes.find((h) => chain.canLand(h))
      if (landed !== undefined)
        return [`FAILED while landed: ${op.type} ${id} FAILED, its ${landed.slice(0, 10)} is in a block`]
      if (live !== undefined)
        return [`FAILED while it can land: ${op.type} ${id} FAILED, its ${live.slice(0, 10)} is in a mempool and valid`]
      return []
    })

  /** After a driver's turn: the statuses, and the attempts of every FAILED operation. */
  const afterTurn = Effect.gen(function* () {
    // nothing written: the statuses read last still hold; the chain may have moved under the FAILED ones
    if (!wrote()) {
      moved = false
      return failedViolations()
    }
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`
      SELECT o.id, o.type, o.status, o.chain, t.tx_hash FROM custody_operations o
      LEFT JOIN custody_transactions t ON t.operation_id = o.id AND o.status = 'FAILED' AND t.action IS DISTINCT FROM 'Cancel'
      WHERE ${sql.in("o.id", ids)} ORDER BY o.id, t.tx_hash`.pipe(Effect.flatMap(decodeStatuses), Effect.orDie)
    failed.clear()
    const final = new Set<string>()
    for (const row of rows) {
      if (row.status === "COMPLETED" || row.status === "FAILED") final.add(row.id)
      if (row.status !== "FAILED") continue
      const op = failed.get(row.id) ?? { type: row.type, chain: row.chain, hashes: [] }
      if (row.tx_hash !== null) op.hashes.push(row.tx_hash)
      failed.set(row.id, op)
    }
    finalCount = final.size
    // in one order (the statement's), so a status change is progress and the rows' order is not
    const now = rows.map((r) => `${r.id}:${r.status}`).join(",")
    moved = now !== fingerprint
    fingerprint = now
    return failedViolations()
  })

  /** After a block: whose transactions it included; a second success of one operation is a double payment. */
  const afterBlock = (chain: SimChain, hashes: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const successes = hashes.filter((h) => chain.landed(h)?.success === true)
      moved = hashes.length > 0
      if (successes.length === 0) return failedViolations()
      const owners = yield* sql`
        SELECT tx_hash, operation_id FROM custody_transactions
        WHERE chain = ${chain.id} AND ${sql.in("tx_hash", successes)} AND action IS DISTINCT FROM 'Cancel'`.pipe(
        Effect.flatMap(decodeOwners),
        Effect.orDie
      )
      const twice: Array<string> = []
      for (const owner of owners) {
        const seen = paid.get(owner.operation_id) ?? new Set<string>()
        seen.add(owner.tx_hash)
        paid.set(owner.operation_id, seen)
        if (seen.size > 1)
          twice.push(`paid twice: ${owner.operation_id} landed ${[...seen].map((h) => h.slice(0, 10)).join(" and ")}`)
      }
      return [...twice, ...failedViolations()]
    })

  return {
    afterTurn,
    afterBlock,
    allFinal: () => finalCount === ids.length,
    /** Whether the last step changed a status or included a transaction. */
    moved: () => moved
  } as const
}

/** Every nonce below the highest custody signed for an EVM sender is used on chain once the network is honest. */
const nonceGaps = (states: ReadonlyArray<OperationState>, chain: SimChain | undefined) => {
  if (chain === undefined) return []
  const highest = new Map<string, bigint>()
  for (const state of states)
    for (const a of state.attempts)
      if (a.nonce !== null && state.chain === "BEP20" && a.nonce > (highest.get(a.from) ?? -1n))
        highest.set(a.from, a.nonce)
  return [...highest.entries()].flatMap(([sender, top]) => {
    const used = chain.nonceAt(sender, chain.head())
    return used < top
      ? [`nonce gap: ${sender.slice(0, 10)} signed up to nonce ${top} but nonce ${used} is never used`]
      : []
  })
}

/** Ledger = chain, operation by operation: what it booked is what its landed transaction moved and burned. */
const ledgerMismatches = (
  states: ReadonlyArray<OperationState>,
  chains: ReadonlyMap<SimChainId, SimChain>,
  sums: ReadonlyArray<typeof LedgerSumRow.Type>
) =>
  states.flatMap((state) => {
    const chain = chainOf(chains, state)
    if (chain === undefined) return []
    const booked = (kind: string) =>
      sums.filter((s) => s.reference === state.id && s.kind === kind).reduce((sum, s) => sum + s.amount, 0n)
    const landedOf = (cancels: boolean) =>
      state.attempts
        .filter((a) => a.cancels === cancels)
        .map((a) => chain.landed(a.hash))
        .find((l) => l?.success === true)
    const landed = landedOf(false)
    // a cancellation that filled the nonce: the operation FAILED, nothing moved, its fee burned
    const cancelled = landedOf(true)
    const kind = state.type === "energy_delegation" ? undefined : state.type
    const moved = kind === undefined ? 0n : booked(kind)
    const want = state.status === "COMPLETED" && landed !== undefined && kind !== undefined ? landed.tx.amount : 0n
    const fee = booked("network_fee")
    const burned = state.status === "COMPLETED" ? (landed?.fee ?? 0n) : (cancelled?.fee ?? 0n)
    const out: Array<string> = []
    if (moved !== want) out.push(`ledger ≠ chain: ${state.type} ${state.id} booked ${moved}, the chain moved ${want}`)
    if (fee !== burned)
      out.push(`ledger ≠ chain: ${state.type} ${state.id} booked a fee of ${fee}, the chain burned ${burned}`)
    return out
  })

/**
 * What must hold once the network is honest again and the run is over: every operation final, no EVM nonce
 * gap, ledger = chain for each operation, the merchant's available and locked never negative and nothing
 * left locked.
 */
export const endViolations = (
  states: ReadonlyArray<OperationState>,
  chains: ReadonlyMap<SimChainId, SimChain>,
  merchantId: string
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ids = states.map((s) => s.id)
    const sums = yield* sql`
      SELECT reference, kind, sum(amount)::text AS amount FROM ledger_transfers
      WHERE ${sql.in("reference", ids)} GROUP BY reference, kind`.pipe(Effect.flatMap(decodeLedgerSums), Effect.orDie)
    const balances = yield* sql`
      SELECT account, currency, (credits_posted - debits_posted)::text AS balance FROM ledger_balances
      WHERE merchant_id = ${merchantId} AND kind IN ('available', 'locked')`.pipe(
      Effect.flatMap(decodeBalances),
      Effect.orDie
    )
    const unfinished = states
      .filter((s) => !isFinal(s))
      .map(
        (s) =>
          `not final after healing: ${s.type} ${s.id} ${s.status}, waiting for ${s.waitingFor ?? "nothing"}; attempts: ${s.attempts.map((a) => a.shown).join("; ") || "none"}`
      )
    const negative = balances
      .filter((b) => b.balance < 0n || (b.account.startsWith("locked:") && b.balance !== 0n && unfinished.length === 0))
      .map((b) => `ledger: ${b.account} ${b.currency} is ${b.balance} at the end`)
    return [
      ...unfinished,
      ...nonceGaps(states, chains.get("BEP20")),
      ...ledgerMismatches(states, chains, sums),
      ...negative
    ]
  })
