import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as http from "node:http"
import { startTronDevnet } from "../devnet/tron/tron-devnet.js"
import { masterSeedFromMnemonic } from "../keys/master-seed.js"
import { LocalSignerLive } from "../keys/signer.js"
import { startNodeProxy } from "../../test/node-proxy.js"
import { ChainRpcError, TransferRejected } from "./chain-client.js"
import { endpointLabel, makeFailoverClient } from "./failover-client.js"
import { makeSolanaClient } from "./solana/solana-client.js"
import { makeTronClient } from "./tron/tron-client.js"

const SignerLive = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

describe("several nodes of one chain", () => {
  it.live(
    "a failing node is passed over, a node of another chain is never read, and /health's view says which is which",
    () =>
      Effect.gen(function* () {
        const devnet = yield* startTronDevnet({ blockTimeMs: 100, solidLag: 3 })
        // another network: the same devnet code, so its genesis is told apart by the node in front of it
        const otherDevnet = yield* startTronDevnet({ blockTimeMs: 100, solidLag: 3 })
        const other = yield* startNodeProxy(
          otherDevnet.url,
          () => undefined,
          ({ path, body }, answer) =>
            path.endsWith("/wallet/getblockbynum") &&
            typeof body === "object" &&
            body !== null &&
            "num" in body &&
            body.num === 0 &&
            typeof answer === "object" &&
            answer !== null
              ? { ...answer, blockID: "00".repeat(31) + "ff" }
              : answer
        )
        let broken = true
        // a node that answers garbage while `broken`, then the real chain
        const sick = yield* startNodeProxy(devnet.url, () => (broken ? "<html>502 Bad Gateway</html>" : undefined))
        const tokens = new Map([["USDT", devnet.tokens.USDT]])
        const tron = (url: string) => makeTronClient({ url, tokens, confirmations: 3 })
        const { client, health } = yield* makeFailoverClient(
          [
            { label: "http://sick", client: yield* tron(sick.url) },
            { label: "http://good", client: yield* tron(devnet.url) },
            // two against one: a tie would go to the node configured first
            { label: "http://other-chain", client: yield* tron(other.url) },
            { label: "http://good-too", client: yield* tron(devnet.url) }
          ],
          { baseCooldownMs: 200 }
        )
        yield* Effect.sleep("400 millis")

        const head = yield* client.head
        expect(head).toBeGreaterThan(0n)
        const [block] = yield* client.blocks(1n, 1n)
        // the good node answered: the wrong one is only found out once it would be used
        yield* Effect.forEach([1, 2, 3], () => client.head)
        expect(block?.hash).toBe(devnet.ledger.blocks[1]?.blockID)
        const byLabel = new Map((yield* health).map((h) => [h.endpoint, h]))
        expect(byLabel.get("http://sick")?.state).toMatch(/failing|cooling_down/)
        expect(byLabel.get("http://sick")?.consecutiveFailures).toBeGreaterThan(0)
        expect(byLabel.get("http://other-chain")?.state).toBe("wrong_chain")
        expect(byLabel.get("http://good")?.state).toBe("ok")

        // the sick node recovers: once its cooling-down is over it is preferred again (configured order)
        broken = false
        yield* Effect.sleep("1500 millis")
        yield* client.head
        const after = new Map((yield* health).map((h) => [h.endpoint, h]))
        expect(after.get("http://sick")?.state).toBe("ok")
        expect(after.get("http://other-chain")?.state).toBe("wrong_chain")

        // every node down: one error naming each
        broken = true
        const failure = yield* Effect.flip(
          makeFailoverClient([
            { label: "http://sick", client: yield* tron(sick.url) },
            { label: "http://closed", client: yield* tron("http://127.0.0.1:1") }
          ]).pipe(Effect.flatMap((c) => c.client.head))
        )
        expect(failure.message).toMatch(/every node failed — http:\/\/sick: .*; http:\/\/closed: /)
      }).pipe(Effect.scoped, Effect.provide(SignerLive)),
    { timeout: 30_000 }
  )

  // found by the fault campaign: Solana's client has no timeout, so a node that never answers stalled the indexer
  it.live(
    "a node that accepts a request and never answers fails the call at the deadline",
    () =>
      Effect.gen(function* () {
        const silent = yield* Effect.acquireRelease(
          Effect.async<http.Server>((resume) => {
            const server = http.createServer(() => undefined)
            server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
          }),
          (server) =>
            Effect.async<void>((resume) => {
              server.closeAllConnections()
              server.close(() => resume(Effect.void))
            })
        )
        const address = silent.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        const solana = yield* makeSolanaClient({ rpcUrl: `http://127.0.0.1:${port}`, tokens: new Map() })
        const { client } = yield* makeFailoverClient([{ label: "http://silent", client: solana }], {
          callTimeoutMs: 500
        })
        const started = Date.now()
        const failure = yield* Effect.flip(client.head)
        expect(failure.message).toMatch(/no answer within 500ms/)
        expect(Date.now() - started).toBeLessThan(5_000)
      }).pipe(Effect.scoped, Effect.provide(SignerLive)),
    { timeout: 30_000 }
  )

  // a refusal after a node that did not answer proves nothing: that node may have taken the bytes in (custody
  // would otherwise fail a withdrawal, and hand its money back, while the transaction can still land)
  it.live(
    "signed bytes refused by a node after another did not answer: a failure to answer, not a refusal",
    () =>
      Effect.gen(function* () {
        const devnet = yield* startTronDevnet({ blockTimeMs: 100, solidLag: 3 })
        const real = yield* makeTronClient({
          url: devnet.url,
          tokens: new Map([["USDT", devnet.tokens.USDT]]),
          confirmations: 3
        })
        const lost = {
          ...real,
          broadcast: () => Effect.fail(new ChainRpcError({ chain: "TRC20", message: "socket hang up" }))
        }
        const refusing = {
          ...real,
          broadcast: () =>
            Effect.fail(new TransferRejected({ chain: "TRC20", message: "TAPOS_ERROR: tapos check error" }))
        }

        const both = yield* makeFailoverClient(
          [
            { label: "http://lost", client: lost },
            { label: "http://refusing", client: refusing }
          ],
          { baseCooldownMs: 60_000 }
        )
        const ambiguous = yield* Effect.flip(both.client.broadcast("{}"))
        expect(ambiguous._tag).toBe("ChainRpcError")
        expect(ambiguous.message).toMatch(
          /http:\/\/refusing refused the bytes after http:\/\/lost: socket hang up, which may have accepted them/
        )
        // the next call goes to the refusing node first (the other cools down): its refusal is one
        const refused = yield* Effect.flip(both.client.broadcast("{}"))
        expect(refused._tag).toBe("TransferRejected")

        // a refusal by the first node asked stays a refusal; other calls than a send are unchanged
        const alone = yield* makeFailoverClient([{ label: "http://refusing", client: refusing }])
        expect((yield* Effect.flip(alone.client.broadcast("{}")))._tag).toBe("TransferRejected")
        expect(yield* both.client.head).toBeGreaterThan(0n)
      }).pipe(Effect.scoped, Effect.provide(SignerLive)),
    { timeout: 30_000 }
  )

  it("labels keep a provider's key out of logs and /health", () => {
    expect(endpointLabel("https://user:pw@bsc.nodereal.io/v1/0123456789abcdef?key=x")).toBe("https://bsc.nodereal.io")
  })
})
