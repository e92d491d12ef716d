import {
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync
} from "@solana/spl-token"
import { Connection, PublicKey, SystemProgram, Transaction } from "@solana/web3.js"
import { Effect, Schema } from "effect"
import { TronWeb } from "tronweb"
import { createWalletClient, http } from "viem"
import { TronBlock, TronTransaction } from "../chains/tron/tron-decoding.js"
import { isHexAddress } from "../keys/address-encoding.js"
import { toBaseUnits } from "../money.js"
import { bep20Customer, signAsTronCustomer, solanaCustomer, tronCustomerAddress } from "./devnet-customers.js"
import type { DevnetFile } from "./devnets.js"
import { tokenAbi } from "./evm/anvil-devnet.js"

/**
 * Payments from the devnets' funded customer accounts: real signed transfers, as a customer's wallet
 * would send them. Used by `npm run pay` and by the tests.
 */
export class PayError extends Schema.TaggedError<PayError>()("PayError", { message: Schema.String }) {}

/** Decimals on chain of every devnet asset (docs/reference/decisions.md). */
export const DECIMALS: Record<string, number> = {
  "TRC20-USDT": 6,
  "TRC20-TRX": 6,
  "BEP20-USDT": 18,
  "BEP20-BNB": 18,
  "BEP20-VELNX": 18,
  "SOLANA-SOL": 9,
  "SOLANA-USDT": 6
}

export const USAGE =
  "usage: npm run pay -- --asset TRC20-USDT --to ADDRESS --amount 12.5   (assets: " +
  Object.keys(DECIMALS).join(", ") +
  ")"

const attempt = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new PayError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

const payBep20 = (devnet: DevnetFile, currency: string, to: string, units: bigint) =>
  Effect.gen(function* () {
    if (!isHexAddress(to)) return yield* new PayError({ message: `not a BEP20 address: ${to}` })
    const recipient = to
    const chain = {
      id: devnet.bep20.chainId,
      name: "facet-devnet",
      nativeCurrency: { name: "BNB", symbol: "BNB", decimals: 18 },
      rpcUrls: { default: { http: [devnet.bep20.rpcUrl] } }
    }
    const wallet = createWalletClient({
      account: bep20Customer,
      chain,
      transport: http(devnet.bep20.rpcUrl, { retryCount: 0 })
    })
    if (currency === "BNB")
      return yield* attempt("send BNB", () => wallet.sendTransaction({ to: recipient, value: units }))
    const token = devnet.bep20.tokens[currency]
    if (token === undefined || !isHexAddress(token))
      return yield* new PayError({ message: `no devnet token ${currency}` })
    const contract = token
    return yield* attempt(`send ${currency}`, () =>
      wallet.writeContract({ address: contract, abi: tokenAbi, functionName: "transfer", args: [recipient, units] })
    )
  })

/** A TRON transaction built by tronweb against the devnet's head, signed by the customer and broadcast. */
const sendAsTronCustomer = (
  devnet: DevnetFile,
  build: (tronWeb: TronWeb, blockHeader: Record<string, unknown>) => Promise<unknown>
) =>
  Effect.gen(function* () {
    const tronWeb = new TronWeb({ fullHost: devnet.tron.url })
    const now = yield* attempt("getnowblock", () => tronWeb.fullNode.request<unknown>("wallet/getnowblock", {}, "post"))
    const block = yield* Schema.decodeUnknown(TronBlock)(now).pipe(
      Effect.mapError(() => new PayError({ message: "unexpected getnowblock answer" }))
    )
    const blockHeader = {
      ref_block_bytes: (block.block_header.raw_data.number & 0xffff).toString(16).padStart(4, "0"),
      ref_block_hash: block.blockID.slice(16, 32),
      expiration: block.block_header.raw_data.timestamp + 60_000,
      timestamp: Date.now()
    }
    const built = yield* attempt("build the transaction", () => build(tronWeb, blockHeader))
    const tx = yield* Schema.decodeUnknown(TronTransaction)(built).pipe(
      Effect.mapError(() => new PayError({ message: "tronweb built no transaction" }))
    )
    const signed = { ...tx, signature: [signAsTronCustomer(tx.txID)] }
    const result = yield* attempt("broadcast", () =>
      tronWeb.fullNode.request<unknown>("wallet/broadcasttransaction", signed, "post")
    )
    const ok = typeof result === "object" && result !== null && "result" in result && result.result === true
    if (!ok) return yield* new PayError({ message: `broadcast refused: ${JSON.stringify(result)}` })
    return tx.txID
  })

