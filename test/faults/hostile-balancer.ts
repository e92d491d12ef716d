import { Effect } from "effect"
import { createHash } from "node:crypto"
import { rpcId, rpcMethod, rpcParams, startNodeProxy } from "../node-proxy.js"
import type { Dialect } from "./fault-proxy.js"
import type { Random } from "./seeded-random.js"

/**
 * One provider URL with several nodes behind it, as hosted providers are: each call goes to one of four
 * views of the same chain, by the dice — an honest node; a node lagging some blocks behind (its head lower,
 * recent transactions unknown to it); a pruned node (no transaction known by its id); a node that
 * refuses bytes it has been sent before (a lagging node answering "nonce too low", "blockhash not found");
 * and a balancer that passes a send — a first one too — to a node and answers with another's refusal (a
 * retried POST's "nonce too low", a gateway's "insufficient funds"): the bytes are out whatever it says.
 * Money-out code must get every transfer right whichever node answers what.
 */
export const VIEWS = ["honest", "lagging", "pruned", "refuses_resends", "forwards_then_refuses"] as const
export type View = (typeof VIEWS)[number]

export interface HostileBalancer {
  readonly url: string
  /** Calls answered by each view so far. */
  readonly served: () => ReadonlyMap<View, number>
  /** On: the dice choose the view of each call; off: every call is honest (the nodes have healed). */
  readonly setHostile: (on: boolean) => void
  /** BEP20: the gas price every node quotes, times this (a price jump between a quote and its approval). */
  readonly setGasPriceFactor: (factor: bigint) => void
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A transaction lookup: what a pruned or lagging node does not know. */
const isLookup = (dialect: Dialect, path: string, body: unknown) =>
  dialect === "TRC20"
    ? /\/(wallet|walletsolidity)\/gettransaction(info)?byid$/.test(path)
    : dialect === "BEP20"
      ? rpcMethod(body) === "eth_getTransactionReceipt" || rpcMethod(body) === "eth_getTransactionByHash"
      : rpcMethod(body) === "getSignatureStatuses" || rpcMethod(body) === "getTransaction"

const unknownTransaction = (dialect: Dialect, body: unknown): unknown =>
  dialect === "TRC20"
    ? {}
    : dialect === "BEP20"
      ? { jsonrpc: "2.0", id: rpcId(body), result: null }
      : rpcMethod(body) === "getSignatureStatuses"
        ? {
            jsonrpc: "2.0",
            id: rpcId(body),
            result: { context: { slot: 0 }, value: signaturesOf(body).map(() => null) }
          }
        : { jsonrpc: "2.0", id: rpcId(body), result: null }

const signaturesOf = (body: unknown): ReadonlyArray<unknown> => {
  const [first] = rpcParams(body)
  return Array.isArray(first) ? first : []
}

const isSend = (dialect: Dialect, path: string, body: unknown) =>
  dialect === "TRC20"
    ? path.endsWith("/wallet/broadcasttransaction")
    : dialect === "BEP20"
      ? rpcMethod(body) === "eth_sendRawTransaction"
      : rpcMethod(body) === "sendTransaction"

/** The bytes a send carries, to know a re-send. */
const sentBytes = (dialect: Dialect, body: unknown) =>
  dialect === "TRC20"
    ? isRecord(body) && typeof body.txID === "string"
      ? body.txID
      : ""
    : String(rpcParams(body)[0] ?? "")

const resendRefusal = (dialect: Dialect, body: unknown): unknown =>
  dialect === "TRC20"
    ? {
        result: false,
        code: "TAPOS_ERROR",
        message: Buffer.from("Tapos check error: the reference block is unknown to this node").toString("hex")
      }
    : dialect === "BEP20"
      ? { jsonrpc: "2.0", id: rpcId(body), error: { code: -32000, message: "nonce too low" } }
      : {
          jsonrpc: "2.0",
          id: rpcId(body),
          error: {
            code: -32002,
            message: "Transaction simulation failed: Blockhash not found",
            data: { err: "BlockhashNotFound", logs: [] }
          }
        }

/** What the balancer answers for a send it passed on: a refusal another node gave, as that node words it. */
const forwardedRefusal = (dialect: Dialect, body: unknown, random: Random): unknown =>
  dialect === "TRC20"
    ? { result: false, code: "CONTRACT_VALIDATE_ERROR", message: Buffer.from("Validate error").toString("hex") }
    : dialect === "BEP20" && random.next() < 0.5
      ? {
          jsonrpc: "2.0",
          id: rpcId(body),
          error: { code: -32000, message: "insufficient funds for gas * price + value" }
        }
      : resendRefusal(dialect, body)

export const startHostileBalancer = (target: string | (() => string | undefined), dialect: Dialect, random: Random) =>
  Effect.gen(function* () {
    let hostile = false
    let gasFactor = 1n
    const counts = new Map<View, number>()
    const sent = new Set<string>()
    // the sends passed on to be answered with a refusal (the body object is the call's, in both callbacks)
    const refuseAfter = new WeakSet<object>()
    const lag = () => BigInt(2 + random.int(6))
    const viewOf = (): View => (hostile ? random.pick(VIEWS) : "honest")
    const proxy = yield* startNodeProxy(
      target,
      ({ path, body }) => {
        const view = viewOf()
        counts.set(view, (counts.get(view) ?? 0) + 1)
        if ((view === "pruned" || view === "lagging") && isLookup(dialect, path, body))
          return unknownTransaction(dialect, body)
        if (isSend(dialect, path, body)) {
          const bytes = sentBytes(dialect, body)
          const known = bytes !== "" && sent.has(createHash("sha256").update(bytes).digest("hex"))
          sent.add(createHash("sha256").update(bytes).digest("hex"))
          if (known && view === "refuses_resends") return resendRefusal(dialect, body)
          if (view === "forwards_then_refuses" && isRecord(body)) refuseAfter.add(body)
        }
        return undefined
      },
      ({ body }, answer) => {
        if (isRecord(body) && refuseAfter.has(body)) return forwardedRefusal(dialect, body, random)
        // what a lagging node says of the head: some blocks lower (EVM, Solana; a TRON node's lag shows in its
        // lookups)
        if (!hostile || random.next() > 0.25 || !isRecord(answer)) return answer
        if (dialect === "BEP20" && rpcMethod(body) === "eth_blockNumber" && typeof answer.result === "string") {
          const n = BigInt(answer.result)
          return n > 10n ? { ...answer, result: `0x${(n - lag()).toString(16)}` } : answer
        }
        if (
          dialect === "SOLANA" &&
          (rpcMethod(body) === "getSlot" || rpcMethod(body) === "getBlockHeight") &&
          typeof answer.result === "number"
        ) {
          return answer.result > 10 ? { ...answer, result: answer.result - Number(lag()) } : answer
        }
        return answer
      }
    )
    // the gas price is rewritten on every answer, hostile or not: the jump is the chain's, not a node's
    const priced = yield* startNodeProxy(
      proxy.url,
      () => undefined,
      ({ body }, answer) =>
        dialect === "BEP20" &&
        rpcMethod(body) === "eth_gasPrice" &&
        isRecord(answer) &&
        typeof answer.result === "string" &&
        gasFactor !== 1n
          ? { ...answer, result: `0x${(BigInt(answer.result) * gasFactor).toString(16)}` }
          : answer
    )
    return {
      url: priced.url,
      served: () => new Map(counts),
      setHostile: (on: boolean) => {
        hostile = on
      },
      setGasPriceFactor: (factor: bigint) => {
        gasFactor = factor
      }
    } satisfies HostileBalancer
  })
