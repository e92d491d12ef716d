import { secp256k1 } from "@noble/curves/secp256k1.js"
import { sha256 } from "@noble/hashes/sha2.js"
import { keccak_256 } from "@noble/hashes/sha3.js"
import { utils as tronUtils } from "tronweb"
import { Schema } from "effect"
import { TronTransaction } from "../../chains/tron/tron-decoding.js"
import { secp256k1AccountId } from "../../keys/address-encoding.js"

/**
 * The devnet's TRON rules, without the HTTP: accounts with TRX and TRC20 balances, blocks with a
 * solidified lag, and the checks a real node makes before accepting a transaction (the JSON matches
 * its signed raw bytes, the signature recovers to the owner, not expired, a known reference block, not a
 * duplicate, enough balance) and when executing it (fees burned in TRX under a simple bandwidth /
 * energy model; a TRC20 call without the tokens reverts, one without TRX for energy runs out of it).
 */

export const TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
const SUN_PER_BANDWIDTH_BYTE = 1_000n
const FREE_BANDWIDTH_BYTES = 600
const NEW_ACCOUNT_FEE = 1_000_000n
const SUN_PER_ENERGY = 420n
const ENERGY_TRANSFER_EXISTING_HOLDER = 14_650n
const ENERGY_TRANSFER_NEW_HOLDER = 29_650n
const ENERGY_REVERT = 2_000n
const MAX_EXPIRATION_MS = 24 * 3600 * 1000
/** Energy of one TRX leg a contract sends (a CALL with value), and of the call around them. */
const ENERGY_INTERNAL_LEG = 9_000n
const ENERGY_CALL_BASE = 3_000n

/**
 * The devnet's TRX forwarder, a built-in contract as a smart-contract wallet or a batch payout contract
 * would be (the TRON twin of test/contracts/Forwarder.sol): `forward(address)` sends the call value on,
 * `split(address,address)` and `split3(address,address,address)` divide it, `tryForward(address)` sends it
 * inside a sub-call that reverts (the transaction succeeds, the inner legs are `rejected`, the contract keeps
 * the TRX). Each leg is an internal transaction in java-tron's shape.
 */
export const FORWARDER_CONTRACT = `41${Buffer.from(sha256(new TextEncoder().encode("facet-devnet-trx-forwarder")))
  .toString("hex")
  .slice(0, 40)}`
const selector = (signature: string) =>
  Buffer.from(keccak_256(new TextEncoder().encode(signature)))
    .toString("hex")
    .slice(0, 8)
export const FORWARDER_METHODS = {
  forward: selector("forward(address)"),
  split: selector("split(address,address)"),
  split3: selector("split3(address,address,address)"),
  tryForward: selector("tryForward(address)")
} as const

export interface InternalLeg {
  readonly caller: string
  readonly to: string
  readonly callValue: bigint
  readonly rejected: boolean
}

export interface TxOutcome {
  readonly tx: TronTransaction
  readonly contractRet: "SUCCESS" | "REVERT" | "OUT_OF_ENERGY"
  readonly fee: bigint
  readonly log: ReadonlyArray<{ address: string; topics: ReadonlyArray<string>; data: string }>
  readonly contractAddress?: string
  readonly internal?: ReadonlyArray<InternalLeg>
}

interface Balances {
  readonly trx: Map<string, bigint>
  readonly tokens: Map<string, Map<string, bigint>>
  readonly freeBandwidthUsed: Map<string, number>
}

export interface LedgerBlock {
  readonly number: number
  readonly blockID: string
  readonly parentHash: string
  readonly timestamp: number
  readonly outcomes: ReadonlyArray<TxOutcome>
}

/** What changes the ledger, as its journal records it: replaying these in order rebuilds the chain. */
export const TronLedgerOp = Schema.Union(
  Schema.Struct({ op: Schema.Literal("fund"), address: Schema.String, currency: Schema.String, amount: Schema.BigInt }),
  Schema.Struct({ op: Schema.Literal("accept"), tx: TronTransaction, now: Schema.Number }),
  Schema.Struct({ op: Schema.Literal("block"), time: Schema.Number, id: Schema.String }),
  Schema.Struct({ op: Schema.Literal("reorg"), depth: Schema.Number, keep: Schema.Boolean, now: Schema.Number }),
  Schema.Struct({ op: Schema.Literal("blacklist"), address: Schema.String })
)
export type TronLedgerOp = typeof TronLedgerOp.Type

