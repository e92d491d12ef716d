import {
  type Address,
  address,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  lamports,
  type Transaction
} from "@solana/kit"
import {
  createAssociatedTokenAccountIdempotentInstruction,
  createInitializeMint2Instruction,
  createMintToInstruction,
  getAssociatedTokenAddressSync,
  MINT_SIZE,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID
} from "@solana/spl-token"
import { Keypair, PublicKey, SystemProgram, Transaction as LegacyTransaction } from "@solana/web3.js"
import { base58 } from "@scure/base"
import { Schema } from "effect"
import { createHash } from "node:crypto"
import { LiteSVM } from "litesvm"

/**
 * The Solana devnet's chain over litesvm (a real Solana runtime with the System, SPL Token and Associated
 * Token Account programs): slots closed into blocks, processed / confirmed / finalized commitments lagging
 * behind, blockhashes valid for 150 slots, signatures verified, duplicates refused, preflight simulation,
 * and reorgs of unfinalized slots from per-slot snapshots. It knows nothing of JSON-RPC or HTTP.
 */

const FEE_PER_SIGNATURE = 5_000
// litesvm's TransactionErrorFieldless values (a const enum in its typings)
const SIGNATURE_FAILURE = 11
const ALREADY_PROCESSED = 6
export const BLOCKHASH_VALIDITY_SLOTS = 150
const SNAPSHOTS_KEPT = 64

export interface TokenHolding {
  readonly mint: string
  readonly owner: string
  readonly programId: string
  readonly amount: bigint
  readonly decimals: number
}

export interface RecordedTx {
  readonly signature: string
  readonly signatures: ReadonlyArray<string>
  readonly wire: Uint8Array
  readonly accountKeys: ReadonlyArray<{ pubkey: string; signer: boolean; writable: boolean; source: "transaction" }>
  readonly instructions: ReadonlyArray<{ programId: string; accounts: ReadonlyArray<string>; data: string }>
  readonly recentBlockhash: string
  readonly version: "legacy" | 0
  readonly err: unknown
  readonly fee: number
  readonly preBalances: ReadonlyArray<number>
  readonly postBalances: ReadonlyArray<number>
  readonly preTokenBalances: ReadonlyArray<{ accountIndex: number } & TokenHolding>
  readonly postTokenBalances: ReadonlyArray<{ accountIndex: number } & TokenHolding>
  readonly logs: ReadonlyArray<string>
}

interface SlotBlock {
  readonly slot: number
  readonly blockhash: string
  readonly previousBlockhash: string
  readonly parentSlot: number
  readonly blockTime: number
  readonly txs: ReadonlyArray<RecordedTx>
}

/** A refusal with its JSON-RPC error code: the chain throws it, solana-rpc.ts answers with it. */
// a thrown Error, not a tagged one: the simulator is synchronous code; solana-rpc.ts catches it into the JSON-RPC error
export class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** A real node's `data` for -32002 (preflight failed): the simulation's `err`, and its logs. */
    readonly data?: { readonly err: string; readonly logs: ReadonlyArray<string> }
  ) {
    super(message)
  }
}

/** Preflight failed, as a real node says it: code -32002 with the transaction error's name in `data.err`. */
const preflightFailed = (message: string, err: string) =>
  new RpcFailure(-32002, `Transaction simulation failed: ${message}`, { err, logs: [] })

const keypairFromLabel = (label: string) =>
  Keypair.fromSeed(createHash("sha256").update(`facet-devnet-solana-${label}`).digest())

export const SOLANA_DEVNET_CUSTOMER = keypairFromLabel("customer")
const AUTHORITY = keypairFromLabel("authority")
const USDT_MINT = keypairFromLabel("usdt-mint")

const readU64 = (data: Uint8Array, offset: number) => Buffer.from(data).readBigUInt64LE(offset)

/** What changes the chain, as its journal records it: replaying these in order rebuilds it. */
export const SolanaDevnetOp = Schema.Union(
  Schema.Struct({ op: Schema.Literal("airdrop"), address: Schema.String, lamports: Schema.BigInt }),
  Schema.Struct({ op: Schema.Literal("tx"), wire: Schema.Uint8ArrayFromBase64, skipPreflight: Schema.Boolean }),
  Schema.Struct({ op: Schema.Literal("slot"), now: Schema.Number, blockhash: Schema.String }),
  Schema.Struct({ op: Schema.Literal("reorg"), depth: Schema.Number, keep: Schema.Boolean, now: Schema.Number })
)
export type SolanaDevnetOp = typeof SolanaDevnetOp.Type

