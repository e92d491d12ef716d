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
// mainnet's figures (docs/internals/devnets.md names the source of each)
const SUN_PER_BANDWIDTH_BYTE = 1_000n
const FREE_BANDWIDTH_BYTES = 600
/** Burned for the bandwidth of a transaction that creates an account, when staked bandwidth does not cover it. */
const CREATE_ACCOUNT_FEE = 100_000n
/** The system contract's fee for creating an account (a TRX transfer to a never-activated address). */
const NEW_ACCOUNT_FEE = 1_000_000n
const SUN_PER_ENERGY = 100n
const ENERGY_TRANSFER_EXISTING_HOLDER = 14_650n
const ENERGY_TRANSFER_NEW_HOLDER = 29_650n
const ENERGY_REVERT = 2_000n
/** USDT's dynamic energy factor (per 10,000): its calls cost base × (1 + factor / 10,000). */
export const USDT_ENERGY_FACTOR = 34_000n
const ENERGY_FACTOR_PRECISION = 10_000n
const TOTAL_ENERGY_LIMIT = 180_000_000_000
const TOTAL_NET_LIMIT = 43_200_000_000
/** The rest of mainnet's stake (TRX) in each resource's total weight, so a staked TRX yields what it yields there. */
export const NETWORK_ENERGY_WEIGHT = 18_971_780_957
export const NETWORK_NET_WEIGHT = 26_856_723_239
const TRX = 1_000_000n
const DAY_MS = 24 * 3600 * 1000
/** java-tron counts a lock period in blocks of 3 s, whatever the devnet's block time. */
const LOCK_BLOCK_MS = 3_000
const DEFAULT_LOCK_PERIOD = 86_400
const MAX_LOCK_PERIOD = 10_512_000
const UNFREEZE_MAX_TIMES = 32
/** A maintenance period: the dynamic energy model's cycle. */
const MAINTENANCE_MS = 6 * 3600 * 1000
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

/** What java-tron's receipt splits the fee into (`gettransactioninfobyid`'s `receipt`). */
export interface Receipt {
  /** Bandwidth bytes taken from the stake or the free allowance, or the TRX burned for them. */
  readonly netUsage: number
  readonly netFee: bigint
  /** Energy taken from the sender's stake (its own and delegated to it), the TRX burned for the rest. */
  readonly energyUsage: number
  readonly energyFee: bigint
  readonly energyTotal: number
  readonly energyPenalty: number
  /** TRX an unfreeze or a withdrawal returned to the balance. */
  readonly withdrawn?: bigint
}

export interface TxOutcome {
  readonly tx: TronTransaction
  readonly contractRet: "SUCCESS" | "REVERT" | "OUT_OF_ENERGY"
  /** Everything burned: bandwidth, energy and an account's creation fee. */
  readonly fee: bigint
  readonly receipt: Receipt
  readonly log: ReadonlyArray<{ address: string; topics: ReadonlyArray<string>; data: string }>
  readonly contractAddress?: string
  readonly internal?: ReadonlyArray<InternalLeg>
}

export type Resource = "ENERGY" | "BANDWIDTH"
const RESOURCES: ReadonlyArray<Resource> = ["BANDWIDTH", "ENERGY"]
type PerResource<A> = { readonly [R in Resource]: A }

/** A resource used up, recovering linearly over 24 h from `at` (a block time). */
interface Usage {
  readonly used: number
  readonly at: number
}

/** An account's Stake 2.0 state, as java-tron keeps it (`frozenV2`, `unfrozenV2`, delegated, acquired). */
export interface Stake {
  readonly frozen: PerResource<bigint>
  readonly delegated: PerResource<bigint>
  readonly acquired: PerResource<bigint>
  readonly unfrozen: ReadonlyArray<{
    readonly resource: Resource
    readonly amount: bigint
    readonly expireTime: number
  }>
  readonly energy: Usage
  readonly net: Usage
  readonly freeNet: Usage
}

/** One delegation record: from → to, locked or not (java-tron keeps the two apart). */
export interface Delegation {
  readonly from: string
  readonly to: string
  readonly lock: boolean
  readonly amount: PerResource<bigint>
  readonly expireTime: PerResource<number>
}

interface Balances {
  readonly trx: Map<string, bigint>
  readonly tokens: Map<string, Map<string, bigint>>
  readonly stakes: Map<string, Stake>
  readonly delegations: Map<string, Delegation>
}

