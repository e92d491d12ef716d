import { base58 } from "@scure/base"
import { Either, Schema } from "effect"
import { createHash } from "node:crypto"
import { LiteSVM } from "litesvm"
import { fromBaseUnits } from "../../money.js"
import {
  BLOCKHASH_VALIDITY_SLOTS,
  type RecordedTx,
  RpcFailure,
  type SolanaDevnetChain,
  type TokenHolding
} from "./solana-chain.js"

/**
 * Solana's JSON-RPC over the devnet's chain: method dispatch and the wire shapes of answers. Enough of the RPC
 * surface for the web3.js client: getSlot, getBlock (jsonParsed), getBalance, getTokenAccountBalance,
 * getAccountInfo, getLatestBlockhash, sendTransaction, getSignatureStatuses, requestAirdrop.
 */

const RpcRequest = Schema.Struct({
  jsonrpc: Schema.optional(Schema.String),
  id: Schema.optional(Schema.Union(Schema.Number, Schema.String, Schema.Null)),
  method: Schema.String,
  params: Schema.optionalWith(Schema.Array(Schema.Unknown), { default: () => [] })
})

const commitmentOf = (param: unknown) => {
  const value = typeof param === "object" && param !== null && "commitment" in param ? param.commitment : undefined
  return value === "processed" || value === "confirmed" || value === "finalized" ? value : "finalized"
}

const renderTokenBalance = (b: { accountIndex: number } & TokenHolding) => ({
  accountIndex: b.accountIndex,
  mint: b.mint,
  owner: b.owner,
  programId: b.programId,
  uiTokenAmount: {
    amount: b.amount.toString(),
    decimals: b.decimals,
    // uiAmount is the protocol's float display field; `amount` and `uiAmountString` are exact
    uiAmount: Number(fromBaseUnits(b.amount, b.decimals)),
    uiAmountString: fromBaseUnits(b.amount, b.decimals)
  }
})

const renderTx = (tx: RecordedTx) => ({
  transaction: {
    signatures: tx.signatures,
    message: { accountKeys: tx.accountKeys, instructions: tx.instructions, recentBlockhash: tx.recentBlockhash }
  },
  meta: {
    err: tx.err,
    status: tx.err === null ? { Ok: null } : { Err: tx.err },
    fee: tx.fee,
    preBalances: tx.preBalances,
    postBalances: tx.postBalances,
    innerInstructions: [],
    logMessages: tx.logs,
    preTokenBalances: tx.preTokenBalances.map(renderTokenBalance),
    postTokenBalances: tx.postTokenBalances.map(renderTokenBalance),
    rewards: []
  },
  version: tx.version
})

/** `transactionDetails: "accounts"`: account keys and signatures, balances in meta, no instructions. */
const renderAccountsOnly = (tx: RecordedTx) => {
  const full = renderTx(tx)
  return {
    transaction: { signatures: tx.signatures, accountKeys: tx.accountKeys },
    meta: {
      err: full.meta.err,
      status: full.meta.status,
      fee: full.meta.fee,
      preBalances: full.meta.preBalances,
      postBalances: full.meta.postBalances,
      preTokenBalances: full.meta.preTokenBalances,
      postTokenBalances: full.meta.postTokenBalances
    },
    version: tx.version
  }
}

