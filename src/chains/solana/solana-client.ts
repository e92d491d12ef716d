import { base58 } from "@scure/base"
import {
  createAssociatedTokenAccountIdempotentInstruction,
  createCloseAccountInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync
} from "@solana/spl-token"
import {
  type BlockSignatures,
  Connection,
  PublicKey,
  SolanaJSONRPCError,
  SystemProgram,
  Transaction
} from "@solana/web3.js"
import { Effect, Option, Schema } from "effect"
import { type KeyRef, Signer } from "../../keys/signer.js"
import { makeBudgetedFetch, type NodeBudget, throttleCheck, UNLIMITED } from "../node-budget.js"
import type { NodeHeaders } from "../node-headers.js"
import {
  type ChainBlock,
  type ChainClient,
  ChainRpcError,
  checkFeeCap,
  LandingEvidence,
  type LandingWindow,
  type SignedTransfer,
  TransferRejected,
  type TransferRequest
} from "../chain-client.js"
import { decodeSolanaTransaction, type SolanaTransaction } from "./solana-decoding.js"
import { solanaSendAnswer } from "./solana-send-answer.js"

export interface SplToken {
  readonly mint: string
  readonly decimals: number
}

export interface SolanaSettings {
  readonly rpcUrl: string
  /** currency → SPL mint */
  readonly tokens: ReadonlyMap<string, SplToken>
  /** Headers sent with every call (a provider's API key). */
  readonly headers?: NodeHeaders
  /** Calls a second and at once the node takes (its provider's limits); none unless set. */
  readonly budget?: NodeBudget
}

const NATIVE = "SOL"
/** The base fee per signature (no priority fee is paid). */
const LAMPORTS_PER_SIGNATURE = 5_000
/** The most slots `getBlocks` lists in one call (a wider range is refused). */
const MAX_GET_BLOCKS_RANGE = 500_000
/** How far above a node's known first available slot a range may start without asking it again (about an hour of slots). */
const LEDGER_START_MARGIN = 10_000n
/** Blocks a blockhash stays usable for (lastValidBlockHeight is its block height plus this). */
const MAX_BLOCKHASH_AGE_BLOCKS = 150
const BlockHeight = Schema.Struct({ blockHeight: Schema.NullOr(Schema.Number) })
/** An SPL token account's size, for its rent. */
const TOKEN_ACCOUNT_SIZE = 165