// a thrown Error, not a tagged one: the ledger is synchronous code; tron-devnet.ts catches it into TRON's error answer
export class Rejection extends Error {
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message)
  }
}

const copy = (b: Balances): Balances => ({
  trx: new Map(b.trx),
  tokens: new Map([...b.tokens].map(([k, v]) => [k, new Map(v)])),
  freeBandwidthUsed: new Map(b.freeBandwidthUsed)
})

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")
const pad32 = (value: string) => value.padStart(64, "0")

/** TRON block id: the block number in the first 8 bytes, then 24 bytes of the header hash. */
const blockId = (number: number, header: string) =>
  number.toString(16).padStart(16, "0") + hex(sha256(new TextEncoder().encode(header))).slice(16)

/** The `41…` hex address that signed `txID`, from a 65-byte r‖s‖v signature (v 0/1 or 27/28). */
export const recoverOwner = (txID: string, signatureHex: string): string | undefined => {
  try {
    const sig = Buffer.from(signatureHex, "hex")
    if (sig.length !== 65) return undefined
    const v = sig[64] ?? 0
    const recovered = new Uint8Array(65)
    recovered[0] = v >= 27 ? v - 27 : v
    recovered.set(sig.subarray(0, 64), 1)
    const point = secp256k1.Point.fromBytes(
      secp256k1.recoverPublicKey(recovered, Buffer.from(txID, "hex"), { prehash: false })
    )
    return `41${hex(secp256k1AccountId(point.toBytes(false)))}`
  } catch {
    return undefined
  }
}

const stringField = (value: Record<string, unknown>, key: string) => {
  const v = value[key]
  return typeof v === "string" ? v.toLowerCase() : ""
}
const bigField = (value: Record<string, unknown>, key: string) => {
  const v = value[key]
  return typeof v === "number" || typeof v === "string" ? BigInt(v) : 0n
}

export class TronLedger {
  readonly blocks: Array<LedgerBlock> = []
  private pending: Array<TronTransaction> = []
  private branch = 0
  /** Balances after each of the last blocks: enough to rebuild any block a reorg may replace. */
  private readonly states = new Map<number, Balances>()
  private journal: ((op: TronLedgerOp) => void) | undefined

  /** `genesisSalt` makes this chain's genesis (and so every block id) its own. */
  constructor(
    readonly tokenContracts: ReadonlyMap<string, string>,
    readonly solidLag: number,
    genesisTime: number,
    genesisSalt = ""
  ) {
    const empty: Balances = {
      trx: new Map(),
      tokens: new Map([...tokenContracts.keys()].map((c) => [c, new Map()])),
      freeBandwidthUsed: new Map()
    }
    this.blocks.push({
      number: 0,
      blockID: blockId(0, `genesis${genesisSalt}`),
      parentHash: "0".repeat(64),
      timestamp: genesisTime,
      outcomes: []
    })
    this.states.set(0, empty)
  }

  /** From now on every change is also handed to `record` (the devnet's journal). */
  recordTo(record: (op: TronLedgerOp) => void) {
    this.journal = record
  }

  /** Applies operations recorded earlier, checking that each block comes out with the id it had. */
  replay(ops: ReadonlyArray<TronLedgerOp>) {
    for (const op of ops) {
      switch (op.op) {
        case "fund":
          this.fundHead(op.address, op.currency, op.amount)
          break
        case "accept":
          this.validate(op.tx, op.now)
          this.pending.push(op.tx)
          break
        case "block": {
          const block = this.mine(op.time)
          if (block.blockID !== op.id)
            throw new Rejection(
              "OTHER_ERROR",
              `replayed block ${block.number} came out as ${block.blockID}, not ${op.id}`
            )
          break
        }
        case "reorg":
          this.replaceTail(op.depth, op.keep, op.now)
          break
        case "blacklist":
          this.blacklisted.add(op.address)
      }
    }
  }

