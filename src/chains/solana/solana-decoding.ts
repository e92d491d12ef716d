import { getAssociatedTokenAddressSync } from "@solana/spl-token"
import { PublicKey } from "@solana/web3.js"
import { Schema } from "effect"
import type { NormalizedTransfer } from "../chain-client.js"

/** The parts of a Solana transaction (getBlock / getTransaction, `json` or `jsonParsed`) we read. */
const AccountKey = Schema.Union(Schema.String, Schema.Struct({ pubkey: Schema.String }))
const TokenBalance = Schema.Struct({
  accountIndex: Schema.Number,
  mint: Schema.String,
  owner: Schema.optional(Schema.String),
  programId: Schema.optional(Schema.String),
  uiTokenAmount: Schema.Struct({ amount: Schema.String })
})
export const SolanaTransaction = Schema.Struct({
  transaction: Schema.Struct({
    signatures: Schema.Array(Schema.String),
    message: Schema.Struct({ accountKeys: Schema.Array(AccountKey) })
  }),
  meta: Schema.NullOr(
    Schema.Struct({
      err: Schema.Unknown,
      preBalances: Schema.Array(Schema.Number),
      postBalances: Schema.Array(Schema.Number),
      preTokenBalances: Schema.optional(Schema.NullOr(Schema.Array(TokenBalance))),
      postTokenBalances: Schema.optional(Schema.NullOr(Schema.Array(TokenBalance))),
      loadedAddresses: Schema.optional(
        Schema.NullOr(Schema.Struct({ writable: Schema.Array(Schema.String), readonly: Schema.Array(Schema.String) }))
      )
    })
  )
})
export type SolanaTransaction = typeof SolanaTransaction.Type

export const SolanaBlock = Schema.Struct({
  blockhash: Schema.String,
  previousBlockhash: Schema.String,
  parentSlot: Schema.Number,
  blockTime: Schema.optional(Schema.NullOr(Schema.Number)),
  transactions: Schema.Array(SolanaTransaction)
})
export type SolanaBlock = typeof SolanaBlock.Type

const keysOf = (tx: SolanaTransaction): ReadonlyArray<string> => {
  const listed = tx.transaction.message.accountKeys.map((k) => (typeof k === "string" ? k : k.pubkey))
  const loaded = tx.meta?.loadedAddresses
  // jsonParsed already lists lookup-table accounts; `json` leaves them in meta.loadedAddresses
  const parsed = tx.transaction.message.accountKeys.some((k) => typeof k !== "string")
  if (parsed || loaded === undefined || loaded === null) return listed
  return [...listed, ...loaded.writable, ...loaded.readonly]
}

const isAssociatedAccount = (account: string, owner: string, mint: string, programId: string): boolean => {
  try {
    return (
      getAssociatedTokenAddressSync(
        new PublicKey(mint),
        new PublicKey(owner),
        true,
        new PublicKey(programId)
      ).toBase58() === account
    )
  } catch {
    return false
  }
}

const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"

/**
 * Deposits in one transaction, from balance changes: a token deposit is a rise of an associated token
 * account's balance (a token account created in the same transaction has no pre-balance: 0), credited to
 * the account's owner; a SOL deposit is a rise of an account's lamports. Failed transactions move
 * nothing. The event index is the index of the account that rose.
 */
export const decodeSolanaTransaction = (
  tx: SolanaTransaction,
  slot: { readonly number: bigint; readonly hash: string; readonly parentHash: string },
  currencyOfMint: (mint: string) => string | undefined,
  nativeCurrency = "SOL"
): ReadonlyArray<NormalizedTransfer> => {
  const meta = tx.meta
  const signature = tx.transaction.signatures[0]
  if (meta === null || signature === undefined) return []
  const success = meta.err === null || meta.err === undefined
  if (!success) return []
  const keys = keysOf(tx)
  const feePayer = keys[0] ?? ""
  const base = {
    chain: "SOLANA" as const,
    txHash: signature,
    blockNumber: slot.number,
    blockHash: slot.hash,
    parentHash: slot.parentHash,
    success
  }
  const transfers: Array<NormalizedTransfer> = []

  const pre = new Map((meta.preTokenBalances ?? []).map((b) => [b.accountIndex, b]))
  const post = meta.postTokenBalances ?? []
  for (const after of post) {
    const currency = currencyOfMint(after.mint)
    const account = keys[after.accountIndex]
    if (currency === undefined || account === undefined || after.owner === undefined) continue
    const delta = BigInt(after.uiTokenAmount.amount) - BigInt(pre.get(after.accountIndex)?.uiTokenAmount.amount ?? "0")
    if (delta <= 0n || !isAssociatedAccount(account, after.owner, after.mint, after.programId ?? TOKEN_PROGRAM))
      continue
    const source = post.find(
      (b) =>
        b.mint === after.mint &&
        BigInt(b.uiTokenAmount.amount) < BigInt(pre.get(b.accountIndex)?.uiTokenAmount.amount ?? "0")
    )
    transfers.push({
      ...base,
      currency,
      eventIndex: after.accountIndex,
      from: source?.owner ?? feePayer,
      to: after.owner,
      amount: delta
    })
  }

  const tokenAccounts = new Set([...(meta.preTokenBalances ?? []), ...post].map((b) => b.accountIndex))
  meta.postBalances.forEach((lamports, index) => {
    const delta = BigInt(lamports) - BigInt(meta.preBalances[index] ?? 0)
    const to = keys[index]
    // a token account's lamports are its rent, not a SOL deposit
    if (delta > 0n && to !== undefined && !tokenAccounts.has(index)) {
      transfers.push({ ...base, currency: nativeCurrency, eventIndex: index, from: feePayer, to, amount: delta })
    }
  })
  return transfers
}