const rpcError = (what: string) => (cause: unknown) =>
  new ChainRpcError({ chain: "SOLANA", message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const publicKey = (value: string) => {
  try {
    return Option.some(new PublicKey(value))
  } catch {
    return Option.none()
  }
}

/**
 * Solana over JSON-RPC with @solana/web3.js 1.x: blocks with `jsonParsed` and
 * `maxSupportedTransactionVersion: 0`, deposits from balance changes (associated token accounts only),
 * finality at the `finalized` commitment, transfers signed by the Signer (ed25519) and sent without
 * automatic re-sends.
 */
export const makeSolanaClient = (settings: SolanaSettings) =>
  Effect.gen(function* () {
    const signer = yield* Signer
    const budget = settings.budget ?? UNLIMITED
    const budgeted = makeBudgetedFetch(budget)
    // its own retry on 429 is off: the budget waits out the node's Retry-After, for every call to the node
    const connection = new Connection(settings.rpcUrl, {
      commitment: "confirmed",
      disableRetryOnRateLimit: true,
      fetch: budgeted.fetch,
      ...(settings.headers === undefined ? {} : { httpHeaders: { ...settings.headers } })
    })
    const currencyOfMint = new Map([...settings.tokens].map(([currency, token]) => [token.mint, currency]))

    // the newest slot with a block to read: processed slots may still change and have none yet
    const head = Effect.tryPromise({ try: () => connection.getSlot("confirmed"), catch: rpcError("getSlot") }).pipe(
      Effect.map(BigInt)
    )
    const finalized = Effect.tryPromise({
      try: () => connection.getSlot("finalized"),
      catch: rpcError("getSlot")
    }).pipe(Effect.map(BigInt))
    const genesis = Effect.tryPromise({ try: () => connection.getGenesisHash(), catch: rpcError("getGenesisHash") })

    /** A block and the slot of its parent (the slots between them were skipped). */
    const fetchBlock = (
      slot: bigint
    ): Effect.Effect<{ readonly block: ChainBlock; readonly parentSlot: bigint }, ChainRpcError> =>
      Effect.tryPromise({
        try: () =>
          connection.getParsedBlock(Number(slot), {
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
              meta:
                entry.meta === null
                  ? null
                  : {
                      err: entry.meta.err,
                      preBalances: entry.meta.preBalances,
                      postBalances: entry.meta.postBalances,
                      preTokenBalances: entry.meta.preTokenBalances ?? null,
                      postTokenBalances: entry.meta.postTokenBalances ?? null
                    }
            }
            return decodeSolanaTransaction(tx, header, (mint) => currencyOfMint.get(mint))
          })
          return {
            block: { ...header, timestamp: block.blockTime ?? 0, transfers },
            parentSlot: BigInt(block.parentSlot)
          }
        }),
        Effect.mapError(rpcError(`getBlock ${slot}`))
      )

    /**
     * The first slot this node still holds (`getFirstAvailableBlock`): a node without long-term storage
     * lists from there and silently leaves out the slots before it. Asked again when a minute old or when
     * the range starts near it (it only rises, as the node frees its oldest slots).
     */
    let ledgerStart: { readonly slot: bigint; readonly at: number } | undefined
    const firstAvailable = (from: bigint) =>
      ledgerStart !== undefined &&
      Date.now() - ledgerStart.at < 60_000 &&
      from >= ledgerStart.slot + LEDGER_START_MARGIN
        ? Effect.succeed(ledgerStart.slot)
        : Effect.tryPromise({
            try: () => connection.getFirstAvailableBlock(),
            catch: rpcError("getFirstAvailableBlock")
          }).pipe(
            Effect.map(BigInt),
            Effect.tap((slot) =>
              Effect.sync(() => {
                ledgerStart = { slot, at: Date.now() }
              })
            )
          )

    /** The read's failure when the node does not hold the whole range: which slots, and what to do. */
    const notHeld = (from: bigint, to: bigint, why: string) =>
      new ChainRpcError({
        chain: "SOLANA",
        message: `slots ${from}–${to} cannot be read from this node: ${why}; a node that keeps them (an archive, or one with longer ledger retention) must read them`
      })

    /**
     * The produced slots of the range come from `getBlocks`; each of them must then be readable, and the
     * answer must prove it left nothing out: each block's parent is the block before it in the answer, the
     * first block's parent lies before the range, and a range with nothing listed at its start starts at or
     * after the node's first available slot. A node without the old ledger lists only what it holds, and its
     * silence read as skipped slots made the indexer pass blocks it never read. A slot the node cannot give
     * (-32007 after a snapshot jump, -32009 missing in long-term storage) fails the batch the same way.
     */
    const blocks = (from: bigint, to: bigint) =>
      Effect.gen(function* () {
        const listed = yield* Effect.tryPromise({
          try: () => connection.getBlocks(Number(from), Number(to), "confirmed"),
          catch: rpcError("getBlocks")
        })
        const read = yield* Effect.forEach(
          listed.filter((s) => s >= Number(from) && s <= Number(to)),
          (s) => fetchBlock(BigInt(s)),
          { concurrency: 8 }
        )
        const first = read[0]
        if (first === undefined || first.block.number > from) {
          const start = yield* firstAvailable(from)
          if (from < start)
            return yield* notHeld(
              from,
              start - 1n < to ? start - 1n : to,
              `its ledger starts at slot ${start} (getFirstAvailableBlock)`
            )
        }
        for (const [i, { block, parentSlot }] of read.entries()) {
          const previous = read[i - 1]?.block
          if (previous !== undefined && parentSlot === previous.number && block.parentHash !== previous.hash) {
            return yield* new ChainRpcError({
              chain: "SOLANA",
              message: `slot ${block.number} does not extend slot ${previous.number} as read (a fork while the range was read); read it again`
            })
          }
          // a block naming itself as its parent has none (the genesis block): nothing before it to leave out
          const linked =
            previous === undefined ? parentSlot < from || parentSlot === block.number : parentSlot === previous.number
          if (!linked) {
            return yield* notHeld(
              previous === undefined ? from : previous.number + 1n,
              block.number - 1n,
              `slot ${block.number}'s parent is slot ${parentSlot}, which its answer does not hold`
            )
          }
        }
        return read.map((r) => r.block)
      })

    /** At a commitment, with the slot the node answered at (the token account's, when there is one). */
    const balanceAt = (owner: string, currency: string, commitment: "confirmed" | "finalized") =>
      Effect.gen(function* () {
        const key = publicKey(owner)
        if (Option.isNone(key))
          return yield* new ChainRpcError({ chain: "SOLANA", message: `not a Solana address: ${owner}` })
        if (currency === NATIVE) {
          const native = yield* Effect.tryPromise({
            try: () => connection.getBalanceAndContext(key.value, commitment),
            catch: rpcError("getBalance")
          })
          return { balance: BigInt(native.value), height: BigInt(native.context.slot) }
        }
        const token = settings.tokens.get(currency)
        if (token === undefined)
          return yield* new ChainRpcError({ chain: "SOLANA", message: `no mint configured for ${currency}` })
        const ata = getAssociatedTokenAddressSync(new PublicKey(token.mint), key.value, true)
        const exists = yield* Effect.tryPromise({
          try: () => connection.getAccountInfoAndContext(ata, commitment),
          catch: rpcError("getAccountInfo")
        })
        if (exists.value === null) return { balance: 0n, height: BigInt(exists.context.slot) }
        const amount = yield* Effect.tryPromise({
          try: () => connection.getTokenAccountBalance(ata, commitment),
          catch: rpcError("getTokenAccountBalance")
        })
        return { balance: BigInt(amount.value.amount), height: BigInt(amount.context.slot) }
      })
    const balance = (owner: string, currency: string) =>
      Effect.map(balanceAt(owner, currency, "confirmed"), (b) => b.balance)
    const finalBalance = (owner: string, currency: string) => balanceAt(owner, currency, "finalized")

    const keyAddress = (ref: KeyRef) =>
      Effect.flatMap(signer.deriveAddresses("SOLANA", ref.account, [ref.index]), ([key]) =>
        key === undefined
          ? Effect.die(new Error("the signer derived no address"))
          : Effect.succeed(new PublicKey(key.address))
      )

    /**
     * A legacy transaction signed by the sender and, when another key pays (custody's sweeps: the platform
     * gas wallet), by that fee payer too; the fee payer also pays the rent of a recipient's new token
     * account. It carries a recent blockhash, and its lastValidBlockHeight bounds when it can land.
     */
    const prepare = (request: TransferRequest) =>
      Effect.gen(function* () {
        if (request.from.family !== "SOLANA")
          return yield* new TransferRejected({ chain: "SOLANA", message: "Solana transfers need a Solana key" })
        const to = publicKey(request.to)
        if (Option.isNone(to))
          return yield* new TransferRejected({ chain: "SOLANA", message: `not a Solana address: ${request.to}` })
        const from = yield* keyAddress(request.from)
        const payerRef = request.feePayer ?? request.from
        if (payerRef.family !== "SOLANA")
          return yield* new TransferRejected({ chain: "SOLANA", message: "the fee payer needs a Solana key" })
        const payer = yield* keyAddress(payerRef)
        const latest = yield* Effect.tryPromise({
          try: () => connection.getLatestBlockhash("confirmed"),
          catch: rpcError("getLatestBlockhash")
        })
        const tx = new Transaction({
          feePayer: payer,
          blockhash: latest.blockhash,
          lastValidBlockHeight: latest.lastValidBlockHeight
        })
        let rent = 0n
        let closed: bigint | undefined
        if (request.action?._tag === "CloseTokenAccount") {
          const token = settings.tokens.get(request.currency)
          if (token === undefined)
            return yield* new TransferRejected({
              chain: "SOLANA",
              message: `no mint configured for ${request.currency}`
            })
          const account = getAssociatedTokenAddressSync(new PublicKey(token.mint), from, true)
          const info = yield* Effect.tryPromise({
            try: () => connection.getAccountInfo(account, "confirmed"),
            catch: rpcError("getAccountInfo")
          })
          if (info === null)
            return yield* new TransferRejected({
              chain: "SOLANA",
              message: `${account.toBase58()} is no token account`
            })
          // the token program refuses to close an account that holds tokens: a deposit since the sweep stays
          const held = info.data.length >= 72 ? Buffer.from(info.data).readBigUInt64LE(64) : 0n
          if (held > 0n)
            return yield* new TransferRejected({
              chain: "SOLANA",
              message: `${account.toBase58()} holds ${held} base units of ${request.currency} again: not closed`
            })
          closed = BigInt(info.lamports)
          tx.add(createCloseAccountInstruction(account, to.value, from))
        } else if (request.currency === NATIVE) {
          tx.add(SystemProgram.transfer({ fromPubkey: from, toPubkey: to.value, lamports: request.amount }))
        } else {
          const token = settings.tokens.get(request.currency)
          if (token === undefined)
            return yield* new TransferRejected({
              chain: "SOLANA",
              message: `no mint configured for ${request.currency}`
            })
          const mint = new PublicKey(token.mint)
          const source = getAssociatedTokenAddressSync(mint, from, true)
          const destination = getAssociatedTokenAddressSync(mint, to.value, true)
          const exists = yield* Effect.tryPromise({
            try: () => connection.getAccountInfo(destination, "confirmed"),
            catch: rpcError("getAccountInfo")
          })
          if (exists === null) {
            rent = BigInt(
              yield* Effect.tryPromise({
                try: () => connection.getMinimumBalanceForRentExemption(TOKEN_ACCOUNT_SIZE),
                catch: rpcError("getMinimumBalanceForRentExemption")
              })
            )
          }
          // the recipient's associated token account is created in the same transaction when missing
          tx.add(
            createAssociatedTokenAccountIdempotentInstruction(payer, destination, to.value, mint),
            createTransferCheckedInstruction(source, mint, destination, from, request.amount, token.decimals)
          )
        }
        const signers = payer.equals(from)
          ? [[request.from, from] as const]
          : [[payerRef, payer] as const, [request.from, from] as const]
        yield* checkFeeCap(
          "SOLANA",
          request.feeCap,
          BigInt(LAMPORTS_PER_SIGNATURE * signers.length) + rent,
          BigInt(LAMPORTS_PER_SIGNATURE)
        )
        const message = tx.serializeMessage()
        for (const [ref, key] of signers) tx.addSignature(key, Buffer.from(yield* signer.signMessage(ref, message)))
        const signature = tx.signature
        if (signature === null) return yield* Effect.die(new Error("the transaction has no fee-payer signature"))
        return {
          txHash: base58.encode(signature),
          raw: tx.serialize().toString("base64"),
          from: from.toBase58(),
          feePayer: payer.toBase58(),
          nonce: Option.none(),
          validUntil: Option.some(BigInt(latest.lastValidBlockHeight)),
          maxFee: BigInt(LAMPORTS_PER_SIGNATURE * signers.length) + rent,
          gasPrice: BigInt(LAMPORTS_PER_SIGNATURE),
          ...(closed === undefined ? {} : { amount: closed })
        } satisfies SignedTransfer
      })

    /**
     * Sent once, 429 or not, with preflight on (a transfer the bank would refuse is refused before it is
     * sent); the answer read by its structure (solana-send-answer.ts): only a -32002 preflight failure of an
     * HTTP 200 answer is a refusal, never a status or a body's words.
     */
    const broadcast = (raw: string): Effect.Effect<void, ChainRpcError | TransferRejected> =>
      Effect.gen(function* () {
        const answer = yield* Effect.tryPromise({
          try: async (signal) => {
            const response = await budgeted.send(settings.rpcUrl, {
              method: "POST",
              headers: { "content-type": "application/json", ...settings.headers },
              body: JSON.stringify({
                jsonrpc: "2.0",
                id: 1,
                method: "sendTransaction",
                params: [
                  raw,
                  { encoding: "base64", skipPreflight: false, preflightCommitment: "confirmed", maxRetries: 0 }
                ]
              }),
              signal
            })
            return solanaSendAnswer(response.status, await response.text())
          },
          catch: rpcError("sendTransaction")
        })
        if (answer._tag === "sent") return
        if (answer._tag === "refused") return yield* new TransferRejected({ chain: "SOLANA", message: answer.message })
        return yield* new ChainRpcError({ chain: "SOLANA", message: `sendTransaction: ${answer.message}` })
      })

    /** An answer that the node has no such block: skipped, pruned (-32007, -32009), not yet (-32004), or none. */
    const noSuchBlock = (cause: unknown) =>
      (cause instanceof SolanaJSONRPCError &&
        (cause.code === -32004 || cause.code === -32007 || cause.code === -32009)) ||
      (cause instanceof Error && /not found/i.test(cause.message))

    /** A final block's signatures and links, or none where the node does not have it (skipped, pruned, not final). */
    const finalBlock = (slot: number) =>
      Effect.tryPromise({ try: () => connection.getBlockSignatures(slot, "finalized"), catch: (cause) => cause }).pipe(
        Effect.map((block) => Option.some(block)),
        Effect.catchAll((cause) =>
          noSuchBlock(cause)
            ? Effect.succeed(Option.none<BlockSignatures>())
            : Effect.fail(rpcError(`getBlock ${slot}`)(cause))
        )
      )

    /**
     * The hash of the block in `slot` at the finalized commitment (what the indexer compares at the final
     * height: a node on another branch has no such finalized block), without its transactions; none for a
     * skipped, missing or not yet finalized slot.
     */
    const blockHash = (slot: bigint) =>
      Effect.tryPromise({
        try: () =>
          connection.getBlock(Number(slot), {
            commitment: "finalized",
            transactionDetails: "none",
            rewards: false,
            maxSupportedTransactionVersion: 0
          }),
        catch: (cause) => cause
      }).pipe(
        Effect.map((block) => Option.map(Option.fromNullable(block), (b) => b.blockhash)),
        Effect.catchAll((cause) =>
          noSuchBlock(cause) ? Effect.succeed(Option.none<string>()) : Effect.fail(rpcError(`getBlock ${slot}`)(cause))
        )
      )

    const heightOf = (slot: number) =>
      Effect.tryPromise({
        try: () =>
          connection.getBlock(slot, {
            commitment: "finalized",
            transactionDetails: "none",
            rewards: false,
            maxSupportedTransactionVersion: 0
          }),
        catch: rpcError(`getBlock ${slot}`)
      }).pipe(
        Effect.flatMap((block) => Schema.decodeUnknown(BlockHeight)(block)),
        Effect.mapError((e) => (e._tag === "ChainRpcError" ? e : rpcError(`getBlock ${slot}`)(e)))
      )

    /**
     * Past lastValidBlockHeight at the finalized commitment, its blockhash has expired for good; whether it
     * landed is read from the final blocks themselves, not a signature lookup (a node with short ledger
     * retention, or another node behind the URL, does not know it): from a final block past that height back,
     * parent by parent (each one's hash checked against its child's link), to the block of the blockhash it
     * was signed with — every block it could have landed in.
     */
    const landing = (window: LandingWindow) =>
      Effect.gen(function* () {
        if (Option.isNone(window.validUntil)) return LandingEvidence.Open()
        const lastValid = Number(window.validUntil.value)
        const recent = yield* Effect.try({
          try: () => Transaction.from(Buffer.from(window.raw, "base64")).recentBlockhash,
          catch: rpcError("stored transaction")
        })
        let slot: number = yield* Effect.tryPromise({
          try: () => connection.getSlot("finalized"),
          catch: rpcError("getSlot")
        })
        const finalHeight = (yield* heightOf(slot)).blockHeight
        if (finalHeight === null || finalHeight <= lastValid) return LandingEvidence.Open()
        let height: number = finalHeight
        // a final block just past lastValidBlockHeight, so the walk back is short even long after the fact:
        // no block at or after `slot - over` can be lower than the first past it (slots outnumber blocks)
        for (let tries = 0; tries < 16 && height - lastValid > 16; tries++) {
          const over: number = height - lastValid - 1
          // nodes list at most 500,000 slots at once: the first produced slot is in the range's start anyway
          const produced: ReadonlyArray<number> = yield* Effect.tryPromise({
            try: () =>
              connection.getBlocks(
                slot - over,
                Math.min(slot - 1, slot - over + MAX_GET_BLOCKS_RANGE - 1),
                "finalized"
              ),
            catch: rpcError("getBlocks")
          })
          const first = produced[0]
          if (first === undefined) break
          const earlier: number | null = (yield* heightOf(first)).blockHeight
          if (earlier === null || earlier <= lastValid) break
          slot = first
          height = earlier
        }
        const limit = height - lastValid + MAX_BLOCKHASH_AGE_BLOCKS + 150
        let block = yield* finalBlock(slot)
        for (let read = 0; ; read++) {
          if (Option.isNone(block))
            return LandingEvidence.Unproven({
              reason: `final block ${slot}, within its validity window, cannot be read from the node`
            })
          if (block.value.signatures.includes(window.txHash))
            return LandingEvidence.Landed({ blockNumber: BigInt(slot) })
          // nothing before the block of its blockhash can hold it (checked after: the devnet's own block may)
          if (block.value.blockhash === recent)
            return LandingEvidence.NeverLanded({
              blocks: read + 1,
              proof: `every final block of its validity window read (${read + 1}): in none`
            })
          if (read >= limit)
            return LandingEvidence.Unproven({
              reason: `its blockhash ${recent} is not among the ${read} final blocks before slot ${slot}`
            })
          const child = block.value
          slot = child.parentSlot
          block = yield* finalBlock(slot)
          if (Option.isSome(block) && block.value.blockhash !== child.previousBlockhash) {
            return LandingEvidence.Unproven({
              reason: `block ${slot} is not the parent its child names (nodes disagree on final blocks)`
            })
          }
        }
      })

    /**
     * What the transfer costs whoever pays its fee: a signature each for the sender and a separate fee
     * payer, and the rent of the recipient's token account when it does not exist yet.
     */
    const feeEstimate = (request: { readonly to: string; readonly currency: string; readonly sponsored: boolean }) =>
      Effect.gen(function* () {
        const signatures = BigInt(LAMPORTS_PER_SIGNATURE * (request.sponsored ? 2 : 1))
        const token = settings.tokens.get(request.currency)
        const owner = publicKey(request.to)
        if (request.currency === NATIVE || token === undefined || Option.isNone(owner)) return signatures
        const account = getAssociatedTokenAddressSync(new PublicKey(token.mint), owner.value, true)
        const exists = yield* Effect.tryPromise({
          try: () => connection.getAccountInfo(account, "confirmed"),
          catch: rpcError("getAccountInfo")
        })
        if (exists !== null) return signatures
        const rent = yield* Effect.tryPromise({
          try: () => connection.getMinimumBalanceForRentExemption(TOKEN_ACCOUNT_SIZE),
          catch: rpcError("getMinimumBalanceForRentExemption")
        })
        return signatures + BigInt(rent)
      })

    const transaction = (signature: string) =>
      Effect.gen(function* () {
        const statuses = yield* Effect.tryPromise({
          try: () => connection.getSignatureStatuses([signature], { searchTransactionHistory: true }),
          catch: rpcError("getSignatureStatuses")
        })
        const status = statuses.value[0]
        if (status === null || status === undefined) return Option.none()
        const tip = yield* head
        const included = yield* Effect.tryPromise({
          try: () =>
            connection.getParsedTransaction(signature, { commitment: "confirmed", maxSupportedTransactionVersion: 0 }),
          catch: rpcError("getTransaction")
        })
        return Option.some({
          status: status.err === null ? ("success" as const) : ("failed" as const),
          blockNumber: Option.some(BigInt(status.slot)),
          confirmations: Number(tip - BigInt(status.slot) + 1n),
          fee: Option.fromNullable(included?.meta?.fee).pipe(Option.map(BigInt)),
          // the fee payer is the first account of the message
          ...(included?.meta?.preBalances[0] === undefined || included.meta.postBalances[0] === undefined
            ? {}
            : { payerSpent: BigInt(included.meta.preBalances[0]) - BigInt(included.meta.postBalances[0]) })
        })
      })

    const tip = Effect.map(Effect.all([head, finalized], { concurrency: 2 }), ([h, f]) => ({ head: h, finalized: f }))

    const finalInclusion = (signature: string, slot: bigint) =>
      Effect.map(
        finalBlock(Number(slot)),
        Option.exists((b) => b.signatures.includes(signature))
      )

    const nodeChecks = throttleCheck("SOLANA", budget, budgeted.state)
    return {
      chain: "SOLANA",
      skipsNumbers: true,
      nodeChecks,
      genesis,
      head,
      finalized,
      tip,
      blockHash,
      finalInclusion,
      blocks,
      balance,
      finalBalance,
      prepare,
      broadcast,
      landing,
      feeEstimate,
      finalNonce: () => Effect.succeed(0n),
      transaction
    } satisfies ChainClient
  })