  get head(): LedgerBlock {
    const head = this.blocks[this.blocks.length - 1]
    if (head === undefined) throw new Error("no genesis")
    return head
  }

  private get headState(): Balances {
    const state = this.states.get(this.head.number)
    if (state === undefined) throw new Error("no state for the head block")
    return state
  }

  get solid(): LedgerBlock {
    return this.blocks[Math.max(0, this.blocks.length - 1 - this.solidLag)] ?? this.head
  }

  block(number: number): LedgerBlock | undefined {
    return this.blocks[number]
  }

  /** The balances after block `number` (the head's when not given); kept for the last blocks only. */
  private stateAt(number?: number): Balances {
    const state = number === undefined ? this.headState : this.states.get(number)
    if (state === undefined) throw new Rejection("OTHER_ERROR", `no state kept for block ${number}`)
    return state
  }

  trxBalance(address41: string, atBlock?: number): bigint | undefined {
    return this.stateAt(atBlock).trx.get(address41)
  }

  tokenBalance(contract41: string, holder41: string, atBlock?: number): bigint {
    return this.stateAt(atBlock).tokens.get(contract41)?.get(holder41) ?? 0n
  }

  /** Energy a TRC20 `transfer` to `to41` would use now (what `triggerconstantcontract` reports). */
  transferEnergy(contract41: string, to41: string): bigint {
    return (this.headState.tokens.get(contract41)?.get(to41) ?? 0n) > 0n
      ? ENERGY_TRANSFER_EXISTING_HOLDER
      : ENERGY_TRANSFER_NEW_HOLDER
  }

  /** The prices this devnet charges, as `wallet/getchainparameters` names them. */
  static readonly chainParameters = [
    { key: "getTransactionFee", value: Number(SUN_PER_BANDWIDTH_BYTE) },
    { key: "getEnergyFee", value: Number(SUN_PER_ENERGY) },
    { key: "getCreateNewAccountFeeInSystemContract", value: Number(NEW_ACCOUNT_FEE) },
    { key: "getCreateAccountFee", value: 0 },
    { key: "getFreeNetLimit", value: FREE_BANDWIDTH_BYTES }
  ]

  /**
   * Senders the devnet's TRC20 token refuses, as USDT's own blacklist does (`isBlackListed`): a transfer
   * from one is accepted and then reverts on chain, burning its fee.
   */
  private readonly blacklisted = new Set<string>()

  blacklist(address41: string) {
    this.blacklisted.add(address41)
    this.journal?.({ op: "blacklist", address: address41 })
  }

  /** Devnet faucet: mints TRX or tokens straight into the head state. */
  fund(address41: string, currency: "TRX" | string, amount: bigint) {
    this.fundHead(address41, currency, amount)
    this.journal?.({ op: "fund", address: address41, currency, amount })
  }

  private fundHead(address41: string, currency: string, amount: bigint) {
    const state = this.headState
    if (currency === "TRX") {
      state.trx.set(address41, (state.trx.get(address41) ?? 0n) + amount)
      return
    }
    const contract = [...this.tokenContracts].find(([, c]) => c === currency)?.[0]
    if (contract === undefined) throw new Rejection("CONTRACT_VALIDATE_ERROR", `no devnet token ${currency}`)
    const holders = state.tokens.get(contract) ?? new Map<string, bigint>()
    holders.set(address41, (holders.get(address41) ?? 0n) + amount)
    state.tokens.set(contract, holders)
    if (!state.trx.has(address41)) state.trx.set(address41, 0n)
  }

  findTransaction(txID: string): { tx: TronTransaction; block?: LedgerBlock; outcome?: TxOutcome } | undefined {
    for (const block of this.blocks) {
      const outcome = block.outcomes.find((o) => o.tx.txID === txID)
      if (outcome !== undefined) return { tx: outcome.tx, block, outcome }
    }
    const pending = this.pending.find((t) => t.txID === txID)
    return pending === undefined ? undefined : { tx: pending }
  }

  /** The checks at broadcast; throws a Rejection with TRON's error code. */
  accept(tx: TronTransaction, now: number) {
    this.validate(tx, now)
    this.pending.push(tx)
    this.journal?.({ op: "accept", tx, now })
  }