const payTron = (devnet: DevnetFile, currency: string, to: string, units: bigint) => {
  if (currency === "TRX")
    return sendAsTronCustomer(devnet, (tronWeb, blockHeader) =>
      tronWeb.transactionBuilder.sendTrx(to, Number(units), tronCustomerAddress, { blockHeader })
    )
  const token = devnet.tron.tokens[currency]
  if (token === undefined) return Effect.fail(new PayError({ message: `no devnet token ${currency}` }))
  return sendAsTronCustomer(
    devnet,
    async (tronWeb, blockHeader) =>
      (
        await tronWeb.transactionBuilder.triggerSmartContract(
          token,
          "transfer(address,uint256)",
          { feeLimit: 30_000_000, txLocal: true, blockHeader },
          [
            { type: "address", value: to },
            { type: "uint256", value: units.toString() }
          ],
          tronCustomerAddress
        )
      ).transaction
  )
}

/**
 * The customer pays through the TRON devnet's forwarder contract (TRX sent on by internal transactions):
 * `forward(to)`, `split(a,b)`, `split3(a,b,c)` or `tryForward(to)` (a sub-call that reverts).
 */
export const payThroughTronForwarder = (
  devnet: DevnetFile,
  method: "forward" | "split" | "split3" | "tryForward",
  recipients: ReadonlyArray<string>,
  sun: bigint
) =>
  sendAsTronCustomer(
    devnet,
    async (tronWeb, blockHeader) =>
      (
        await tronWeb.transactionBuilder.triggerSmartContract(
          devnet.tron.forwarder ?? "",
          `${method}(${recipients.map(() => "address").join(",")})`,
          { feeLimit: 100_000_000, callValue: Number(sun), txLocal: true, blockHeader },
          recipients.map((value) => ({ type: "address", value })),
          tronCustomerAddress
        )
      ).transaction
  )

const paySolana = (devnet: DevnetFile, currency: string, to: string, units: bigint) =>
  Effect.gen(function* () {
    const connection = new Connection(devnet.solana.rpcUrl, "confirmed")
    const recipient = yield* Effect.try({
      try: () => new PublicKey(to),
      catch: () => new PayError({ message: `not a Solana address: ${to}` })
    })
    const { blockhash } = yield* attempt("getLatestBlockhash", () => connection.getLatestBlockhash())
    const tx = new Transaction({ feePayer: solanaCustomer.publicKey, recentBlockhash: blockhash })
    if (currency === "SOL") {
      tx.add(SystemProgram.transfer({ fromPubkey: solanaCustomer.publicKey, toPubkey: recipient, lamports: units }))
    } else {
      const mintAddress = devnet.solana.tokens[currency]
      if (mintAddress === undefined) return yield* new PayError({ message: `no devnet token ${currency}` })
      const mint = new PublicKey(mintAddress)
      const destination = getAssociatedTokenAddressSync(mint, recipient, true)
      tx.add(
        createAssociatedTokenAccountIdempotentInstruction(solanaCustomer.publicKey, destination, recipient, mint),
        createTransferCheckedInstruction(
          getAssociatedTokenAddressSync(mint, solanaCustomer.publicKey),
          mint,
          destination,
          solanaCustomer.publicKey,
          units,
          DECIMALS["SOLANA-USDT"] ?? 6
        )
      )
    }
    tx.sign(solanaCustomer)
    return yield* attempt("sendTransaction", () => connection.sendRawTransaction(tx.serialize(), { maxRetries: 0 }))
  })

export const payFromCustomer = (devnet: DevnetFile, asset: string, to: string, amount: string) =>
  Effect.gen(function* () {
    const decimals = DECIMALS[asset]
    if (decimals === undefined || !/^\d+(\.\d+)?$/.test(amount)) return yield* new PayError({ message: USAGE })
    const units = yield* Effect.try({
      try: () => toBaseUnits(amount, decimals),
      catch: () => new PayError({ message: `${asset} takes at most ${decimals} fractional digits` })
    })
    const [chain = "", currency = ""] = asset.split("-")
    return chain === "BEP20"
      ? yield* payBep20(devnet, currency, to, units)
      : chain === "TRC20"
        ? yield* payTron(devnet, currency, to, units)
        : yield* paySolana(devnet, currency, to, units)
  })