const NO_USAGE: Usage = { used: 0, at: 0 }
const EMPTY_STAKE: Stake = {
  frozen: { BANDWIDTH: 0n, ENERGY: 0n },
  delegated: { BANDWIDTH: 0n, ENERGY: 0n },
  acquired: { BANDWIDTH: 0n, ENERGY: 0n },
  unfrozen: [],
  energy: NO_USAGE,
  net: NO_USAGE,
  freeNet: NO_USAGE
}

/** What is left of `usage` at `now`: java-tron's linear recovery over its 24 h window. */
const recovered = (usage: Usage, now: number) =>
  now - usage.at >= DAY_MS ? 0 : Math.round((usage.used * (DAY_MS - Math.max(0, now - usage.at))) / DAY_MS)
const increased = (usage: Usage, amount: number, now: number): Usage => ({
  used: recovered(usage, now) + amount,
  at: now
})

const delegationKey = (from: string, to: string, lock: boolean) => `${from}|${to}|${lock ? "lock" : "free"}`
const resourceOf = (value: Record<string, unknown>): Resource | undefined => {
  const r = value.resource ?? "BANDWIDTH"
  return r === "BANDWIDTH" || r === 0 ? "BANDWIDTH" : r === "ENERGY" || r === 1 ? "ENERGY" : undefined
}
const with_ = <A>(per: PerResource<A>, resource: Resource, value: A): PerResource<A> => ({ ...per, [resource]: value })
const min = (a: bigint, b: bigint) => (a < b ? a : b)
const max = (a: bigint, b: bigint) => (a > b ? a : b)
const STAKE_CONTRACTS = new Set([
  "FreezeBalanceV2Contract",
  "UnfreezeBalanceV2Contract",
  "WithdrawExpireUnfreezeContract",
  "DelegateResourceContract",
  "UnDelegateResourceContract"
])

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