export class SolanaDevnetChain {
  private svm: LiteSVM
  private slot = 1
  private blockhash: string
  private readonly recentBlockhashes = new Map<string, number>()
  private open: Array<RecordedTx> = []
  private branch = 0
  readonly blocks = new Map<number, SlotBlock>()
  private readonly snapshots = new Map<number, Uint8Array>()
  readonly signatures = new Map<string, { slot: number; err: unknown }>()
  private journal: ((op: SolanaDevnetOp) => void) | undefined
  /** While replaying: whether a closed slot's state is worth a snapshot (one a later reorg or the end needs). */
  private keepSnapshot: (slot: number) => boolean = () => true
  /** This chain's own genesis hash (salted per devnet, so two devnets never share one). */
  readonly genesisHash: string

  constructor(
    readonly finalityLag: number,
    genesisSalt = ""
  ) {
    // with the native mint (wrapped SOL), as every cluster has it
    this.svm = new LiteSVM().withBlockhashCheck(false).withNativeMints()
    this.svm.warpToSlot(BigInt(this.slot))
    this.blockhash = this.nextBlockhash()
    this.recentBlockhashes.set(this.blockhash, this.slot)
    this.genesisHash = base58.encode(createHash("sha256").update(`facet-devnet-solana-genesis${genesisSalt}`).digest())
  }

  /** From now on every change is also handed to `record` (the devnet's journal). */
  recordTo(record: (op: SolanaDevnetOp) => void) {
    this.journal = record
  }

  /**
   * Applies operations recorded earlier, checking that every slot closes with the blockhash it had.
   * Snapshots (1.4 MB each) are taken only for the slots a later reorg or the chain's tail can need.
   */
  replay(ops: ReadonlyArray<SolanaDevnetOp>) {
    const needed = new Set<number>()
    const keepBefore = (open: number) => {
      for (let s = Math.max(0, open - 1 - SNAPSHOTS_KEPT); s < open; s++) needed.add(s)
    }
    let open = this.slot
    for (const op of ops) {
      if (op.op === "slot") open += 1
      if (op.op === "reorg") keepBefore(open)
    }
    keepBefore(open)
    this.keepSnapshot = (slot) => needed.has(slot)
    try {
      for (const op of ops) {
        switch (op.op) {
          case "airdrop":
            this.svm.airdrop(toAddress(op.address), lamports(op.lamports))
            break
          case "tx":
            this.execute(op.wire, op.skipPreflight)
            break
          case "slot": {
            const closed = this.close(op.now)
            if (closed.blockhash !== op.blockhash) {
              throw new RpcFailure(
                -32000,
                `replayed slot ${closed.slot} closed with blockhash ${closed.blockhash}, not ${op.blockhash}`
              )
            }
            break
          }
          case "reorg":
            this.replaceTail(op.depth, op.keep, op.now)
        }
      }
    } finally {
      this.keepSnapshot = () => true
    }
  }

  /** Our blockhash for the open slot: the runtime's, salted with the branch so a reorg yields new hashes. */
  private nextBlockhash() {
    return base58.encode(
      createHash("sha256").update(`${this.svm.latestBlockhash()}:${this.branch}:${this.slot}`).digest()
    )
  }

  get processed() {
    return this.slot
  }
  get confirmed() {
    return Math.max(0, this.slot - 1)
  }
  get finalized() {
    return Math.max(0, this.slot - this.finalityLag)
  }
  get latestBlockhash() {
    return this.blockhash
  }

  private finalView: { readonly slot: number; readonly svm: LiteSVM } | undefined

  /** The state reads see: the newest, or that of the finalized slot (from its snapshot). */
  stateAt(commitment: "processed" | "confirmed" | "finalized"): LiteSVM {
    if (commitment !== "finalized") return this.svm
    const slot = this.finalized
    if (this.finalView?.slot !== slot) {
      const snapshot = this.snapshots.get(slot)
      if (snapshot === undefined) throw new RpcFailure(-32004, `no finalized state for slot ${slot} yet`)
      this.finalView = { slot, svm: LiteSVM.fromBytes(snapshot) }
    }
    return this.finalView.svm
  }

  balance(address: string, svm: LiteSVM = this.svm): bigint {
    return svm.getBalance(toAddress(address)) ?? 0n
  }

  account(address: string, svm: LiteSVM = this.svm) {
    const account = svm.getAccount(toAddress(address))
    return account.exists ? account : undefined
  }

  tokenHolding(address: string, svm: LiteSVM = this.svm): TokenHolding | undefined {
    const account = this.account(address, svm)
    if (account === undefined) return undefined
    const programId = String(account.programAddress)
    if (
      (programId !== TOKEN_PROGRAM_ID.toBase58() && programId !== TOKEN_2022_PROGRAM_ID.toBase58()) ||
      account.data.length < 165
    )
      return undefined
    const mint = base58.encode(account.data.subarray(0, 32))
    const mintAccount = this.account(mint, svm)
    return {
      mint,
      owner: base58.encode(account.data.subarray(32, 64)),
      programId,
      amount: readU64(account.data, 64),
      decimals: mintAccount?.data[44] ?? 0
    }
  }

