import { Option } from "effect"
import { LandingEvidence, type LandingWindow, type TransactionLookup } from "../../src/chains/chain-client.js"
import { feeOf, NATIVE, type SimChainId, type SimTx, txOfRaw } from "./sim-tx.js"

/** Blocks after which a block is final (the finalized height is the head minus this). */
export const FINALITY = 2n
/** TRON: a block every 3 s from this moment; a transaction expires this long after its reference block. */
export const TRON_GENESIS_MS = 1_700_000_000_000
export const TRON_BLOCK_MS = 3_000
export const TRON_EXPIRY_MS = 30_000n
/** Solana: lastValidBlockHeight is the recent blockhash's block plus this. */
export const SOLANA_VALID_BLOCKS = 12n

/** A transaction in a block: whether it did what it said (a failed one still burned its fee). */
export interface Landed {
  readonly hash: string
  readonly tx: SimTx
  readonly block: bigint
  readonly success: boolean
  readonly fee: bigint
}

export interface SimBlock {
  readonly number: bigint
  readonly hash: string
  readonly parentHash: string
  readonly timestamp: number
  readonly hashes: ReadonlyArray<string>
}

/** What an honest node answers to a send: taken into its mempool (or already known), or refused with its text. */
export type Verdict = { readonly accepted: true } | { readonly accepted: false; readonly message: string }

/**
 * One simulated chain, honest by construction: balances, a mempool, blocks, finality after FINALITY blocks.
 * EVM (BEP20): per-sender nonces; at each sender's next nonce the highest gas price at or above the floor is
 * mined. TRON and Solana: a transaction is valid until its expiration (TRON, ms) or lastValidBlockHeight
 * (Solana) and is included at most once. Everything an adversary says is derived from this state at some
 * height (a lagging backend) — never a lie about final state.
 */
export interface SimChain {
  readonly id: SimChainId
  readonly head: () => bigint
  readonly finalizedAt: (view: bigint) => bigint
  readonly timestampOf: (number: bigint) => number
  readonly block: (number: bigint) => SimBlock | undefined
  /** The node's price quote, and the lowest price a block includes (EVM). */
  readonly prices: () => { readonly quote: bigint; readonly floor: bigint }
  readonly setPrices: (quote: bigint, floor: bigint) => void
  readonly balance: (address: string, currency: string) => bigint
  readonly credit: (address: string, currency: string, amount: bigint) => void
  /** EVM: the sender's transactions included at or below `height`. */
  readonly nonceAt: (address: string, height: bigint) => bigint
  readonly submit: (tx: SimTx, hash: string) => Verdict
  /** A send that reaches the mempool `blocks` blocks from now (a delayed forward). */
  readonly deliverLater: (tx: SimTx, hash: string, blocks: bigint) => void
  readonly mine: () => ReadonlyArray<Landed>
  readonly landed: (hash: string) => Landed | undefined
  /** In a mempool (or on its way to one) and still valid: it may still be included. */
  readonly canLand: (hash: string) => boolean
  readonly lookup: (hash: string, view: bigint, knowsPending: boolean) => Option.Option<TransactionLookup>
  readonly landing: (window: LandingWindow, view: bigint, pruned: boolean) => LandingEvidence
}

const blockHashOf = (chain: SimChainId, number: bigint) => `${chain.toLowerCase()}-block-${number}`