// stakes and delegations are immutable records: a shallow copy of their maps is a copy
const copy = (b: Balances): Balances => ({
  trx: new Map(b.trx),
  tokens: new Map([...b.tokens].map(([k, v]) => [k, new Map(v)])),
  stakes: new Map(b.stakes),
  delegations: new Map(b.delegations)
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

/** The bytes java-tron bills: the signed transaction without its result, plus 64 reserved for the result. */
const txBytes = (tx: TronTransaction) => tx.raw_data_hex.length / 2 + 65 + 64

const lockPeriodOf = (value: Record<string, unknown>) => {
  const period = Number(bigField(value, "lock_period"))
  return period === 0 ? DEFAULT_LOCK_PERIOD : period
}

/** What can be undelegated now: the unlocked record, and the locked one once its lock has passed. */
const undelegatable = (free: Delegation | undefined, locked: Delegation | undefined, resource: Resource, now: number) =>
  (free?.amount[resource] ?? 0n) +
  (locked !== undefined && locked.expireTime[resource] < now ? locked.amount[resource] : 0n)

interface EnergyRun {
  readonly ok: boolean
  readonly energyUsage: number
  readonly energyFee: bigint
  readonly energyTotal: number
  readonly energyPenalty: number
}
const energyReceipt = ({ energyUsage, energyFee, energyTotal, energyPenalty }: EnergyRun) => ({
  energyUsage,
  energyFee,
  energyTotal,
  energyPenalty
})

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
    genesisSalt = "",
    /** How long unfrozen TRX waits before it can be withdrawn (mainnet: 14 days). */
    readonly unfreezeDelayMs = 14 * DAY_MS
  ) {
    const empty: Balances = {
      trx: new Map(),
      tokens: new Map([...tokenContracts.keys()].map((c) => [c, new Map()])),
      stakes: new Map(),
      delegations: new Map()
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

  /**
   * Energy a TRC20 `transfer` to `to41` would use now, the contract's dynamic factor included: `total` is
   * java-tron's `energy_used`, `penalty` its `energy_penalty` (what `triggerconstantcontract` reports).
   */
  transferEnergy(contract41: string, to41: string): { readonly total: bigint; readonly penalty: bigint } {
    const base =
      (this.headState.tokens.get(contract41)?.get(to41) ?? 0n) > 0n
        ? ENERGY_TRANSFER_EXISTING_HOLDER
        : ENERGY_TRANSFER_NEW_HOLDER
    const penalty = (base * this.energyFactor(contract41)) / ENERGY_FACTOR_PRECISION
    return { total: base + penalty, penalty }
  }

  /**
   * A contract's dynamic energy factor. The devnet's token stays at USDT's mainnet factor: its own traffic is
   * far below the threshold, so java-tron's cycle rule would bring it down to 0 and the devnet would undercharge.
   */
  energyFactor(contract41: string): bigint {
    return this.tokenContracts.has(contract41) ? USDT_ENERGY_FACTOR : 0n
  }

  /** java-tron's `contract_state`: the base energy the contract used in this maintenance cycle, its factor. */
  contractState(contract41: string) {
    const genesis = this.blocks[0]?.timestamp ?? 0
    const cycle = Math.floor((this.head.timestamp - genesis) / MAINTENANCE_MS)
    const cycleStart = genesis + cycle * MAINTENANCE_MS
    let used = 0
    for (const block of this.blocks) {
      if (block.timestamp < cycleStart) continue
      for (const o of block.outcomes)
        if (o.contractAddress === contract41) used += o.receipt.energyTotal - o.receipt.energyPenalty
    }
    return { energy_usage: used, energy_factor: Number(this.energyFactor(contract41)), update_cycle: cycle + 1 }
  }

  /** The prices this devnet charges, as `wallet/getchainparameters` names them. */
  static readonly chainParameters = [
    { key: "getTransactionFee", value: Number(SUN_PER_BANDWIDTH_BYTE) },
    { key: "getEnergyFee", value: Number(SUN_PER_ENERGY) },
    { key: "getCreateNewAccountFeeInSystemContract", value: Number(NEW_ACCOUNT_FEE) },
    { key: "getCreateAccountFee", value: Number(CREATE_ACCOUNT_FEE) },
    { key: "getFreeNetLimit", value: FREE_BANDWIDTH_BYTES },
    { key: "getTotalEnergyLimit", value: TOTAL_ENERGY_LIMIT },
    { key: "getUnfreezeDelayDays", value: 14 },
    { key: "getMaxDelegateLockPeriod", value: MAX_LOCK_PERIOD }
  ]

  stake(address41: string, atBlock?: number): Stake {
    return this.stateAt(atBlock).stakes.get(address41) ?? EMPTY_STAKE
  }

  /** Delegation records from `from41` (to `to41` when given) or to `to41`, unlocked before locked. */
  delegations(filter: { readonly from?: string; readonly to?: string }, atBlock?: number): ReadonlyArray<Delegation> {
    return [...this.stateAt(atBlock).delegations.values()]
      .filter(
        (d) => (filter.from === undefined || d.from === filter.from) && (filter.to === undefined || d.to === filter.to)
      )
      .sort((a, b) => Number(a.lock) - Number(b.lock))
  }

  /** What `getaccountresource` reports, at the head block's time (replay gives the same answer). */
  resources(address41: string, atBlock?: number) {
    const state = this.stateAt(atBlock)
    const now = (atBlock === undefined ? this.head : (this.block(atBlock) ?? this.head)).timestamp
    const stake = this.stakeOf(state, address41)
    const frozen = RESOURCES.reduce((sum, r) => sum + stake.frozen[r] + stake.delegated[r], 0n)
    return {
      freeNetUsed: recovered(stake.freeNet, now),
      freeNetLimit: FREE_BANDWIDTH_BYTES,
      NetUsed: recovered(stake.net, now),
      NetLimit: this.limit(state, stake, "BANDWIDTH"),
      TotalNetLimit: TOTAL_NET_LIMIT,
      TotalNetWeight: this.totalWeight(state, "BANDWIDTH"),
      tronPowerLimit: Number(frozen / TRX),
      EnergyUsed: recovered(stake.energy, now),
      EnergyLimit: this.limit(state, stake, "ENERGY"),
      TotalEnergyLimit: TOTAL_ENERGY_LIMIT,
      TotalEnergyWeight: this.totalWeight(state, "ENERGY")
    }
  }

  /** `getcandelegatedmaxsize`: what of the stake is not backing used resources (0 under 1 TRX, as java-tron). */
  canDelegatedMaxSize(address41: string, resource: Resource, atBlock?: number): bigint {
    const now = (atBlock === undefined ? this.head : (this.block(atBlock) ?? this.head)).timestamp
    const size = this.canDelegate(this.stateAt(atBlock), address41, resource, now)
    return size < TRX ? 0n : size
  }

  private stakeOf(state: Balances, address41: string): Stake {
    return state.stakes.get(address41) ?? EMPTY_STAKE
  }

  /** A resource's total weight in TRX: the devnet's stakes plus the rest of mainnet's. */
  private totalWeight(state: Balances, resource: Resource): number {
    let staked = 0n
    for (const s of state.stakes.values()) staked += s.frozen[resource] + s.delegated[resource]
    return (resource === "ENERGY" ? NETWORK_ENERGY_WEIGHT : NETWORK_NET_WEIGHT) + Number(staked / TRX)
  }

  /** A day's energy or bandwidth from the account's stake and what is delegated to it. */
  private limit(state: Balances, stake: Stake, resource: Resource): number {
    const staked = Number((stake.frozen[resource] + stake.acquired[resource]) / TRX)
    const total = resource === "ENERGY" ? TOTAL_ENERGY_LIMIT : TOTAL_NET_LIMIT
    return Math.floor(staked * (total / this.totalWeight(state, resource)))
  }

  private availableEnergy(state: Balances, owner: string, now: number): bigint {
    const stake = this.stakeOf(state, owner)
    return BigInt(Math.max(0, this.limit(state, stake, "ENERGY") - recovered(stake.energy, now)))
  }

  /** java-tron's available FreezeV2 balance: the stake less the TRX backing the used resource beyond what was lent. */
  private canDelegate(state: Balances, owner: string, resource: Resource, now: number): bigint {
    const stake = this.stakeOf(state, owner)
    const used = recovered(resource === "ENERGY" ? stake.energy : stake.net, now)
    const total = resource === "ENERGY" ? TOTAL_ENERGY_LIMIT : TOTAL_NET_LIMIT
    const usedSun = BigInt(Math.floor(used * 1e6 * (this.totalWeight(state, resource) / total)))
    return max(0n, stake.frozen[resource] - max(0n, usedSun - stake.acquired[resource]))
  }

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
    // resources are judged at the head block's time, as java-tron does: a replay judges them the same
    const time = this.head.timestamp
    const balance = state.trx.get(owner)
    if (balance === undefined) throw new Rejection("CONTRACT_VALIDATE_ERROR", "the owner account does not exist")
    if (contract.type === "TransferContract") {
      const to = stringField(contract.parameter.value, "to_address")
      const amount = bigField(contract.parameter.value, "amount")
      if (amount <= 0n) throw new Rejection("CONTRACT_VALIDATE_ERROR", "amount must be greater than 0")
      if (to === owner) throw new Rejection("CONTRACT_VALIDATE_ERROR", "cannot transfer TRX to yourself")
      const creates = !state.trx.has(to)
      const net = this.bandwidthPlan(state, owner, txBytes(tx), time, creates)
      if (balance < amount + net.netFee + (creates ? NEW_ACCOUNT_FEE : 0n)) {
        throw new Rejection("CONTRACT_VALIDATE_ERROR", "balance is not sufficient")
      }
    } else if (contract.type === "TriggerSmartContract") {
      const target = stringField(contract.parameter.value, "contract_address")
      if (!this.tokenContracts.has(target) && target !== FORWARDER_CONTRACT) {
        throw new Rejection("CONTRACT_VALIDATE_ERROR", "no contract at that address on the devnet")
      }
      if (bigField(contract.parameter.value, "call_value") > balance)
        throw new Rejection("CONTRACT_VALIDATE_ERROR", "callValue is more than the balance")
    } else if (STAKE_CONTRACTS.has(contract.type)) {
      const net = this.bandwidthPlan(state, owner, txBytes(tx), time, false)
      this.checkStake(contract.type, contract.parameter.value, owner, state, time, net.netFee)
    } else {
      throw new Rejection("CONTRACT_VALIDATE_ERROR", `${contract.type} is not supported by the devnet`)
    }
  }

  /**
   * Where a transaction's bandwidth comes from, in java-tron's order: the stake, then the daily free bytes,
   * else burned. One that creates an account takes it from the stake or burns the creation fee instead.
   */
  private bandwidthPlan(state: Balances, owner: string, bytes: number, now: number, createsAccount: boolean) {
    const stake = this.stakeOf(state, owner)
    const burn = (netFee: bigint) => ({ source: "burn" as const, netUsage: 0, netFee })
    if (this.limit(state, stake, "BANDWIDTH") - recovered(stake.net, now) >= bytes)
      return { source: "stake" as const, netUsage: bytes, netFee: 0n }
    if (createsAccount) return burn(CREATE_ACCOUNT_FEE)
    if (FREE_BANDWIDTH_BYTES - recovered(stake.freeNet, now) >= bytes)
      return { source: "free" as const, netUsage: bytes, netFee: 0n }
    return burn(BigInt(bytes) * SUN_PER_BANDWIDTH_BYTE)
  }

  private useBandwidth(state: Balances, owner: string, plan: ReturnType<TronLedger["bandwidthPlan"]>, now: number) {
    if (plan.source === "burn") return
    const stake = this.stakeOf(state, owner)
    state.stakes.set(
      owner,
      plan.source === "stake"
        ? { ...stake, net: increased(stake.net, plan.netUsage, now) }
        : { ...stake, freeNet: increased(stake.freeNet, plan.netUsage, now) }
    )
  }

  /**
   * Runs `base` energy with the contract's factor: the sender's energy first, the rest burned, within
   * java-tron's limit min(energy left + spendable / price, fee_limit / price); past it, the call runs out
   * of energy having used the whole limit.
   */
  private runEnergy(
    state: Balances,
    owner: string,
    base: bigint,
    factor: bigint,
    feeLimit: bigint,
    spendable: bigint,
    now: number
  ) {
    const penalty = (base * factor) / ENERGY_FACTOR_PRECISION
    const total = base + penalty
    const available = this.availableEnergy(state, owner, now)
    const limit = min(available + max(0n, spendable) / SUN_PER_ENERGY, feeLimit / SUN_PER_ENERGY)
    const ok = total <= limit
    const used = ok ? total : limit
    const fromStake = min(available, used)
    if (fromStake > 0n) {
      const stake = this.stakeOf(state, owner)
      state.stakes.set(owner, { ...stake, energy: increased(stake.energy, Number(fromStake), now) })
    }
    return {
      ok,
      energyUsage: Number(fromStake),
      energyFee: (used - fromStake) * SUN_PER_ENERGY,
      energyTotal: Number(used),
      energyPenalty: Number(total === 0n ? 0n : (used * penalty) / total)
    }
  }

  /** java-tron's checks of the Stake 2.0 contracts, with its messages; throws a Rejection. */
  private checkStake(
    type: string,
    value: Record<string, unknown>,
    owner: string,
    state: Balances,
    now: number,
    netFee: bigint
  ) {
    const fail = (message: string) => new Rejection("CONTRACT_VALIDATE_ERROR", message)
    const balance = state.trx.get(owner) ?? 0n
    const stake = this.stakeOf(state, owner)
    const resource = resourceOf(value)
    if (balance < netFee) throw fail("balance is not sufficient")
    switch (type) {
      case "FreezeBalanceV2Contract": {
        const amount = bigField(value, "frozen_balance")
        if (amount <= 0n) throw fail("frozenBalance must be positive")
        if (amount < TRX) throw fail("frozenBalance must be greater than or equal to 1 TRX")
        if (amount > balance) throw fail("frozenBalance must be less than or equal to accountBalance")
        if (resource === undefined) throw fail("ResourceCode error, valid ResourceCode[BANDWIDTH、ENERGY]")
        if (amount + netFee > balance) throw fail("balance is not sufficient")
        return
      }
      case "UnfreezeBalanceV2Contract": {
        if (resource === undefined) throw fail("ResourceCode error.valid ResourceCode[BANDWIDTH、Energy]")
        if (stake.frozen[resource] === 0n)
          throw fail(resource === "ENERGY" ? "no frozenBalance(Energy)" : "no frozenBalance(BANDWIDTH)")
        const amount = bigField(value, "unfreeze_balance")
        if (amount <= 0n || amount > stake.frozen[resource])
          throw fail(`Invalid unfreeze_balance, [${amount}] is error`)
        if (stake.unfrozen.filter((u) => u.expireTime > now).length >= UNFREEZE_MAX_TIMES)
          throw fail("Invalid unfreeze operation, unfreezing times is over limit")
        return
      }
      case "WithdrawExpireUnfreezeContract":
        if (!stake.unfrozen.some((u) => u.expireTime <= now)) throw fail("no unFreeze balance to withdraw ")
        return
      case "DelegateResourceContract": {
        const amount = bigField(value, "balance")
        if (amount < TRX) throw fail("delegateBalance must be greater than or equal to 1 TRX")
        if (resource === undefined) throw fail("ResourceCode error, valid ResourceCode[BANDWIDTH、ENERGY]")
        if (this.canDelegate(state, owner, resource, now) < amount) {
          const name = resource === "ENERGY" ? "FreezeEnergyV2" : "FreezeBandwidthV2"
          throw fail(`delegateBalance must be less than or equal to available ${name} balance`)
        }
        const to = stringField(value, "receiver_address")
        if (!/^41[0-9a-f]{40}$/.test(to)) throw fail("Invalid receiverAddress")
        if (to === owner) throw fail("receiverAddress must not be the same as ownerAddress")
        if (!state.trx.has(to)) throw fail(`Account[${to}] not exists`)
        if (value.lock === true) {
          const period = lockPeriodOf(value)
          if (period < 0 || period > MAX_LOCK_PERIOD)
            throw fail(
              `The lock period of delegate resource cannot be less than 0 and cannot exceed ${MAX_LOCK_PERIOD}!`
            )
          const locked = state.delegations.get(delegationKey(owner, to, true))
          const remain = locked === undefined ? 0 : locked.expireTime[resource] - now
          if (period * LOCK_BLOCK_MS < remain)
            throw fail(
              `The lock period for ${resource} this time cannot be less than the remaining time[${remain}ms] of the last lock period for ${resource}!`
            )
        }
        if (this.tokenContracts.has(to) || to === FORWARDER_CONTRACT)
          throw fail("Do not allow delegate resources to contract addresses")
        return
      }
      case "UnDelegateResourceContract": {
        const to = stringField(value, "receiver_address")
        if (!/^41[0-9a-f]{40}$/.test(to)) throw fail("Invalid receiverAddress")
        if (to === owner) throw fail("receiverAddress must not be the same as ownerAddress")
        const free = state.delegations.get(delegationKey(owner, to, false))
        const locked = state.delegations.get(delegationKey(owner, to, true))
        if (free === undefined && locked === undefined) throw fail("delegated Resource does not exist")
        const amount = bigField(value, "balance")
        if (amount <= 0n) throw fail("unDelegateBalance must be more than 0 TRX")
        if (resource === undefined) throw fail("ResourceCode error.valid ResourceCode[BANDWIDTH、Energy]")
        const unlocked = undelegatable(free, locked, resource, now)
        if (unlocked < amount)
          throw fail(
            resource === "ENERGY"
              ? `insufficient delegateFrozenBalance(Energy), request=${amount}, unlock_balance=${unlocked}`
              : `insufficient delegatedFrozenBalance(BANDWIDTH), request=${amount}, unlock_balance=${unlocked}`
          )
        return
      }
    }
  }

  /** Executes a checked Stake 2.0 contract; returns the TRX it gave back to the balance. */
  private applyStake(
    type: string,
    value: Record<string, unknown>,
    owner: string,
    state: Balances,
    now: number
  ): bigint {
    const stake = this.stakeOf(state, owner)
    const resource = resourceOf(value) ?? "BANDWIDTH"
    const balance = state.trx.get(owner) ?? 0n
    const set = (address: string, update: (s: Stake) => Stake) =>
      state.stakes.set(address, update(this.stakeOf(state, address)))
    // java-tron withdraws what has expired when it unfreezes, as a withdrawal would
    const expired = stake.unfrozen.filter((u) => u.expireTime <= now).reduce((sum, u) => sum + u.amount, 0n)
    switch (type) {
      case "FreezeBalanceV2Contract": {
        const amount = bigField(value, "frozen_balance")
        state.trx.set(owner, balance - amount)
        set(owner, (s) => ({ ...s, frozen: with_(s.frozen, resource, s.frozen[resource] + amount) }))
        return 0n
      }
      case "UnfreezeBalanceV2Contract": {
        const amount = bigField(value, "unfreeze_balance")
        state.trx.set(owner, balance + expired)
        set(owner, (s) => ({
          ...s,
          frozen: with_(s.frozen, resource, s.frozen[resource] - amount),
          unfrozen: [
            ...s.unfrozen.filter((u) => u.expireTime > now),
            { resource, amount, expireTime: now + this.unfreezeDelayMs }
          ]
        }))
        return expired
      }
      case "WithdrawExpireUnfreezeContract":
        state.trx.set(owner, balance + expired)
        set(owner, (s) => ({ ...s, unfrozen: s.unfrozen.filter((u) => u.expireTime > now) }))
        return expired
      case "DelegateResourceContract": {
        const amount = bigField(value, "balance")
        const to = stringField(value, "receiver_address")
        const lock = value.lock === true
        set(owner, (s) => ({
          ...s,
          frozen: with_(s.frozen, resource, s.frozen[resource] - amount),
          delegated: with_(s.delegated, resource, s.delegated[resource] + amount)
        }))
        set(to, (s) => ({ ...s, acquired: with_(s.acquired, resource, s.acquired[resource] + amount) }))
        const key = delegationKey(owner, to, lock)
        const record = state.delegations.get(key) ?? {
          from: owner,
          to,
          lock,
          amount: { BANDWIDTH: 0n, ENERGY: 0n },
          expireTime: { BANDWIDTH: 0, ENERGY: 0 }
        }
        state.delegations.set(key, {
          ...record,
          amount: with_(record.amount, resource, record.amount[resource] + amount),
          expireTime: lock
            ? with_(record.expireTime, resource, now + lockPeriodOf(value) * LOCK_BLOCK_MS)
            : record.expireTime
        })
        return 0n
      }
      case "UnDelegateResourceContract": {
        const amount = bigField(value, "balance")
        const to = stringField(value, "receiver_address")
        // the unlocked record first, then an expired lock
        let left = amount
        for (const lock of [false, true]) {
          const key = delegationKey(owner, to, lock)
          const record = state.delegations.get(key)
          if (record === undefined || left === 0n || (lock && record.expireTime[resource] >= now)) continue
          const taken = min(left, record.amount[resource])
          left -= taken
          const next = { ...record, amount: with_(record.amount, resource, record.amount[resource] - taken) }
          if (RESOURCES.every((r) => next.amount[r] === 0n)) state.delegations.delete(key)
          else state.delegations.set(key, next)
        }
        // java-tron moves the receiver's use of the resource back with the stake, in the share the stake taken
        // back had of all the receiver's (own and lent), at most what that stake gives a day: a borrower's
        // use is its lender's once the lending ends (UnDelegateResourceActuator's transferUsage, in doubles
        // truncated as it does; a receiver holding less than is taken back — a contract destroyed and made
        // again — keeps its use, and an owner given none is left as it was)
        const receiver = this.stakeOf(state, to)
        const usageKey = resource === "ENERGY" ? "energy" : "net"
        const receiverUsed = recovered(receiver[usageKey], now)
        const all = receiver.frozen[resource] + receiver.acquired[resource]
        const total = resource === "ENERGY" ? TOTAL_ENERGY_LIMIT : TOTAL_NET_LIMIT
        const maxUsage = Math.floor((Number(amount) / Number(TRX)) * (total / this.totalWeight(state, resource)))
        const transfer =
          receiver.acquired[resource] < amount
            ? 0
            : Math.min(maxUsage, Math.floor(receiverUsed * (Number(amount) / Number(all))))
        set(owner, (s) => ({
          ...s,
          frozen: with_(s.frozen, resource, s.frozen[resource] + amount),
          delegated: with_(s.delegated, resource, s.delegated[resource] - amount),
          ...(transfer > 0 ? { [usageKey]: increased(s[usageKey], transfer, now) } : {})
        }))
        set(to, (s) => ({
          ...s,
          acquired: with_(s.acquired, resource, s.acquired[resource] < amount ? 0n : s.acquired[resource] - amount),
          [usageKey]: { used: receiverUsed - transfer, at: now }
        }))
        return 0n
      }
    }
    return 0n
  }

  /** Executes one transaction against `state`; undefined when it can no longer apply (then it is dropped). */
  private execute(tx: TronTransaction, state: Balances, blockTime: number): TxOutcome | undefined {
    if (tx.raw_data.expiration <= blockTime) return undefined
    const contract = tx.raw_data.contract[0]
    if (contract === undefined) return undefined
    const value = contract.parameter.value
    const owner = stringField(value, "owner_address")
    const balance = state.trx.get(owner) ?? 0n
    const bytes = txBytes(tx)
    const noEnergy = { energyUsage: 0, energyFee: 0n, energyTotal: 0, energyPenalty: 0 }
    if (contract.type === "TransferContract") {
      const to = stringField(value, "to_address")
      const amount = bigField(value, "amount")
      const creates = !state.trx.has(to)
      const net = this.bandwidthPlan(state, owner, bytes, blockTime, creates)
      const fee = net.netFee + (creates ? NEW_ACCOUNT_FEE : 0n)
      if (balance < amount + fee) return undefined
      this.useBandwidth(state, owner, net, blockTime)
      state.trx.set(owner, balance - amount - fee)
      state.trx.set(to, (state.trx.get(to) ?? 0n) + amount)
      return { tx, contractRet: "SUCCESS", fee, receipt: { ...net, ...noEnergy }, log: [] }
    }
    if (STAKE_CONTRACTS.has(contract.type)) {
      const net = this.bandwidthPlan(state, owner, bytes, blockTime, false)
      try {
        this.checkStake(contract.type, value, owner, state, blockTime, net.netFee)
      } catch {
        return undefined
      }
      this.useBandwidth(state, owner, net, blockTime)
      state.trx.set(owner, balance - net.netFee)
      const withdrawn = this.applyStake(contract.type, value, owner, state, blockTime)
      const receipt = { ...net, ...noEnergy, ...(withdrawn > 0n ? { withdrawn } : {}) }
      return { tx, contractRet: "SUCCESS", fee: net.netFee, receipt, log: [] }
    }
    const net = this.bandwidthPlan(state, owner, bytes, blockTime, false)
    this.useBandwidth(state, owner, net, blockTime)
    const contractAddress = stringField(value, "contract_address")
    const data = stringField(value, "data")
    const feeLimit = BigInt(tx.raw_data.fee_limit ?? 0)
    const callValue = bigField(value, "call_value")
    const run = (base: bigint) =>
      this.runEnergy(
        state,
        owner,
        base,
        this.energyFactor(contractAddress),
        feeLimit,
        balance - net.netFee - callValue,
        blockTime
      )
    const burn = (energy: ReturnType<typeof run>, kept: bigint) => {
      const fee = net.netFee + energy.energyFee
      const paid = fee < kept ? fee : kept
      state.trx.set(owner, kept - paid)
      return paid
    }
    const failed = (contractRet: "REVERT" | "OUT_OF_ENERGY", energy: ReturnType<typeof run>): TxOutcome => ({
      tx,
      contractRet,
      fee: burn(energy, balance),
      receipt: { ...net, ...energyReceipt(energy) },
      log: [],
      contractAddress
    })
    if (contractAddress === FORWARDER_CONTRACT)
      return this.forward(tx, state, owner, balance, net, run, callValue, data)
    const holders = state.tokens.get(contractAddress) ?? new Map<string, bigint>()
    const revert = () => {
      const energy = run(ENERGY_REVERT)
      return failed(energy.ok ? "REVERT" : "OUT_OF_ENERGY", energy)
    }
    if (!data.startsWith("a9059cbb") || data.length !== 8 + 128) return revert()
    const to = `41${data.slice(8 + 24, 8 + 64)}`
    const amount = BigInt(`0x${data.slice(8 + 64)}`)
    const from = holders.get(owner) ?? 0n
    if (from < amount || this.blacklisted.has(owner)) return revert()
    const energy = run((holders.get(to) ?? 0n) > 0n ? ENERGY_TRANSFER_EXISTING_HOLDER : ENERGY_TRANSFER_NEW_HOLDER)
    if (!energy.ok) return failed("OUT_OF_ENERGY", energy)
    holders.set(owner, from - amount)
    holders.set(to, (holders.get(to) ?? 0n) + amount)
    // as on mainnet, tokens do not activate an account: only TRX sent to it does (it then pays its creation)
    state.tokens.set(contractAddress, holders)
    return {
      tx,
      contractRet: "SUCCESS",
      fee: burn(energy, balance),
      receipt: { ...net, ...energyReceipt(energy) },
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
    net: { readonly netUsage: number; readonly netFee: bigint },
    run: (base: bigint) => EnergyRun,
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
    const burn = (energy: EnergyRun, kept: bigint) => {
      const fee = net.netFee + energy.energyFee
      const paid = fee < kept ? fee : kept
      state.trx.set(owner, kept - paid)
      return paid
    }
    const outcome = (contractRet: TxOutcome["contractRet"], energy: EnergyRun, kept: bigint): TxOutcome => ({
      tx,
      contractRet,
      fee: burn(energy, kept),
      receipt: { ...net, ...energyReceipt(energy) },
      log: [],
      contractAddress
    })
    if (!known || args.length !== arity || (data.length - 8) % 64 !== 0) {
      const energy = run(ENERGY_REVERT)
      return outcome(energy.ok ? "REVERT" : "OUT_OF_ENERGY", energy, balance)
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
    const energy = run(ENERGY_CALL_BASE + ENERGY_INTERNAL_LEG * BigInt(legs.length))
    if (!energy.ok || callValue > balance - net.netFee) return outcome("OUT_OF_ENERGY", energy, balance)
    state.trx.set(owner, balance - callValue)
    const done = outcome("SUCCESS", energy, balance - callValue)
    // what a rejected leg did not move stays with the contract
    state.trx.set(contractAddress, (state.trx.get(contractAddress) ?? 0n) + (rejected ? callValue : 0n))
    for (const leg of legs) {
      if (!leg.rejected) state.trx.set(leg.to, (state.trx.get(leg.to) ?? 0n) + leg.callValue)
    }
    return { ...done, internal: legs }
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
