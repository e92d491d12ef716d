import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import type * as http from "node:http"
import { serveLocally } from "../../test/local-server.js"
import { masterSeedFromMnemonic } from "../keys/master-seed.js"
import { LocalSignerLive } from "../keys/signer.js"
import { makeBep20Client } from "./evm/bep20-client.js"
import { headersFor, nodeHeadersConfig } from "./node-headers.js"
import { makeSolanaClient } from "./solana/solana-client.js"
import { makeTronClient } from "./tron/tron-client.js"

const SignerLive = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

/** A node that answers every chain's head at 5 and remembers the headers of each call. */
const recordingNode = Effect.suspend(() => {
  const seen: Array<http.IncomingHttpHeaders> = []
  return Effect.map(
    serveLocally((req, res) => {
      seen.push(req.headers)
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        const body: unknown = text === "" ? {} : JSON.parse(text)
        const one = (call: unknown) => {
          const id = typeof call === "object" && call !== null && "id" in call ? call.id : 1
          const method = typeof call === "object" && call !== null && "method" in call ? call.method : undefined
          return { jsonrpc: "2.0", id, result: method === "eth_blockNumber" ? "0x5" : 5 }
        }
        // viem sends JSON-RPC batches (arrays)
        const answer =
          req.url?.includes("getblock") || req.url?.includes("getnowblock")
            ? { blockID: "00", block_header: { raw_data: { number: 5 } } }
            : Array.isArray(body)
              ? body.map(one)
              : one(body)
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer))
      })
    }),
    ({ url, server }) => ({ url, seen, server })
  )
})

describe("provider API keys in headers (FACET_NODE_HEADERS)", () => {
  it.effect("parsed per host, refused when malformed, and never applied to another host", () =>
    Effect.gen(function* () {
      const parse = (value: string) =>
        Effect.withConfigProvider(nodeHeadersConfig, ConfigProvider.fromMap(new Map([["FACET_NODE_HEADERS", value]])))
      const byHost = yield* parse(
        "api.trongrid.io=TRON-PRO-API-KEY:k-123; bsc.example.com=x-api-key:abc,x-client:facet"
      )
      expect(headersFor(byHost, "https://api.trongrid.io")).toEqual({ "TRON-PRO-API-KEY": "k-123" })
      expect(headersFor(byHost, "https://BSC.example.com/v1/path?x=1")).toEqual({
        "x-api-key": "abc",
        "x-client": "facet"
      })
      expect(headersFor(byHost, "https://api.mainnet-beta.solana.com")).toEqual({})
      const refused = yield* Effect.flip(parse("api.trongrid.io TRON-PRO-API-KEY k-123"))
      expect(String(refused)).toContain("FACET_NODE_HEADERS: expected host=Header-Name:value")
    })
  )

  // TronGrid takes its key in TRON-PRO-API-KEY: there was no way to pass one (#32 item 4)
  layer(SignerLive)((it) => {
    it.scoped("each chain's client sends its node's headers with every call", () =>
      Effect.gen(function* () {
        const node = yield* recordingNode
        const headers = { "TRON-PRO-API-KEY": "k-123" }
        yield* (yield* makeTronClient({ url: node.url, tokens: new Map(), confirmations: 19, headers })).head
        yield* (yield* makeBep20Client({
          rpcUrl: node.url,
          chainId: 56,
          tokens: new Map(),
          confirmations: 15,
          headers: { "x-api-key": "abc" }
        })).head
        yield* (yield* makeSolanaClient({ rpcUrl: node.url, tokens: new Map(), headers: { "x-api-key": "sol" } })).head
        expect(node.seen.map((h) => h["tron-pro-api-key"] ?? h["x-api-key"])).toEqual(["k-123", "abc", "sol"])
      })
    )
  })
})