export const makeSimChain = (id: SimChainId, prices: { readonly quote: bigint; readonly floor: bigint }): SimChain => {
  const native = NATIVE[id]
  let quote = prices.quote
  let floor = prices.floor
  const blocks: Array<SimBlock> = [
    { number: 0n, hash: blockHashOf(id, 0n), parentHash: "", timestamp: TRON_GENESIS_MS, hashes: [] }
  ]
  const balances = new Map<string, bigint>()
  const landedByHash = new Map<string, Landed>()
  const mempool = new Map<string, SimTx>()
  const inFlight: Array<{ readonly tx: SimTx; readonly hash: string; readonly due: bigint }> = []
  /** EVM: the blocks of each sender's included transactions, in nonce order. */
  const sentIn = new Map<string, Array<bigint>>()

  const head = () => BigInt(blocks.length - 1)
  const key = (address: string, currency: string) => `${address}|${currency}`
  const balance = (address: string, currency: string) => balances.get(key(address, currency)) ?? 0n
  const credit = (address: string, currency: string, amount: bigint) => {
    balances.set(key(address, currency), balance(address, currency) + amount)
  }
  const timestampOf = (number: bigint) => TRON_GENESIS_MS + Number(number) * TRON_BLOCK_MS
  const nonceAt = (address: string, height: bigint) =>
    BigInt((sentIn.get(address) ?? []).filter((block) => block <= height).length)
  const finalizedAt = (view: bigint) => (view > FINALITY ? view - FINALITY : 0n)

  /** Whether the transaction may still be included in the next block. */
  const valid = (tx: SimTx, hash: string) => {
    if (landedByHash.has(hash)) return false
    if (id === "BEP20") return (tx.nonce ?? -1n) >= nonceAt(tx.from, head())
    if (id === "TRC20") return BigInt(timestampOf(head() + 1n)) < (tx.validUntil ?? 0n)
    return head() + 1n <= (tx.validUntil ?? 0n)
  }

  /** The fee payer can pay (EVM: its maximum fee and a native amount, before it is mined). */
  const payable = (tx: SimTx) => {
    const coins = tx.currency === native && tx.feePayer === tx.from && tx.action === null ? tx.amount : 0n
    return balance(tx.feePayer, native) >= (id === "BEP20" ? tx.maxFee : feeOf(tx)) + coins
  }

  const include = (tx: SimTx, hash: string, number: bigint): Landed => {
    const fee = feeOf(tx)
    credit(tx.feePayer, native, -fee)
    const moves = tx.action === null
    const success = !moves || balance(tx.from, tx.currency) >= tx.amount
    if (moves && success) {
      credit(tx.from, tx.currency, -tx.amount)
      credit(tx.to, tx.currency, tx.amount)
    }
    if (id === "BEP20") sentIn.set(tx.from, [...(sentIn.get(tx.from) ?? []), number])
    mempool.delete(hash)
    const landed = { hash, tx, block: number, success, fee }
    landedByHash.set(hash, landed)
    return landed
  }

  /** EVM: each sender's next nonces, the best price at each, as long as its payer can pay. */
  const mineEvm = (number: bigint) => {
    const out: Array<Landed> = []
    const senders = [...new Set([...mempool.values()].map((tx) => tx.from))].sort()
    for (const sender of senders) {
      for (;;) {
        const next = nonceAt(sender, number)
        const best = [...mempool.entries()]
          .filter(([, tx]) => tx.from === sender && tx.nonce === next && tx.gasPrice >= floor)
          .sort(([ha, a], [hb, b]) =>
            a.gasPrice === b.gasPrice ? ha.localeCompare(hb) : a.gasPrice > b.gasPrice ? -1 : 1
          )
        const first = best[0]
        if (first === undefined || !payable(first[1])) break
        out.push(include(first[1], first[0], number))
      }
    }
    return out
  }

  const mineWindowed = (number: bigint) => {
    const out: Array<Landed> = []
    for (const [hash, tx] of [...mempool.entries()]) {
      if (payable(tx)) out.push(include(tx, hash, number))
    }
    return out
  }

  const submit = (tx: SimTx, hash: string): Verdict => {
    if (landedByHash.has(hash) || mempool.has(hash)) return { accepted: true }
    if (!valid(tx, hash)) {
      const message =
        id === "BEP20" ? "nonce too low" : id === "TRC20" ? "TRANSACTION_EXPIRATION_ERROR" : "Blockhash not found"
      return { accepted: false, message }
    }
    if (id === "BEP20" && !payable(tx))
      return { accepted: false, message: "insufficient funds for gas * price + value" }
    mempool.set(hash, tx)
    return { accepted: true }
  }

  const mine = () => {
    const number = head() + 1n
    for (const due of inFlight.filter((f) => f.due <= number)) submit(due.tx, due.hash)
    inFlight.splice(0, inFlight.length, ...inFlight.filter((f) => f.due > number))
    // what can no longer land leaves the mempool
    for (const [hash, tx] of [...mempool.entries()]) if (!valid(tx, hash)) mempool.delete(hash)
    const included = id === "BEP20" ? mineEvm(number) : mineWindowed(number)
    const parent = blocks[blocks.length - 1]
    blocks.push({
      number,
      hash: blockHashOf(id, number),
      parentHash: parent?.hash ?? "",
      timestamp: timestampOf(number),
      hashes: included.map((l) => l.hash)
    })
    return included
  }

  const canLand = (hash: string) => {
    const pending = mempool.get(hash) ?? inFlight.find((f) => f.hash === hash)?.tx
    return pending !== undefined && valid(pending, hash)
  }

  const lookup = (hash: string, view: bigint, knowsPending: boolean): Option.Option<TransactionLookup> => {
    const landed = landedByHash.get(hash)
    if (landed !== undefined && landed.block <= view) {
      return Option.some({
        status: landed.success ? "success" : "failed",
        blockNumber: Option.some(landed.block),
        confirmations: Number(view - landed.block),
        fee: Option.some(landed.fee),
        ...(id === "SOLANA" ? { payerSpent: landed.fee } : {})
      })
    }
    if (knowsPending && (landed !== undefined || mempool.has(hash)))
      return Option.some({ status: "pending", blockNumber: Option.none(), confirmations: 0, fee: Option.none() })
    return Option.none()
  }

  const landing = (window: LandingWindow, view: bigint, pruned: boolean) =>
    id === "BEP20"
      ? nonceAt(window.from, finalizedAt(view)) > Option.getOrElse(window.nonce, () => -1n)
        ? LandingEvidence.NonceUsed()
        : LandingEvidence.Open()
      : windowEvidence(window, finalizedAt(view), pruned)

  /** TRON, Solana: every final block from the reference block to the first one past the window, read. */
  const windowEvidence = (window: LandingWindow, final: bigint, pruned: boolean): LandingEvidence => {
    const tx = txOfRaw(window.raw)
    if (tx === undefined || tx.refBlock === null || tx.validUntil === null) return LandingEvidence.Open()
    const until = tx.validUntil
    const closing =
      id === "TRC20"
        ? blocks.find((b) => BigInt(b.timestamp) >= until)?.number
        : until + 1n <= head()
          ? until + 1n
          : undefined
    if (closing === undefined || closing > final) return LandingEvidence.Open()
    if (pruned) return LandingEvidence.Unproven({ reason: `blocks ${tx.refBlock}–${closing} are pruned on this node` })
    const landed = landedByHash.get(window.txHash)
    if (landed !== undefined && landed.block >= tx.refBlock && landed.block <= closing)
      return LandingEvidence.Landed({ blockNumber: landed.block })
    return LandingEvidence.NeverLanded({
      blocks: Number(closing - tx.refBlock) + 1,
      proof: `final blocks ${tx.refBlock}–${closing} read, hash-linked: not in any`
    })
  }

  return {
    id,
    head,
    finalizedAt,
    timestampOf,
    block: (number) => blocks[Number(number)],
    prices: () => ({ quote, floor }),
    setPrices: (q, f) => {
      quote = q
      floor = f
    },
    balance,
    credit,
    nonceAt,
    submit,
    deliverLater: (tx, hash, later) => {
      inFlight.push({ tx, hash, due: head() + later })
    },
    mine,
    landed: (hash) => landedByHash.get(hash),
    canLand,
    lookup,
    landing
  }
}
