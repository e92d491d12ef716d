import {
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync
} from "@solana/spl-token"
import { Connection, PublicKey, SystemProgram, Transaction } from "@solana/web3.js"
import { Effect, Option } from "effect"
import { Signer } from "../../keys/signer.js"
import { type ChainBlock, ChainRpcError, type ChainClient, TransferRejected, type TransferRequest } from "../chain-client.js"
import { decodeSolanaTransaction, type SolanaTransaction } from "./solana-decoding.js"

export interface SplToken {
  readonly mint: string
  readonly decimals: number
}

export interface SolanaSettings {
  readonly rpcUrl: string
  /** currency → SPL mint */
  readonly tokens: ReadonlyMap<string, SplToken>
}

const NATIVE = "SOL"

const rpcError = (what: string) => (cause: unknown) =>
  new ChainRpcError({ chain: "SOLANA", message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const publicKey = (value: string) => {
  try {
    return Option.some(new PublicKey(value))
  } catch {
    return Option.none()
  }
}

/** A slot the cluster skipped has no block; that is an answer, not an error. */

/**
 * Solana over JSON-RPC with @solana/web3.js 1.x: blocks with `jsonParsed` and
 * `maxSupportedTransactionVersion: 0`, deposits from balance changes (associated token accounts only),
 * finality at the `finalized` commitment, transfers signed by the Signer (ed25519) and sent without
 * automatic re-sends.
 */
export const makeSolanaClient = (settings: SolanaSettings) =>
  Effect.gen(function*() {
    const signer = yield* Signer
    const connection = new Connection(settings.rpcUrl, { commitment: "confirmed", disableRetryOnRateLimit: true })
    const currencyOfMint = new Map([...settings.tokens].map(([currency, token]) => [token.mint, currency]))

    // the newest slot with a block to read: processed slots may still change and have none yet
    const head = Effect.tryPromise({ try: () => connection.getSlot("confirmed"), catch: rpcError("getSlot") }).pipe(Effect.map(BigInt))
    const finalized = Effect.tryPromise({ try: () => connection.getSlot("finalized"), catch: rpcError("getSlot") }).pipe(Effect.map(BigInt))
    const genesis = Effect.tryPromise({ try: () => connection.getGenesisHash(), catch: rpcError("getGenesisHash") })

    const fetchBlock = (slot: bigint): Effect.Effect<ChainBlock, ChainRpcError> =>
      Effect.tryPromise({
        try: () => connection.getParsedBlock(Number(slot), {
          maxSupportedTransactionVersion: 0,
          // "accounts" is jsonParsed's lighter detail level: account keys, signatures and balances, no instructions
          transactionDetails: "accounts",
          rewards: false,
          commitment: "confirmed"
        }),
        catch: (cause) => cause
      }).pipe(
        Effect.map((block) => {
          const header = { number: slot, hash: block.blockhash, parentHash: block.previousBlockhash }
          const transfers = block.transactions.flatMap((entry) => {
            const tx: SolanaTransaction = {
              transaction: {
                signatures: entry.transaction.signatures,
                message: { accountKeys: entry.transaction.accountKeys.map((k) => ({ pubkey: k.pubkey.toBase58() })) }
              },
              meta: entry.meta === null ? null : {
                err: entry.meta.err,
                preBalances: entry.meta.preBalances,
                postBalances: entry.meta.postBalances,
                preTokenBalances: entry.meta.preTokenBalances ?? null,
                postTokenBalances: entry.meta.postTokenBalances ?? null
              }
            }
            return decodeSolanaTransaction(tx, header, (mint) => currencyOfMint.get(mint))
          })
          return { ...header, timestamp: block.blockTime ?? 0, transfers }
        }),
        Effect.mapError(rpcError(`getBlock ${slot}`))
      )

    /**
     * The produced slots of the range come from `getBlocks`; each of them must then be readable. A slot
     * the node cannot give (-32007 after a snapshot jump, -32009 missing in long-term storage) fails the
     * batch instead of passing for a skipped one.
     */
    const blocks = (from: bigint, to: bigint) =>
      Effect.tryPromise({ try: () => connection.getBlocks(Number(from), Number(to), "confirmed"), catch: rpcError("getBlocks") }).pipe(
        Effect.flatMap((slots) => Effect.forEach(slots.filter((s) => s >= Number(from) && s <= Number(to)), (s) => fetchBlock(BigInt(s)), { concurrency: 8 }))
      )

    /** At a commitment, with the slot the node answered at (the token account's, when there is one). */
    const balanceAt = (owner: string, currency: string, commitment: "confirmed" | "finalized") =>
      Effect.gen(function*() {
        const key = publicKey(owner)
        if (Option.isNone(key)) return yield* new ChainRpcError({ chain: "SOLANA", message: `not a Solana address: ${owner}` })
        if (currency === NATIVE) {
          const native = yield* Effect.tryPromise({ try: () => connection.getBalanceAndContext(key.value, commitment), catch: rpcError("getBalance") })
          return { balance: BigInt(native.value), height: BigInt(native.context.slot) }
        }
        const token = settings.tokens.get(currency)
        if (token === undefined) return yield* new ChainRpcError({ chain: "SOLANA", message: `no mint configured for ${currency}` })
        const ata = getAssociatedTokenAddressSync(new PublicKey(token.mint), key.value, true)
        const exists = yield* Effect.tryPromise({ try: () => connection.getAccountInfoAndContext(ata, commitment), catch: rpcError("getAccountInfo") })
        if (exists.value === null) return { balance: 0n, height: BigInt(exists.context.slot) }
        const amount = yield* Effect.tryPromise({ try: () => connection.getTokenAccountBalance(ata, commitment), catch: rpcError("getTokenAccountBalance") })
        return { balance: BigInt(amount.value.amount), height: BigInt(amount.context.slot) }
      })
    const balance = (owner: string, currency: string) => Effect.map(balanceAt(owner, currency, "confirmed"), (b) => b.balance)
    const finalBalance = (owner: string, currency: string) => balanceAt(owner, currency, "finalized")

    const transfer = (request: TransferRequest) =>
      Effect.gen(function*() {
        if (request.from.family !== "SOLANA") return yield* new TransferRejected({ chain: "SOLANA", message: "Solana transfers need a Solana key" })
        const to = publicKey(request.to)
        if (Option.isNone(to)) return yield* new TransferRejected({ chain: "SOLANA", message: `not a Solana address: ${request.to}` })
        const [key] = yield* signer.deriveAddresses("SOLANA", request.from.account, [request.from.index])
        if (key === undefined) return yield* Effect.die(new Error("the signer derived no address"))
        const from = new PublicKey(key.address)
        const { blockhash } = yield* Effect.tryPromise({ try: () => connection.getLatestBlockhash("confirmed"), catch: rpcError("getLatestBlockhash") })
        const tx = new Transaction({ feePayer: from, recentBlockhash: blockhash })
        if (request.currency === NATIVE) {
          tx.add(SystemProgram.transfer({ fromPubkey: from, toPubkey: to.value, lamports: request.amount }))
        } else {
          const token = settings.tokens.get(request.currency)
          if (token === undefined) return yield* new TransferRejected({ chain: "SOLANA", message: `no mint configured for ${request.currency}` })
          const mint = new PublicKey(token.mint)
          const source = getAssociatedTokenAddressSync(mint, from, true)
          const destination = getAssociatedTokenAddressSync(mint, to.value, true)
          // the recipient's associated token account is created in the same transaction when missing
          tx.add(
            createAssociatedTokenAccountIdempotentInstruction(from, destination, to.value, mint),
            createTransferCheckedInstruction(source, mint, destination, from, request.amount, token.decimals)
          )
        }
        const signature = yield* signer.signMessage(request.from, tx.serializeMessage())
        tx.addSignature(from, Buffer.from(signature))
        return yield* Effect.tryPromise({
          try: () => connection.sendRawTransaction(tx.serialize(), { skipPreflight: false, maxRetries: 0 }),
          catch: (cause) =>
            cause instanceof Error && /simulation failed|insufficient|already been processed/i.test(cause.message)
              ? new TransferRejected({ chain: "SOLANA", message: cause.message })
              : rpcError("sendTransaction")(cause)
        })
      })

    const transaction = (signature: string) =>
      Effect.gen(function*() {
        const statuses = yield* Effect.tryPromise({
          try: () => connection.getSignatureStatuses([signature], { searchTransactionHistory: true }),
          catch: rpcError("getSignatureStatuses")
        })
        const status = statuses.value[0]
        if (status === null || status === undefined) return Option.none()
        const tip = yield* head
        return Option.some({
          status: status.err === null ? ("success" as const) : ("failed" as const),
          blockNumber: Option.some(BigInt(status.slot)),
          confirmations: Number(tip - BigInt(status.slot) + 1n)
        })
      })

    return { chain: "SOLANA", skipsNumbers: true, genesis, head, finalized, blocks, balance, finalBalance, transfer, transaction } satisfies ChainClient
  })
