import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { serveLocally } from "../../test/local-server.js"
import { masterSeedFromMnemonic } from "../keys/master-seed.js"
import { LocalSignerLive, type Signer } from "../keys/signer.js"
import type { ChainClient } from "./chain-client.js"
import { makeBep20Client } from "./evm/bep20-client.js"
import { makeSolanaClient } from "./solana/solana-client.js"
import { makeTronClient } from "./tron/tron-client.js"

/**
 * Issue 46, defect 2: what a node answers to a broadcast is a refusal (TransferRejected) only when it is a
 * documented error object of an HTTP 200 answer with a documented code — never an HTTP status, never a
 * body's words. A provider's 429 "insufficient credits" to a send it forwarded first was read as the node
 * refusing the transaction ("insufficient" matched), and a refusal then released the money.
 */

/** A node answering every call with one status and body (what a provider's gateway may say). */
const scriptedNode = (status: number, body: string) =>
  serveLocally((req, res) => {
    req.resume()
    req.on("end", () => res.writeHead(status, { "content-type": "application/json" }).end(body))
  })

const SignerLive = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

const RAW = {
  BEP20: "0xf86b808504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a0",
  SOLANA: "AQAB",
  TRC20: JSON.stringify({ txID: "ab", raw_data: {}, raw_data_hex: "0a", signature: ["00"] })
} as const

type Chain = keyof typeof RAW

const clientAt = (chain: Chain, url: string): Effect.Effect<ChainClient> => {
  const made: Effect.Effect<ChainClient, unknown, Signer> =
    chain === "BEP20"
      ? makeBep20Client({ rpcUrl: url, chainId: 97, tokens: new Map(), confirmations: 0 })
      : chain === "SOLANA"
        ? makeSolanaClient({ rpcUrl: url, tokens: new Map() })
        : makeTronClient({ url, tokens: new Map(), confirmations: 0 })
  return made.pipe(Effect.provide(SignerLive), Effect.orDie)
}

/** What the client makes of a broadcast the scripted node answers: refused, an unknown outcome, or sent. */
const answerTo = (chain: Chain, status: number, body: unknown) =>
  Effect.scoped(
    Effect.gen(function* () {
      const node = yield* scriptedNode(status, typeof body === "string" ? body : JSON.stringify(body))
      const client = yield* clientAt(chain, node.url)
      const sent = yield* Effect.either(client.broadcast(RAW[chain]))
      return Either.isRight(sent) ? "sent" : sent.left._tag === "TransferRejected" ? "refused" : "unknown"
    })
  )

const rpcError = (code: number, message: string, data?: unknown) => ({
  jsonrpc: "2.0",
  id: 1,
  error: { code, message, ...(data === undefined ? {} : { data }) }
})

describe("a broadcast's answer is a refusal only as a documented error of a 200 answer", () => {
  it.effect("BEP20: geth's -32000 texts in a 200 answer; never a 429 or 5xx, whatever its body says", () =>
    Effect.gen(function* () {
      expect(yield* answerTo("BEP20", 200, rpcError(-32000, "nonce too low"))).toBe("refused")
      expect(yield* answerTo("BEP20", 200, rpcError(-32003, "Insufficient funds for gas * price + value"))).toBe(
        "refused"
      )
      expect(yield* answerTo("BEP20", 200, rpcError(-32000, "already known"))).toBe("sent")
      // before the fix: "insufficient" in a rate limiter's text was a refusal
      expect(yield* answerTo("BEP20", 429, "Too many requests: insufficient credits")).toBe("unknown")
      expect(yield* answerTo("BEP20", 429, rpcError(-32005, "insufficient funds for gas * price + value"))).toBe(
        "unknown"
      )
      expect(yield* answerTo("BEP20", 502, "<html>Bad gateway: invalid upstream answer, nonce too low</html>")).toBe(
        "unknown"
      )
      // a code that is not the txpool's, with a txpool text: the node's state, not the bytes'
      expect(yield* answerTo("BEP20", 200, rpcError(-32603, "insufficient funds for gas * price + value"))).toBe(
        "unknown"
      )
      expect(yield* answerTo("BEP20", 200, rpcError(-32000, "txpool is full"))).toBe("unknown")
    })
  )

  it.effect("Solana: -32002 (preflight failed) with the simulation's err in a 200 answer; nothing else", () =>
    Effect.gen(function* () {
      expect(
        yield* answerTo(
          "SOLANA",
          200,
          rpcError(-32002, "Transaction simulation failed: Blockhash not found", { err: "BlockhashNotFound", logs: [] })
        )
      ).toBe("refused")
      expect(
        yield* answerTo(
          "SOLANA",
          200,
          rpcError(-32002, "Transaction simulation failed", { err: { InstructionError: [0, { Custom: 1 }] } })
        )
      ).toBe("refused")
      expect(
        yield* answerTo("SOLANA", 200, rpcError(-32002, "Transaction simulation failed", { err: "AlreadyProcessed" }))
      ).toBe("sent")
      expect(yield* answerTo("SOLANA", 200, { jsonrpc: "2.0", id: 1, result: "5sig" })).toBe("sent")
      // before the fix: "insufficient", "invalid", "blockhash not found" anywhere in the message were refusals
      expect(yield* answerTo("SOLANA", 429, "Too many requests: insufficient credits")).toBe("unknown")
      expect(yield* answerTo("SOLANA", 503, "upstream: Blockhash not found")).toBe("unknown")
      expect(yield* answerTo("SOLANA", 200, rpcError(-32005, "Node is unhealthy: invalid state"))).toBe("unknown")
      expect(yield* answerTo("SOLANA", 200, rpcError(-32002, "Transaction simulation failed: insufficient"))).toBe(
        "unknown"
      )
    })
  )

  it.effect("TRON: a broadcast result's documented code in a 200 answer; never a status or a result without one", () =>
    Effect.gen(function* () {
      expect(yield* answerTo("TRC20", 200, { result: false, code: "CONTRACT_VALIDATE_ERROR", message: "" })).toBe(
        "refused"
      )
      expect(yield* answerTo("TRC20", 200, { result: false, code: "DUP_TRANSACTION_ERROR" })).toBe("sent")
      expect(yield* answerTo("TRC20", 200, { result: true })).toBe("sent")
      expect(yield* answerTo("TRC20", 200, { result: false, code: "SERVER_BUSY" })).toBe("unknown")
      expect(yield* answerTo("TRC20", 200, { result: false })).toBe("unknown")
      expect(yield* answerTo("TRC20", 429, { code: "CONTRACT_VALIDATE_ERROR", message: "insufficient" })).toBe(
        "unknown"
      )
    })
  )
})
