import { Effect, Either, Schedule, Schema } from "effect"
import { createHash } from "node:crypto"
import * as http from "node:http"
import { TronTransaction } from "../../chains/tron/tron-decoding.js"
import { tronAddress, tronHex41 } from "../../keys/address-encoding.js"
import { serveOnLoopback } from "../loopback-server.js"
import { resumeFromJournal } from "../devnet-journal.js"
import {
  FORWARDER_CONTRACT,
  type LedgerBlock,
  Rejection,
  TronLedger,
  TronLedgerOp,
  type TxOutcome
} from "./tron-ledger.js"

/** The format of the TRON devnet's journal; a journal of another format is refused, not misread. */
const JOURNAL_VERSION = 1

export interface TronDevnet {
  readonly url: string
  readonly tokens: { readonly USDT: string }
  /** The built-in TRX forwarder contract (base58). */
  readonly forwarder: string
  readonly ledger: TronLedger
}

/** A deterministic devnet contract address for a token symbol (`41…` hex). */
const devnetContract = (symbol: string) =>
  `41${createHash("sha256").update(`facet-devnet-trc20-${symbol}`).digest("hex").slice(0, 40)}`

const toBase58 = (hex41: string) => tronAddress(Buffer.from(hex41.slice(2), "hex"))

const num = (value: bigint) => Number(value)

const renderTx = (outcome: TxOutcome) => ({
  ...outcome.tx,
  ret: [{ contractRet: outcome.contractRet, fee: num(outcome.fee) }]
})

const renderBlock = (block: LedgerBlock) => ({
  blockID: block.blockID,
  block_header: {
    raw_data: {
      number: block.number,
      txTrieRoot: "0".repeat(64),
      witness_address: "41" + "0".repeat(40),
      parentHash: block.parentHash,
      version: 30,
      timestamp: block.timestamp
    },
    witness_signature: "00".repeat(65)
  },
  // like a real node, an empty block has no transactions key
  ...(block.outcomes.length === 0 ? {} : { transactions: block.outcomes.map(renderTx) })
})

const renderInfo = (block: LedgerBlock, outcome: TxOutcome) => {
  const trigger = outcome.contractAddress !== undefined
  return {
    id: outcome.tx.txID,
    ...(outcome.fee > 0n ? { fee: num(outcome.fee) } : {}),
    blockNumber: block.number,
    blockTimeStamp: block.timestamp,
    contractResult: [outcome.contractRet === "SUCCESS" && trigger ? "0".repeat(63) + "1" : ""],
    ...(trigger ? { contract_address: outcome.contractAddress } : {}),
    receipt: trigger ? { energy_fee: num(outcome.fee), result: outcome.contractRet } : { net_fee: num(outcome.fee) },
    ...(outcome.log.length > 0 ? { log: outcome.log } : {}),
    // java-tron's shape: hex addresses, the TRX value without tokenId, note = hex("call"), rejected only when true
    ...(outcome.internal === undefined || outcome.internal.length === 0
      ? {}
      : {
          internal_transactions: outcome.internal.map((leg, i) => ({
            hash: createHash("sha256").update(`${outcome.tx.txID}:${i}`).digest("hex"),
            caller_address: leg.caller,
            transferTo_address: leg.to,
            callValueInfo: [leg.callValue > 0n ? { callValue: num(leg.callValue) } : {}],
            note: Buffer.from("call").toString("hex"),
            ...(leg.rejected ? { rejected: true } : {})
          }))
        }),
    ...(outcome.contractRet === "SUCCESS"
      ? {}
      : { result: "FAILED", resMessage: Buffer.from(outcome.contractRet).toString("hex") })
  }
}

const Body = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** A ledger rebuilt from its journal, recording every change it makes from now on. */
const journaledLedger = (file: string, tokens: ReadonlyMap<string, string>, solidLag: number) =>
  Effect.gen(function* () {
    const { devnet: ledger, replayed } = yield* resumeFromJournal({
      file,
      kind: "facet-tron-devnet",
      version: JOURNAL_VERSION,
      op: TronLedgerOp,
      make: (header) => new TronLedger(tokens, solidLag, header.createdAt, header.id),
      flushesAfter: (op) => op.op === "block" || op.op === "reorg"
    })
    if (replayed > 0) yield* Effect.logInfo(`TRON devnet resumed at block ${ledger.head.number} from ${file}`)
    return ledger
  })