  private validate(tx: TronTransaction, now: number) {
    if (!tronUtils.transaction.txCheck(tx))
      throw new Rejection("OTHER_ERROR", "the transaction JSON does not match its raw_data_hex or txID")
    const contract = tx.raw_data.contract[0]
    if (contract === undefined || tx.raw_data.contract.length !== 1)
      throw new Rejection("CONTRACT_VALIDATE_ERROR", "exactly one contract per transaction")
    const owner = stringField(contract.parameter.value, "owner_address")
    const signer = recoverOwner(tx.txID, tx.signature?.[0] ?? "")
    if (signer === undefined || signer !== owner)
      throw new Rejection("SIGERROR", "validate signature error: the signature does not recover to the owner")
    if (this.findTransaction(tx.txID) !== undefined) throw new Rejection("DUP_TRANSACTION_ERROR", "dup transaction")
    const headTime = Math.max(this.head.timestamp, now)
    if (tx.raw_data.expiration <= headTime || tx.raw_data.expiration > headTime + MAX_EXPIRATION_MS) {
      throw new Rejection("TRANSACTION_EXPIRATION_ERROR", "transaction expired")
    }
    const refOk = this.blocks.some(
      (b) =>
        (b.number & 0xffff).toString(16).padStart(4, "0") === tx.raw_data.ref_block_bytes &&
        b.blockID.slice(16, 32) === tx.raw_data.ref_block_hash
    )
    if (!refOk) throw new Rejection("TAPOS_ERROR", "the reference block is not on this chain")
    const state = this.headState
    const balance = state.trx.get(owner)
    if (balance === undefined) throw new Rejection("CONTRACT_VALIDATE_ERROR", "the owner account does not exist")
    if (contract.type === "TransferContract") {
      const to = stringField(contract.parameter.value, "to_address")
      const amount = bigField(contract.parameter.value, "amount")
      if (amount <= 0n) throw new Rejection("CONTRACT_VALIDATE_ERROR", "amount must be greater than 0")
      if (to === owner) throw new Rejection("CONTRACT_VALIDATE_ERROR", "cannot transfer TRX to yourself")
      if (balance < amount + this.bandwidthFee(tx, owner, state) + (state.trx.has(to) ? 0n : NEW_ACCOUNT_FEE)) {
        throw new Rejection("CONTRACT_VALIDATE_ERROR", "balance is not sufficient")
      }
    } else if (contract.type === "TriggerSmartContract") {
      const target = stringField(contract.parameter.value, "contract_address")
      if (!this.tokenContracts.has(target) && target !== FORWARDER_CONTRACT) {
        throw new Rejection("CONTRACT_VALIDATE_ERROR", "no contract at that address on the devnet")
      }
      if (bigField(contract.parameter.value, "call_value") > balance)
        throw new Rejection("CONTRACT_VALIDATE_ERROR", "callValue is more than the balance")
    } else {
      throw new Rejection("CONTRACT_VALIDATE_ERROR", `${contract.type} is not supported by the devnet`)
    }
  }

  private bandwidthFee(tx: TronTransaction, owner: string, state: Balances): bigint {
    const bytes = tx.raw_data_hex.length / 2 + 65 + 64
    const used = state.freeBandwidthUsed.get(owner) ?? 0
    return used + bytes <= FREE_BANDWIDTH_BYTES ? 0n : BigInt(bytes) * SUN_PER_BANDWIDTH_BYTE
  }

