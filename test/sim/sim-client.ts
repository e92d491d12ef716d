import { Effect, Either, Option } from "effect"
import {
  type ChainClient,
  ChainRpcError,
  checkFeeCap,
  type FeeAboveCap,
  type SignedTransfer,
  type TransferRequest,
  TransferRejected
} from "../../src/chains/chain-client.js"
import type { KeyRef } from "../../src/keys/signer.js"
import type { Adversary, Forward } from "./adversary.js"
import { SOLANA_VALID_BLOCKS, type SimChain, TRON_EXPIRY_MS, type Verdict } from "./sim-chain.js"
import { hashOfRaw, NATIVE, rawOf, type SimTx, txOfRaw } from "./sim-tx.js"

/** Where a driver hands the turn back to the scheduler: before and after each chain call, named. */
export type Park = (point: string) => Effect.Effect<void>

/** The actions each chain knows; any other is refused before signing, as the real clients do. */
const ACTIONS: Record<SimChain["id"], ReadonlyArray<string>> = {
  BEP20: [],
  TRC20: ["DelegateEnergy", "ReclaimEnergy"],
  SOLANA: ["CloseTokenAccount"]
}

/** Units a transfer burns: EVM gas, TRON energy (a token) or bandwidth bytes, Solana signatures. */
const unitsOf = (chain: SimChain["id"], currency: string, action: string | null, sponsored: boolean) => {
  if (chain === "SOLANA") return sponsored ? 2n : 1n
  if (action !== null) return 300n
  const native = currency === NATIVE[chain]
  return chain === "BEP20" ? (native ? 21_000n : 65_000n) : native ? 270n : 65_000n
}

/**
 * A ChainClient over a simulated chain, each answer chosen by the adversary among those an honest backend
 * could give, and each call a point where the scheduler may take the turn (or crash the caller).
 */