/**
 * A TRON node's HTTP API for the devnet: the subset the client uses (`/wallet/*`, `/walletsolidity/*`),
 * over the TronLedger's rules, producing a block every `blockTimeMs` with solidity `solidLag` blocks
 * behind. `/devnet/fund`, `/devnet/reorg` (`depth`, or `from` a block number) and `/devnet/blacklist` (a sender the token
 * refuses) are the devnet's own controls.
 */
export const startTronDevnet = (
  options: {
    readonly blockTimeMs?: number
    readonly solidLag?: number
    readonly port?: number
    /** Ports it must not take (the service's HTTP port, bound after the devnets start). */
    readonly avoidPorts?: ReadonlyArray<number>
    /** Where the chain is kept: its journal is replayed at start and every change appended to it. */
    readonly journalFile?: string
  } = {}
) =>
  Effect.gen(function* () {
    const usdt = devnetContract("USDT")
    const tokens = new Map([[usdt, "USDT"]])
    const solidLag = options.solidLag ?? 3
    const ledger =
      options.journalFile === undefined
        ? new TronLedger(tokens, solidLag, Date.now())
        : yield* journaledLedger(options.journalFile, tokens, solidLag)
    ledger.produce(Date.now())

    const handle = (path: string, body: Record<string, unknown>): unknown => {
      const byNum = (n: unknown) => (typeof n === "number" ? ledger.block(n) : undefined)
      switch (path) {
        case "/wallet/getnowblock":
          return renderBlock(ledger.head)
        case "/walletsolidity/getnowblock":
          return renderBlock(ledger.solid)
        case "/wallet/getblock":
        case "/walletsolidity/getblock": {
          // java-tron 4.7.1+: a block by number or id, the newest (solidified) when none is named; its header
          // alone with detail false (what following the head needs, without hundreds of transactions)
          const named = typeof body.id_or_num === "string" && body.id_or_num !== "" ? body.id_or_num : undefined
          const top = path.startsWith("/walletsolidity") ? ledger.solid : ledger.head
          const block = named === undefined ? top : /^\d+$/.test(named) ? ledger.block(Number(named)) : undefined
          if (block === undefined || block.number > top.number) return {}
          const rendered = renderBlock(block)
          return body.detail === true ? rendered : { blockID: rendered.blockID, block_header: rendered.block_header }
        }
        case "/wallet/getblockbynum":
        case "/walletsolidity/getblockbynum": {
          const block = byNum(body.num)
          if (block === undefined || (path.startsWith("/walletsolidity") && block.number > ledger.solid.number))
            return {}
          return renderBlock(block)
        }
        case "/wallet/gettransactioninfobyblocknum": {
          const block = byNum(body.num)
          return block === undefined ? [] : block.outcomes.map((o) => renderInfo(block, o))
        }
        case "/wallet/gettransactionbyid":
        case "/walletsolidity/gettransactionbyid": {
          const found = ledger.findTransaction(String(body.value ?? ""))
          if (found === undefined) return {}
          if (
            path.startsWith("/walletsolidity") &&
            (found.block === undefined || found.block.number > ledger.solid.number)
          )
            return {}
          return found.outcome === undefined ? found.tx : renderTx(found.outcome)
        }
        case "/wallet/gettransactioninfobyid":
        case "/walletsolidity/gettransactioninfobyid": {
          const found = ledger.findTransaction(String(body.value ?? ""))
          if (found?.block === undefined || found.outcome === undefined) return {}
          if (path.startsWith("/walletsolidity") && found.block.number > ledger.solid.number) return {}
          return renderInfo(found.block, found.outcome)
        }
        case "/wallet/getaccount":
        case "/walletsolidity/getaccount": {
          const address = tronHex41(body.address)
          const balance =
            address === undefined
              ? undefined
              : ledger.trxBalance(address, path.startsWith("/walletsolidity") ? ledger.solid.number : undefined)
          if (address === undefined || balance === undefined) return {}
          return {
            address: body.visible === true ? toBase58(address) : address,
            balance: num(balance),
            create_time: ledger.blocks[0]?.timestamp
          }
        }
        case "/wallet/triggerconstantcontract":
        case "/walletsolidity/triggerconstantcontract": {
          const contract = tronHex41(body.contract_address)
          const selector = String(body.function_selector ?? "")
          const parameter = String(body.parameter ?? "")
          if (contract === undefined || !ledger.tokenContracts.has(contract))
            return { result: { code: "CONTRACT_VALIDATE_ERROR", message: Buffer.from("no contract").toString("hex") } }
          if (
            selector === "transfer(address,uint256)" &&
            parameter.length === 128 &&
            !path.startsWith("/walletsolidity")
          ) {
            // a dry run: the energy the call would use (the devnet's model), nothing changes
            return {
              result: { result: true },
              energy_used: Number(ledger.transferEnergy(contract, `41${parameter.slice(24, 64)}`)),
              constant_result: ["1".padStart(64, "0")],
              transaction: {}
            }
          }
          if (selector !== "balanceOf(address)" || parameter.length !== 64)
            return { result: { code: "OTHER_ERROR", message: Buffer.from("unsupported call").toString("hex") } }
          const balance = ledger.tokenBalance(
            contract,
            `41${parameter.slice(24)}`,
            path.startsWith("/walletsolidity") ? ledger.solid.number : undefined
          )
          return {
            result: { result: true },
            energy_used: 800,
            constant_result: [balance.toString(16).padStart(64, "0")],
            transaction: {}
          }
        }
        case "/wallet/getchainparameters":
          return { chainParameter: TronLedger.chainParameters }
        case "/wallet/broadcasttransaction": {
          const tx = Schema.decodeUnknownEither(TronTransaction)(body)
          if (Either.isLeft(tx))
            return { result: false, code: "OTHER_ERROR", message: Buffer.from("malformed transaction").toString("hex") }
          try {
            ledger.accept(tx.right, Date.now())
            return { result: true, txid: tx.right.txID }
          } catch (error) {
            const code = error instanceof Rejection ? error.code : "OTHER_ERROR"
            const message = error instanceof Error ? error.message : String(error)
            return { result: false, code, txid: tx.right.txID, message: Buffer.from(message).toString("hex") }
          }
        }
        case "/devnet/fund": {
          const address = tronHex41(body.address)
          if (address === undefined) throw new Rejection("OTHER_ERROR", "address must be a TRON address")
          ledger.fund(address, String(body.currency ?? "TRX"), BigInt(String(body.amount ?? "0")))
          return { result: true }
        }
        case "/devnet/blacklist": {
          const address = tronHex41(body.address)
          if (address === undefined) throw new Rejection("OTHER_ERROR", "address must be a TRON address")
          ledger.blacklist(address)
          return { result: true }
        }
        case "/devnet/reorg":
          // `from`: replace every block from that number on (the depth counted here, against the head as it
          // is now: a block made between a caller reading the head and asking would shorten its depth)
          ledger.reorg(
            typeof body.from === "number" ? ledger.head.number - body.from + 1 : Number(body.depth ?? 1),
            body.keep_transactions === true,
            Date.now()
          )
          return { result: true, head: ledger.head.number }
        case "/devnet/info":
          return {
            head: ledger.head.number,
            solid: ledger.solid.number,
            tokens: { USDT: toBase58(usdt) },
            forwarder: toBase58(FORWARDER_CONTRACT)
          }
        default:
          return undefined
      }
    }

    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const path = new URL(req.url ?? "/", "http://devnet").pathname
        let body: Record<string, unknown> = {}
        try {
          const text = Buffer.concat(chunks).toString("utf8")
          const parsed = Schema.decodeUnknownEither(Body)(text === "" ? {} : JSON.parse(text))
          if (Either.isRight(parsed)) body = { ...parsed.right }
        } catch {
          res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ Error: "invalid JSON" }))
          return
        }
        try {
          const result = handle(path, body)
          if (result === undefined) {
            res
              .writeHead(404, { "content-type": "application/json" })
              .end(JSON.stringify({ Error: `no such endpoint ${path}` }))
            return
          }
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result))
        } catch (error) {
          res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify({ Error: error instanceof Error ? error.message : String(error) }))
        }
      })
    })
    const url = yield* serveOnLoopback(server, "TRON devnet", options.port, options.avoidPorts)
    yield* Effect.forkScoped(
      Effect.repeat(
        Effect.sync(() => ledger.produce(Date.now())),
        Schedule.spaced(options.blockTimeMs ?? 1000)
      )
    )
    yield* Effect.logInfo(`TRON devnet on ${url}: USDT ${toBase58(usdt)}`)
    return {
      url,
      tokens: { USDT: toBase58(usdt) },
      forwarder: toBase58(FORWARDER_CONTRACT),
      ledger
    } satisfies TronDevnet
  })