  /** Executes one transaction against `state`; undefined when it can no longer apply (then it is dropped). */
  private execute(tx: TronTransaction, state: Balances, blockTime: number): TxOutcome | undefined {
    if (tx.raw_data.expiration <= blockTime) return undefined
    const contract = tx.raw_data.contract[0]
    if (contract === undefined) return undefined
    const value = contract.parameter.value
    const owner = stringField(value, "owner_address")
    const balance = state.trx.get(owner) ?? 0n
    const bandwidth = this.bandwidthFee(tx, owner, state)
    const bytes = tx.raw_data_hex.length / 2 + 65 + 64
    if (bandwidth === 0n) state.freeBandwidthUsed.set(owner, (state.freeBandwidthUsed.get(owner) ?? 0) + bytes)
    if (contract.type === "TransferContract") {
      const to = stringField(value, "to_address")
      const amount = bigField(value, "amount")
      const fee = bandwidth + (state.trx.has(to) ? 0n : NEW_ACCOUNT_FEE)
      if (balance < amount + fee) return undefined
      state.trx.set(owner, balance - amount - fee)
      state.trx.set(to, (state.trx.get(to) ?? 0n) + amount)
      return { tx, contractRet: "SUCCESS", fee, log: [] }
    }
    const contractAddress = stringField(value, "contract_address")
    const data = stringField(value, "data")
    const feeLimit = BigInt(tx.raw_data.fee_limit ?? 0)
    if (contractAddress === FORWARDER_CONTRACT)
      return this.forward(tx, state, owner, balance, bandwidth, feeLimit, bigField(value, "call_value"), data)
    const holders = state.tokens.get(contractAddress) ?? new Map<string, bigint>()
    const burn = (fee: bigint) => {
      const paid = fee < balance ? fee : balance
      state.trx.set(owner, balance - paid)
      return paid
    }
    if (!data.startsWith("a9059cbb") || data.length !== 8 + 128) {
      return {
        tx,
        contractRet: "REVERT",
        fee: burn(bandwidth + ENERGY_REVERT * SUN_PER_ENERGY),
        log: [],
        contractAddress
      }
    }
    const to = `41${data.slice(8 + 24, 8 + 64)}`
    const amount = BigInt(`0x${data.slice(8 + 64)}`)
    const energy = (holders.get(to) ?? 0n) > 0n ? ENERGY_TRANSFER_EXISTING_HOLDER : ENERGY_TRANSFER_NEW_HOLDER
    const energyFee = energy * SUN_PER_ENERGY
    if (energyFee > feeLimit || bandwidth + energyFee > balance) {
      return {
        tx,
        contractRet: "OUT_OF_ENERGY",
        fee: burn(bandwidth + (feeLimit < balance ? feeLimit : balance)),
        log: [],
        contractAddress
      }
    }
    const from = holders.get(owner) ?? 0n
    if (from < amount || this.blacklisted.has(owner)) {
      return {
        tx,
        contractRet: "REVERT",
        fee: burn(bandwidth + ENERGY_REVERT * SUN_PER_ENERGY),
        log: [],
        contractAddress
      }
    }
    holders.set(owner, from - amount)
    holders.set(to, (holders.get(to) ?? 0n) + amount)
    state.tokens.set(contractAddress, holders)
    if (!state.trx.has(to)) state.trx.set(to, 0n)
    const fee = burn(bandwidth + energyFee)
    return {
      tx,
      contractRet: "SUCCESS",
      fee,
      contractAddress,
      log: [
        {
          address: contractAddress.slice(2),
          topics: [TRANSFER_TOPIC, pad32(owner.slice(2)), pad32(to.slice(2))],
          data: pad32(amount.toString(16))
        }
      ]
    }
  }

