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

const nonZero = (entries: ReadonlyArray<readonly [string, number | bigint | undefined]>) =>
  Object.fromEntries(entries.filter(([, v]) => v !== undefined && v !== 0 && v !== 0n).map(([k, v]) => [k, Number(v)]))

const renderReceipt = (outcome: TxOutcome, trigger: boolean) => {
  const r = outcome.receipt
  return {
    ...nonZero([
      ["energy_usage", r.energyUsage],
      ["energy_fee", r.energyFee],
      ["energy_usage_total", r.energyTotal],
      ["net_usage", r.netUsage],
      ["net_fee", r.netFee]
    ]),
    ...(trigger ? { result: outcome.contractRet } : {}),
    ...nonZero([["energy_penalty_total", r.energyPenalty]])
  }
}

const renderInfo = (block: LedgerBlock, outcome: TxOutcome) => {
  const trigger = outcome.contractAddress !== undefined
  return {
    id: outcome.tx.txID,
    ...(outcome.fee > 0n ? { fee: num(outcome.fee) } : {}),
    blockNumber: block.number,
    blockTimeStamp: block.timestamp,
    contractResult: [outcome.contractRet === "SUCCESS" && trigger ? "0".repeat(63) + "1" : ""],
    ...(trigger ? { contract_address: outcome.contractAddress } : {}),
    // java-tron prints no zero field: a receipt names only the resources the transaction took
    receipt: renderReceipt(outcome, trigger),
    ...(outcome.receipt.withdrawn === undefined ? {} : { withdraw_expire_amount: num(outcome.receipt.withdrawn) }),
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
const journaledLedger = (
  file: string,
  tokens: ReadonlyMap<string, string>,
  solidLag: number,
  unfreezeDelayMs: number
) =>
  Effect.gen(function* () {
    const { devnet: ledger, replayed } = yield* resumeFromJournal({
      file,
      kind: "facet-tron-devnet",
      version: JOURNAL_VERSION,
      op: TronLedgerOp,
      make: (header) => new TronLedger(tokens, solidLag, header.createdAt, header.id, unfreezeDelayMs),
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
    /**
     * How long unfrozen TRX waits before a withdrawal (mainnet 14 days; the devnet's default a minute). A
     * journal must be resumed with the delay it was made with.
     */
    readonly unfreezeDelayMs?: number
  } = {}
) =>
  Effect.gen(function* () {
    const usdt = devnetContract("USDT")
    const tokens = new Map([[usdt, "USDT"]])
    const solidLag = options.solidLag ?? 3
    const unfreezeDelayMs = options.unfreezeDelayMs ?? 60_000
    const ledger =
      options.journalFile === undefined
        ? new TronLedger(tokens, solidLag, Date.now(), "", unfreezeDelayMs)
        : yield* journaledLedger(options.journalFile, tokens, solidLag, unfreezeDelayMs)
    ledger.produce(Date.now())

    const handle = (path: string, body: Record<string, unknown>): unknown => {
      const addressOut = (hex41: string) => (body.visible === true ? toBase58(hex41) : hex41)
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
          const at = path.startsWith("/walletsolidity") ? ledger.solid.number : undefined
          const stake = ledger.stake(address, at)
          const used = ledger.resources(address, at)
          // java-tron's Stake 2.0 fields; BANDWIDTH is the enum's default, so its entries carry no type
          return {
            address: addressOut(address),
            balance: num(balance),
            create_time: ledger.blocks[0]?.timestamp,
            ...nonZero([
              ["net_usage", used.NetUsed],
              ["latest_consume_time", stake.net.at],
              ["free_net_usage", used.freeNetUsed],
              ["latest_consume_free_time", stake.freeNet.at]
            ]),
            account_resource: nonZero([
              ["energy_usage", used.EnergyUsed],
              ["latest_consume_time_for_energy", stake.energy.at],
              ["delegated_frozenV2_balance_for_energy", stake.delegated.ENERGY],
              ["acquired_delegated_frozenV2_balance_for_energy", stake.acquired.ENERGY]
            ]),
            frozenV2: [
              nonZero([["amount", stake.frozen.BANDWIDTH]]),
              { type: "ENERGY", ...nonZero([["amount", stake.frozen.ENERGY]]) },
              { type: "TRON_POWER" }
            ],
            ...(stake.unfrozen.length === 0
              ? {}
              : {
                  unfrozenV2: stake.unfrozen.map((u) => ({
                    ...(u.resource === "ENERGY" ? { type: "ENERGY" } : {}),
                    unfreeze_amount: num(u.amount),
                    unfreeze_expire_time: u.expireTime
                  }))
                }),
            ...nonZero([
              ["delegated_frozenV2_balance_for_bandwidth", stake.delegated.BANDWIDTH],
              ["acquired_delegated_frozenV2_balance_for_bandwidth", stake.acquired.BANDWIDTH]
            ])
          }
        }
        case "/wallet/getaccountresource":
        case "/walletsolidity/getaccountresource": {
          const address = tronHex41(body.address)
          const at = path.startsWith("/walletsolidity") ? ledger.solid.number : undefined
          if (address === undefined || ledger.trxBalance(address, at) === undefined) return {}
          const r = ledger.resources(address, at)
          // zeros are left out, as java-tron prints them
          return {
            ...nonZero([["freeNetUsed", r.freeNetUsed]]),
            freeNetLimit: r.freeNetLimit,
            ...nonZero([
              ["NetUsed", r.NetUsed],
              ["NetLimit", r.NetLimit]
            ]),
            TotalNetLimit: r.TotalNetLimit,
            TotalNetWeight: r.TotalNetWeight,
            ...nonZero([
              ["tronPowerLimit", r.tronPowerLimit],
              ["EnergyUsed", r.EnergyUsed],
              ["EnergyLimit", r.EnergyLimit]
            ]),
            TotalEnergyLimit: r.TotalEnergyLimit,
            TotalEnergyWeight: r.TotalEnergyWeight
          }
        }
        case "/wallet/getcandelegatedmaxsize":
        case "/walletsolidity/getcandelegatedmaxsize": {
          const address = tronHex41(body.owner_address)
          const at = path.startsWith("/walletsolidity") ? ledger.solid.number : undefined
          if (address === undefined) return {}
          // `type`: the ResourceCode, 0 BANDWIDTH, 1 ENERGY
          const resource = body.type === 1 || body.type === "ENERGY" ? "ENERGY" : "BANDWIDTH"
          return nonZero([["max_size", ledger.canDelegatedMaxSize(address, resource, at)]])
        }
        case "/wallet/getdelegatedresourcev2":
        case "/walletsolidity/getdelegatedresourcev2": {
          const from = tronHex41(body.fromAddress)
          const to = tronHex41(body.toAddress)
          const at = path.startsWith("/walletsolidity") ? ledger.solid.number : undefined
          if (from === undefined || to === undefined) return {}
          const records = ledger.delegations({ from, to }, at)
          if (records.length === 0) return {}
          return {
            delegatedResource: records.map((d) => ({
              from: addressOut(d.from),
              to: addressOut(d.to),
              ...nonZero([
                ["frozen_balance_for_bandwidth", d.amount.BANDWIDTH],
                ["frozen_balance_for_energy", d.amount.ENERGY],
                ["expire_time_for_bandwidth", d.expireTime.BANDWIDTH],
                ["expire_time_for_energy", d.expireTime.ENERGY]
              ])
            }))
          }
        }
        case "/wallet/getdelegatedresourceaccountindexv2":
        case "/walletsolidity/getdelegatedresourceaccountindexv2": {
          const address = tronHex41(body.value)
          const at = path.startsWith("/walletsolidity") ? ledger.solid.number : undefined
          if (address === undefined) return {}
          const unique = (list: ReadonlyArray<string>) => [...new Set(list)].map(addressOut)
          const fromAccounts = unique(ledger.delegations({ to: address }, at).map((d) => d.from))
          const toAccounts = unique(ledger.delegations({ from: address }, at).map((d) => d.to))
          return {
            account: addressOut(address),
            ...(fromAccounts.length === 0 ? {} : { fromAccounts }),
            ...(toAccounts.length === 0 ? {} : { toAccounts })
          }
        }
        case "/wallet/getcontractinfo":
        case "/walletsolidity/getcontractinfo": {
          const contract = tronHex41(body.value)
          if (contract === undefined || (!ledger.tokenContracts.has(contract) && contract !== FORWARDER_CONTRACT))
            return {}
          return {
            smart_contract: {
              contract_address: addressOut(contract),
              name: ledger.tokenContracts.get(contract) ?? "Forwarder"
            },
            contract_state: ledger.contractState(contract)
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
            const energy = ledger.transferEnergy(contract, `41${parameter.slice(24, 64)}`)
            // as java-tron: energy_used is the whole (the dynamic factor's penalty included), energy_penalty that part
            return {
              result: { result: true },
              energy_used: num(energy.total),
              energy_penalty: num(energy.penalty),
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