/** Answers a JSON-RPC body (one request or a batch) with the JSON value to send back; HTTP is the server's. */
export const makeSolanaRpc = (chain: SolanaDevnetChain) => {
  const context = () => ({ slot: chain.processed })
  // reads at a commitment: `finalized` sees the finalized slot's state and says which slot that is
  const readAt = (param: unknown) => {
    const commitment = commitmentOf(param)
    return {
      svm: chain.stateAt(commitment),
      context: { slot: commitment === "finalized" ? chain.finalized : chain.processed }
    }
  }
  const handle = (method: string, params: ReadonlyArray<unknown>): unknown => {
    const [first, second] = params
    switch (method) {
      case "getSlot":
      case "getBlockHeight": {
        const c = commitmentOf(first)
        return c === "processed" ? chain.processed : c === "confirmed" ? chain.confirmed : chain.finalized
      }
      case "getLatestBlockhash":
        return {
          context: context(),
          value: {
            blockhash: chain.latestBlockhash,
            lastValidBlockHeight: chain.processed + BLOCKHASH_VALIDITY_SLOTS
          }
        }
      case "getBalance": {
        const at = readAt(second)
        // lamports are a JSON number on Solana's wire; devnet balances stay far below 2^53
        return { context: at.context, value: Number(chain.balance(String(first), at.svm)) }
      }
      case "getTokenAccountBalance": {
        const at = readAt(second)
        const holding = chain.tokenHolding(String(first), at.svm)
        if (holding === undefined) throw new RpcFailure(-32602, "Invalid param: could not find account")
        return { context: at.context, value: renderTokenBalance({ accountIndex: 0, ...holding }).uiTokenAmount }
      }
      case "getAccountInfo": {
        const at = readAt(second)
        const account = chain.account(String(first), at.svm)
        return {
          context: at.context,
          value:
            account === undefined
              ? null
              : {
                  data: [Buffer.from(account.data).toString("base64"), "base64"],
                  executable: account.executable,
                  lamports: Number(account.lamports),
                  owner: String(account.programAddress),
                  rentEpoch: 0,
                  space: account.data.length
                }
        }
      }
      case "getMinimumBalanceForRentExemption":
        return Number(new LiteSVM().minimumBalanceForRentExemption(BigInt(Number(first ?? 0))))
      case "getBlocks": {
        // every slot of the devnet has a block: none is skipped
        const c = commitmentOf(typeof second === "object" ? second : params[2])
        const top = c === "finalized" ? chain.finalized : chain.confirmed
        const end = Math.min(typeof second === "number" ? second : top, top)
        const slots: Array<number> = []
        for (let s = Number(first); s <= end; s++) if (chain.blocks.has(s)) slots.push(s)
        return slots
      }
      case "getFirstAvailableBlock":
        // the devnet keeps its whole ledger, as a node with full history (whose answer is 0)
        return 0
      case "getBlock": {
        const slot = Number(first)
        const block = chain.blocks.get(slot)
        if (block === undefined || slot > chain.confirmed)
          throw new RpcFailure(-32004, `Block not available for slot ${slot}`)
        if (commitmentOf(second) === "finalized" && slot > chain.finalized)
          throw new RpcFailure(-32004, `Block not available for slot ${slot}`)
        const details =
          typeof second === "object" && second !== null && "transactionDetails" in second
            ? second.transactionDetails
            : "full"
        const header = {
          blockhash: block.blockhash,
          previousBlockhash: block.previousBlockhash,
          parentSlot: block.parentSlot,
          blockTime: block.blockTime,
          blockHeight: block.slot
        }
        // like a real node: "signatures" lists the first signature of each transaction, "none" leaves them out
        if (details === "signatures") return { ...header, signatures: block.txs.map((tx) => tx.signature) }
        if (details === "none") return header
        return {
          ...header,
          transactions: block.txs.map((tx) => (details === "accounts" ? renderAccountsOnly(tx) : renderTx(tx))),
          rewards: []
        }
      }
      case "getTransaction": {
        const found = chain.signatures.get(String(first))
        const tx =
          found === undefined ? undefined : chain.blocks.get(found.slot)?.txs.find((t) => t.signature === first)
        if (found === undefined || tx === undefined) return null
        return { slot: found.slot, blockTime: chain.blocks.get(found.slot)?.blockTime ?? null, ...renderTx(tx) }
      }
      case "sendTransaction": {
        const opts = typeof second === "object" && second !== null ? Object.fromEntries(Object.entries(second)) : {}
        const bytes = opts.encoding === "base64" ? Buffer.from(String(first), "base64") : base58.decode(String(first))
        return chain.submit(bytes, opts.skipPreflight === true)
      }
      case "getSignatureStatuses": {
        const list = Array.isArray(first) ? first : []
        return {
          context: context(),
          value: list.map((sig) => {
            const found = chain.signatures.get(String(sig))
            if (found === undefined) return null
            const status =
              found.slot <= chain.finalized ? "finalized" : found.slot <= chain.confirmed ? "confirmed" : "processed"
            return {
              slot: found.slot,
              confirmations: status === "finalized" ? null : chain.processed - found.slot,
              err: found.err,
              status: found.err === null ? { Ok: null } : { Err: found.err },
              confirmationStatus: status
            }
          })
        }
      }
      case "requestAirdrop":
        chain.airdrop(String(first), BigInt(Number(second ?? 0)))
        return base58.encode(
          createHash("sha256")
            .update(`airdrop-${String(first)}-${Date.now()}-${Math.random()}`)
            .digest()
            .subarray(0, 64)
        )
      case "getGenesisHash":
        return chain.genesisHash
      case "getVersion":
        return { "solana-core": "litesvm-devnet", "feature-set": 0 }
      case "getHealth":
        return "ok"
      case "devnet_mintUsdt":
        return chain.mintUsdt(String(first), BigInt(String(second ?? "0")))
      case "devnet_reorg":
        chain.reorg(Number(first ?? 1), second === true, Date.now())
        return { slot: chain.processed }
      default:
        throw new RpcFailure(-32601, `Method not found: ${method}`)
    }
  }

  const one = (raw: unknown) => {
    const request = Schema.decodeUnknownEither(RpcRequest)(raw)
    if (Either.isLeft(request)) return { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid request" } }
    try {
      return {
        jsonrpc: "2.0",
        id: request.right.id ?? null,
        result: handle(request.right.method, request.right.params)
      }
    } catch (error) {
      const code = error instanceof RpcFailure ? error.code : -32603
      return {
        jsonrpc: "2.0",
        id: request.right.id ?? null,
        error: {
          code,
          message: error instanceof Error ? error.message : String(error),
          ...(error instanceof RpcFailure && error.data !== undefined ? { data: error.data } : {})
        }
      }
    }
  }

  return (body: string): unknown => {
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch {
      return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }
    }
    return Array.isArray(parsed) ? parsed.map(one) : one(parsed)
  }
}