  /** The forwarder's execution: the caller pays the call value and the energy; every leg is recorded. */
  private forward(
    tx: TronTransaction,
    state: Balances,
    owner: string,
    balance: bigint,
    bandwidth: bigint,
    feeLimit: bigint,
    callValue: bigint,
    data: string
  ): TxOutcome {
    const contractAddress = FORWARDER_CONTRACT
    const method = data.slice(0, 8)
    const args = Array.from(
      { length: (data.length - 8) / 64 },
      (_, i) => `41${data.slice(8 + i * 64 + 24, 8 + (i + 1) * 64)}`
    )
    const arity = method === FORWARDER_METHODS.split3 ? 3 : method === FORWARDER_METHODS.split ? 2 : 1
    const known = Object.values(FORWARDER_METHODS).some((m) => m === method)
    const burn = (fee: bigint, kept: bigint) => {
      const paid = fee < kept ? fee : kept
      state.trx.set(owner, kept - paid)
      return paid
    }
    if (!known || args.length !== arity || (data.length - 8) % 64 !== 0) {
      return {
        tx,
        contractRet: "REVERT",
        fee: burn(bandwidth + ENERGY_REVERT * SUN_PER_ENERGY, balance),
        log: [],
        contractAddress
      }
    }
    const rejected = method === FORWARDER_METHODS.tryForward
    const legs: Array<InternalLeg> = rejected
      ? // the contract calls itself with the value, that call sends it on and reverts: both legs rejected
        [
          { caller: contractAddress, to: contractAddress, callValue, rejected: true },
          { caller: contractAddress, to: args[0] ?? "", callValue, rejected: true }
        ]
      : args.map((to, i) => ({
          caller: contractAddress,
          to,
          callValue:
            i === args.length - 1
              ? callValue - (callValue / BigInt(args.length)) * BigInt(args.length - 1)
              : callValue / BigInt(args.length),
          rejected: false
        }))
    const energyFee = (ENERGY_CALL_BASE + ENERGY_INTERNAL_LEG * BigInt(legs.length)) * SUN_PER_ENERGY
    if (energyFee > feeLimit || bandwidth + energyFee + callValue > balance) {
      return {
        tx,
        contractRet: "OUT_OF_ENERGY",
        fee: burn(bandwidth + (feeLimit < balance ? feeLimit : balance), balance),
        log: [],
        contractAddress
      }
    }
    state.trx.set(owner, balance - callValue)
    const fee = burn(bandwidth + energyFee, balance - callValue)
    // what a rejected leg did not move stays with the contract
    state.trx.set(contractAddress, (state.trx.get(contractAddress) ?? 0n) + (rejected ? callValue : 0n))
    for (const leg of legs) {
      if (!leg.rejected) state.trx.set(leg.to, (state.trx.get(leg.to) ?? 0n) + leg.callValue)
    }
    return { tx, contractRet: "SUCCESS", fee, log: [], contractAddress, internal: legs }
  }

  /** Produces the next block from the pending transactions. */
  produce(timestamp: number): LedgerBlock {
    const block = this.mine(timestamp)
    this.journal?.({ op: "block", time: block.timestamp, id: block.blockID })
    return block
  }

  private mine(timestamp: number): LedgerBlock {
    const parent = this.head
    const state = copy(this.headState)
    const time = Math.max(timestamp, parent.timestamp + 1)
    const outcomes: Array<TxOutcome> = []
    for (const tx of this.pending) {
      const outcome = this.execute(tx, state, time)
      if (outcome !== undefined) outcomes.push(outcome)
    }
    this.pending = []
    const number = parent.number + 1
    const header = JSON.stringify({
      parent: parent.blockID,
      number,
      time,
      txs: outcomes.map((o) => o.tx.txID),
      branch: this.branch
    })
    const block = { number, blockID: blockId(number, header), parentHash: parent.blockID, timestamp: time, outcomes }
    this.blocks.push(block)
    this.states.set(number, state)
    this.states.delete(number - this.solidLag - 2)
    return block
  }

  /**
   * Replaces the last `depth` blocks (all unsolidified) with a new branch of as many blocks. With
   * `keepTransactions` the dropped transactions are mined again on the new branch; without, they vanish.
   */
  reorg(depth: number, keepTransactions: boolean, now: number) {
    this.replaceTail(depth, keepTransactions, now)
    this.journal?.({ op: "reorg", depth, keep: keepTransactions, now })
  }

  private replaceTail(depth: number, keepTransactions: boolean, now: number) {
    if (depth < 1 || depth > this.solidLag || depth >= this.blocks.length) {
      throw new Rejection("OTHER_ERROR", `a reorg must replace 1 to ${this.solidLag} unsolidified blocks`)
    }
    const dropped = this.blocks.splice(this.blocks.length - depth, depth)
    for (const block of dropped) this.states.delete(block.number)
    this.branch += 1
    const replay = keepTransactions ? dropped.flatMap((b) => b.outcomes.map((o) => o.tx)) : []
    const kept = this.pending
    this.pending = []
    for (let i = 0; i < depth; i++) {
      if (i === 0) this.pending = replay
      this.mine(Math.max(now, (dropped[i]?.timestamp ?? now) + 1))
    }
    this.pending = kept
  }
}
