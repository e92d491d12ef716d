import type { Random } from "../faults/seeded-random.js"
import type { SimChainId } from "./sim-tx.js"

/** The refusals each chain documents for a send (what a backend behind the URL may answer, rightly or not). */
export const REFUSALS: Record<SimChainId, ReadonlyArray<string>> = {
  BEP20: [
    "nonce too low",
    "insufficient funds for gas * price + value",
    "replacement transaction underpriced",
    "already known"
  ],
  TRC20: ["TAPOS_ERROR", "DUP_TRANSACTION_ERROR", "CONTRACT_VALIDATE_ERROR", "TRANSACTION_EXPIRATION_ERROR"],
  SOLANA: [
    "Blockhash not found",
    "Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.",
    "This transaction has already been processed"
  ]
}

/** Node errors: no answer at all, as far as the caller knows. */
const RPC_ERRORS = ["HTTP 429 Too Many Requests", "HTTP 502 Bad Gateway", "HTTP 503 Service Unavailable", "timeout"]

/** Whether a send reaches the chain: now, some blocks later, or never (a node that takes bytes and loses them). */
export type Forward =
  | { readonly _tag: "Now" }
  | { readonly _tag: "Later"; readonly blocks: bigint }
  | { readonly _tag: "Never" }
/** What the caller is told: what the chain's node would say, ok, a refusal, or a node error. */
export type Answer =
  | { readonly _tag: "Honest" }
  | { readonly _tag: "Ok" }
  | { readonly _tag: "Refused"; readonly message: string }
  | { readonly _tag: "RpcError"; readonly message: string }

/** How hostile this seed's network is, each a probability per call (chosen by the seed). */
export interface Hostility {
  readonly lag: number
  readonly lookupMiss: number
  readonly rpcError: number
  readonly pruned: number
  readonly dishonestSend: number
}

/**
 * The network as custody meets it: for every call, one answer some honest backend behind the URL could give,
 * chosen by the seed's random source — a backend behind the chain, one that does not know a pending
 * transaction, one that pruned the window, a send forwarded or not and answered with anything. Once healed,
 * every backend is honest and current. Every move is counted, for the table of what a run exercised.
 */
export interface Adversary {
  readonly healed: () => boolean
  readonly heal: () => void
  readonly counts: ReadonlyMap<string, number>
  readonly count: (move: string) => void
  /** The height of the backend that answers this call (the head, or one behind it). */
  readonly view: (chain: SimChainId, call: string, head: bigint) => bigint
  /** A node error instead of an answer (not for sends: their errors are a move of `send`). */
  readonly rpcError: (chain: SimChainId, call: string) => string | undefined
  /** A lookup answered "not found" by a backend that has not seen the transaction. */
  readonly lookupMisses: (chain: SimChainId) => boolean
  /** Whether the backend answering a lookup knows a transaction that is pending in the mempool. */
  readonly knowsPending: () => boolean
  readonly pruned: (chain: SimChainId) => boolean
  readonly send: (chain: SimChainId) => { readonly forward: Forward; readonly answer: Answer }
}

export const makeAdversary = (random: Random, hostility: Hostility): Adversary => {
  const counts = new Map<string, number>()
  let healed = false
  const count = (move: string) => {
    counts.set(move, (counts.get(move) ?? 0) + 1)
  }
  const chance = (p: number) => !healed && random.next() < p

  const forward = (): Forward => {
    const roll = random.next()
    if (roll < 0.6) return { _tag: "Now" }
    if (roll < 0.8) return { _tag: "Later", blocks: BigInt(1 + random.int(3)) }
    return { _tag: "Never" }
  }

  const answer = (chain: SimChainId): Answer => {
    const roll = random.next()
    if (roll < 0.2) return { _tag: "Ok" }
    if (roll < 0.6) {
      const message = random.pick(REFUSALS[chain])
      return { _tag: "Refused", message }
    }
    return { _tag: "RpcError", message: random.pick(RPC_ERRORS) }
  }

  return {
    healed: () => healed,
    heal: () => {
      healed = true
    },
    counts,
    count,
    view: (chain, call, head) => {
      if (!chance(hostility.lag)) return head
      const behind = BigInt(1 + random.int(6))
      count(`${chain} ${call}: backend behind`)
      return head > behind ? head - behind : 0n
    },
    rpcError: (chain, call) => {
      if (!chance(hostility.rpcError)) return undefined
      const message = random.pick(RPC_ERRORS)
      count(`${chain} ${call}: ${message.startsWith("HTTP") ? message.slice(5, 8) : message}`)
      return message
    },
    lookupMisses: (chain) => {
      if (!chance(hostility.lookupMiss)) return false
      count(`${chain} lookup: not found (backend behind)`)
      return true
    },
    knowsPending: () => healed || random.next() < 0.5,
    pruned: (chain) => {
      if (!chance(hostility.pruned)) return false
      count(`${chain} landing: window pruned`)
      return true
    },
    send: (chain) => {
      if (!chance(hostility.dishonestSend)) return { forward: { _tag: "Now" }, answer: { _tag: "Honest" } }
      const moved = { forward: forward(), answer: answer(chain) }
      const told =
        moved.answer._tag === "Refused"
          ? `refused "${moved.answer.message}"`
          : moved.answer._tag === "RpcError"
            ? `node error`
            : "ok"
      count(
        `${chain} send: ${moved.forward._tag === "Never" ? "dropped" : "forwarded"}${moved.forward._tag === "Later" ? " late" : ""}, answered ${told}`
      )
      return moved
    }
  }
}