export const makeSimClient = (
  chain: SimChain,
  adversary: Adversary,
  park: Park,
  addressOf: (key: KeyRef) => string
): ChainClient => {
  const id = chain.id
  const view = (call: string) => adversary.view(id, call, chain.head())

  /** A chain call: the turn may pass before it and after it (a crash there loses the answer, not the effect). */
  const call = <A, E>(name: string, answer: () => Effect.Effect<A, E>): Effect.Effect<A, E | ChainRpcError> =>
    Effect.gen(function* () {
      yield* park(`${id}.${name}:before`)
      const error = name === "broadcast" ? undefined : adversary.rpcError(id, name)
      const result =
        error === undefined
          ? yield* Effect.either(answer())
          : Either.left(new ChainRpcError({ chain: id, message: error }))
      yield* park(`${id}.${name}:after`)
      return yield* result
    })

  const prepare = (request: TransferRequest) =>
    call<SignedTransfer, TransferRejected | FeeAboveCap>("prepare", () => {
      const action = request.action?._tag ?? null
      if (action !== null && !ACTIONS[id].includes(action))
        return Effect.fail(new TransferRejected({ chain: id, message: `${id} has no ${action}` }))
      const from = addressOf(request.from)
      const feePayer = request.feePayer === undefined ? from : addressOf(request.feePayer)
      const { quote } = chain.prices()
      const gasPrice =
        request.gasPriceAtLeast !== undefined && request.gasPriceAtLeast > quote ? request.gasPriceAtLeast : quote
      const units = unitsOf(id, request.currency, action, feePayer !== from)
      const ref = view("prepare")
      const tx: SimTx = {
        chain: id,
        from,
        feePayer,
        to: request.to,
        currency: request.currency,
        amount: request.amount,
        nonce: id === "BEP20" ? (request.nonce ?? chain.nonceAt(from, chain.head())) : null,
        gasPrice,
        units,
        maxFee: units * gasPrice,
        refBlock: id === "BEP20" ? null : ref,
        validUntil:
          id === "TRC20"
            ? BigInt(chain.timestampOf(ref)) + TRON_EXPIRY_MS
            : id === "SOLANA"
              ? ref + SOLANA_VALID_BLOCKS
              : null,
        action
      }
      const raw = rawOf(tx)
      const signed: SignedTransfer = {
        txHash: hashOfRaw(raw),
        raw,
        from,
        feePayer,
        nonce: Option.fromNullable(tx.nonce),
        validUntil: Option.fromNullable(tx.validUntil),
        maxFee: tx.maxFee,
        gasPrice
      }
      return Effect.as(checkFeeCap(id, request.feeCap, tx.maxFee, gasPrice), signed)
    })

  /** The send reaches the chain now (the node's verdict), later, or never (no verdict). */
  const forward = (tx: SimTx, hash: string, how: Forward): Verdict | undefined => {
    if (how._tag === "Now") return chain.submit(tx, hash)
    if (how._tag === "Later") chain.deliverLater(tx, hash, how.blocks)
    return undefined
  }

  const broadcast = (raw: string) =>
    call<void, TransferRejected | ChainRpcError>("broadcast", () => {
      const tx = txOfRaw(raw)
      if (tx === undefined) return Effect.fail(new TransferRejected({ chain: id, message: "malformed transaction" }))
      const hash = hashOfRaw(raw)
      const move = adversary.send(id)
      const verdict = forward(tx, hash, move.forward)
      const answer = move.answer
      if (answer._tag === "RpcError") return Effect.fail(new ChainRpcError({ chain: id, message: answer.message }))
      if (answer._tag === "Refused") return Effect.fail(new TransferRejected({ chain: id, message: answer.message }))
      if (answer._tag === "Ok" || verdict === undefined || verdict.accepted) return Effect.void
      return Effect.fail(new TransferRejected({ chain: id, message: verdict.message }))
    })

  return {
    chain: id,
    genesis: call("genesis", () => Effect.succeed(`${id.toLowerCase()}-block-0`)),
    head: call("head", () => Effect.sync(() => view("head"))),
    finalized: call("finalized", () => Effect.sync(() => chain.finalizedAt(view("finalized")))),
    tip: call("tip", () =>
      Effect.sync(() => {
        const head = view("tip")
        return { head, finalized: chain.finalizedAt(head) }
      })
    ),
    blockHash: (number) =>
      call("blockHash", () => Effect.sync(() => Option.map(Option.fromNullable(chain.block(number)), (b) => b.hash))),
    blocks: (from, to) =>
      call("blocks", () =>
        Effect.sync(() => {
          const out = []
          for (let n = from; n <= to && n <= chain.head(); n++) {
            const block = chain.block(n)
            if (block !== undefined)
              out.push({
                number: n,
                hash: block.hash,
                parentHash: block.parentHash,
                timestamp: block.timestamp,
                transfers: []
              })
          }
          return out
        })
      ),
    skipsNumbers: false,
    balance: (address, currency) => call("balance", () => Effect.sync(() => chain.balance(address, currency))),
    finalBalance: (address, currency) =>
      call("finalBalance", () =>
        Effect.sync(() => ({ balance: chain.balance(address, currency), height: chain.finalizedAt(chain.head()) }))
      ),
    prepare,
    broadcast,
    landing: (window) =>
      call("landing", () => Effect.sync(() => chain.landing(window, view("landing"), adversary.pruned(id)))),
    feeEstimate: (request) =>
      call("feeEstimate", () =>
        Effect.sync(() => unitsOf(id, request.currency, null, request.sponsored) * chain.prices().quote)
      ),
    finalNonce: (address) =>
      call("finalNonce", () => Effect.sync(() => chain.nonceAt(address, chain.finalizedAt(view("finalNonce"))))),
    transaction: (hash) =>
      call("transaction", () =>
        Effect.sync(() =>
          adversary.lookupMisses(id) ? Option.none() : chain.lookup(hash, view("lookup"), adversary.knowsPending())
        )
      ),
    finalInclusion: (hash, blockNumber) =>
      call("finalInclusion", () =>
        Effect.sync(() => {
          const landed = chain.landed(hash)
          return landed !== undefined && landed.block === blockNumber && blockNumber <= chain.finalizedAt(view("final"))
        })
      )
  }
}