  airdrop(address: string, amount: bigint) {
    this.svm.airdrop(toAddress(address), lamports(amount))
    this.journal?.({ op: "airdrop", address, lamports: amount })
  }

  /** Validates, (pre)simulates and executes a wire transaction into the open slot; returns its signature. */
  submit(wire: Uint8Array, skipPreflight: boolean): string {
    const signature = this.execute(wire, skipPreflight)
    this.journal?.({ op: "tx", wire, skipPreflight })
    return signature
  }

  private execute(wire: Uint8Array, skipPreflight: boolean): string {
    let tx: Transaction
    let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]>
    try {
      tx = getTransactionDecoder().decode(wire)
      message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes)
    } catch {
      throw new RpcFailure(-32602, "failed to deserialize transaction")
    }
    if (!("instructions" in message)) throw new RpcFailure(-32602, "unsupported transaction version")
    const instructions = message.instructions
    const sigBytes = Object.values(tx.signatures)
    const signatures = sigBytes.map((s) => (s === null ? "" : base58.encode(s)))
    const signature = signatures[0] ?? ""
    if (this.signatures.has(signature) || this.open.some((t) => t.signature === signature)) {
      throw preflightFailed("This transaction has already been processed", "AlreadyProcessed")
    }
    const blockhash = String(message.lifetimeToken)
    const seenAt = this.recentBlockhashes.get(blockhash)
    if (seenAt === undefined || this.slot - seenAt > BLOCKHASH_VALIDITY_SLOTS) {
      throw preflightFailed("Blockhash not found", "BlockhashNotFound")
    }
    const keys = message.staticAccounts.map(String)
    const header = message.header
    const accountKeys = keys.map((pubkey, i) => ({
      pubkey,
      signer: i < header.numSignerAccounts,
      writable:
        i < header.numSignerAccounts
          ? i < header.numSignerAccounts - header.numReadonlySignerAccounts
          : i < keys.length - header.numReadonlyNonSignerAccounts,
      source: "transaction" as const
    }))
    const holdings = () =>
      keys.flatMap((key, accountIndex) => {
        const holding = this.tokenHolding(key)
        return holding === undefined ? [] : [{ accountIndex, ...holding }]
      })
    // lamports are JSON numbers on Solana's wire (as on a real node); devnet balances stay far below 2^53
    const preBalances = keys.map((k) => Number(this.balance(k)))
    const preTokenBalances = holdings()
    if (!skipPreflight) {
      const simulated = this.svm.simulateTransaction(tx)
      if ("err" in simulated) throw preflightFailed(simulated.toString().slice(0, 300), "InstructionError")
    }
    const result = this.svm.sendTransaction(tx)
    const failed = "err" in result
    const error = failed ? result.err() : undefined
    if (error === SIGNATURE_FAILURE) throw new RpcFailure(-32003, "Transaction signature verification failure")
    if (error === ALREADY_PROCESSED)
      throw preflightFailed("This transaction has already been processed", "AlreadyProcessed")
    const meta = failed ? result.meta() : result
    this.open.push({
      signature,
      signatures,
      wire,
      accountKeys,
      instructions: instructions.map((ix) => ({
        programId: keys[ix.programAddressIndex] ?? "",
        accounts: (ix.accountIndices ?? []).map((i) => keys[i] ?? ""),
        data: base58.encode(Uint8Array.from(ix.data ?? []))
      })),
      recentBlockhash: blockhash,
      version: message.version === "legacy" ? "legacy" : 0,
      err: failed ? { DevnetError: result.toString().slice(0, 200) } : null,
      fee: FEE_PER_SIGNATURE * signatures.length,
      preBalances,
      postBalances: keys.map((k) => Number(this.balance(k))),
      preTokenBalances,
      postTokenBalances: holdings(),
      logs: meta.logs()
    })
    return signature
  }

  /** Closes the open slot into a block and opens the next one, with a fresh blockhash. */
  advance(now: number) {
    const block = this.close(now)
    this.journal?.({ op: "slot", now, blockhash: block.blockhash })
  }

  private close(now: number): SlotBlock {
    const parent = this.blocks.get(this.slot - 1)
    const block: SlotBlock = {
      slot: this.slot,
      blockhash: this.blockhash,
      previousBlockhash: parent?.blockhash ?? this.blockhash,
      // the first block has no parent: it names itself, as a real chain's genesis block (slot 0) does
      parentSlot: parent === undefined ? this.slot : this.slot - 1,
      blockTime: Math.floor(now / 1000),
      txs: this.open
    }
    this.blocks.set(this.slot, block)
    for (const tx of this.open) this.signatures.set(tx.signature, { slot: this.slot, err: tx.err })
    this.open = []
    if (this.keepSnapshot(this.slot)) this.snapshots.set(this.slot, this.svm.toBytes())
    this.snapshots.delete(this.slot - SNAPSHOTS_KEPT)
    this.slot += 1
    this.svm.warpToSlot(BigInt(this.slot))
    this.svm.expireBlockhash()
    this.blockhash = this.nextBlockhash()
    this.recentBlockhashes.set(this.blockhash, this.slot)
    for (const [hash, slot] of this.recentBlockhashes)
      if (this.slot - slot > BLOCKHASH_VALIDITY_SLOTS) this.recentBlockhashes.delete(hash)
    return block
  }

  /**
   * Replaces the last `depth` closed slots (all unfinalized) with new ones: state is restored from the
   * snapshot before them; with `keepTransactions` their transactions are executed again on the new branch.
   */
  reorg(depth: number, keepTransactions: boolean, now: number) {
    this.replaceTail(depth, keepTransactions, now)
    this.journal?.({ op: "reorg", depth, keep: keepTransactions, now })
  }

  private replaceTail(depth: number, keepTransactions: boolean, now: number) {
    const lastClosed = this.slot - 1
    const base = lastClosed - depth
    if (depth < 1 || base < this.finalized)
      throw new RpcFailure(
        -32000,
        `a reorg may replace only unfinalized slots (at most ${lastClosed - this.finalized})`
      )
    const snapshot = this.snapshots.get(base)
    if (snapshot === undefined) throw new RpcFailure(-32000, "no snapshot that far back")
    const dropped: Array<RecordedTx> = []
    for (let s = base + 1; s <= lastClosed; s++) {
      dropped.push(...(this.blocks.get(s)?.txs ?? []))
      this.blocks.delete(s)
      this.snapshots.delete(s)
    }
    const pending = this.open
    for (const tx of [...dropped, ...pending]) this.signatures.delete(tx.signature)
    this.svm = LiteSVM.fromBytes(snapshot).withBlockhashCheck(false)
    this.open = []
    this.branch += 1
    this.slot = base + 1
    this.svm.warpToSlot(BigInt(this.slot))
    this.svm.expireBlockhash()
    this.blockhash = this.nextBlockhash()
    this.recentBlockhashes.set(this.blockhash, this.slot)
    const replay = keepTransactions ? dropped : []
    for (const tx of replay) this.execute(tx.wire, true)
    while (this.slot <= lastClosed) this.close(now)
    for (const tx of pending) this.execute(tx.wire, true)
  }

  /** Builds, signs and submits a legacy transaction from devnet-owned keys (setup and faucets). */
  submitLegacy(instructions: Parameters<LegacyTransaction["add"]>, signers: ReadonlyArray<Keypair>) {
    const tx = new LegacyTransaction({ feePayer: signers[0]?.publicKey, recentBlockhash: this.blockhash }).add(
      ...instructions
    )
    tx.sign(...signers)
    return this.submit(tx.serialize(), false)
  }

  /** Mints devnet USDT to `owner`'s associated token account (created when missing). */
  mintUsdt(owner: string, amount: bigint) {
    const ownerKey = new PublicKey(owner)
    const ata = getAssociatedTokenAddressSync(USDT_MINT.publicKey, ownerKey, true)
    return this.submitLegacy(
      [
        createAssociatedTokenAccountIdempotentInstruction(AUTHORITY.publicKey, ata, ownerKey, USDT_MINT.publicKey),
        createMintToInstruction(USDT_MINT.publicKey, ata, AUTHORITY.publicKey, amount)
      ],
      [AUTHORITY]
    )
  }

  setup() {
    this.airdrop(AUTHORITY.publicKey.toBase58(), 1_000n * 10n ** 9n)
    this.airdrop(SOLANA_DEVNET_CUSTOMER.publicKey.toBase58(), 1_000n * 10n ** 9n)
    const rent = Number(this.svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE)))
    this.submitLegacy(
      [
        SystemProgram.createAccount({
          fromPubkey: AUTHORITY.publicKey,
          newAccountPubkey: USDT_MINT.publicKey,
          lamports: rent,
          space: MINT_SIZE,
          programId: TOKEN_PROGRAM_ID
        }),
        createInitializeMint2Instruction(USDT_MINT.publicKey, 6, AUTHORITY.publicKey, null)
      ],
      [AUTHORITY, USDT_MINT]
    )
    this.mintUsdt(SOLANA_DEVNET_CUSTOMER.publicKey.toBase58(), 1_000_000n * 10n ** 6n)
  }

  get usdtMint() {
    return USDT_MINT.publicKey.toBase58()
  }
}

const toAddress = (value: string): Address => {
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(value))
    throw new RpcFailure(-32602, `Invalid param: ${value} is not a base58 address`)
  return address(value)
}
