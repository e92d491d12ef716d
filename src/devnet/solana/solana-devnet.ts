import { Effect, Schedule } from "effect"
import * as http from "node:http"
import { DevnetError } from "../devnet-error.js"
import { resumeFromJournal } from "../devnet-journal.js"
import { serveOnLoopback } from "../loopback-server.js"
import { SolanaDevnetChain, SolanaDevnetOp } from "./solana-chain.js"
import { makeSolanaRpc } from "./solana-rpc.js"

/**
 * A Solana JSON-RPC server of our own: the chain (solana-chain.ts) answered through Solana's JSON-RPC
 * (solana-rpc.ts) over HTTP on loopback, with slots on a timer and, given a journal file, the chain kept
 * across restarts.
 */

// importers take the devnet's customer from here, where it always was
export { SOLANA_DEVNET_CUSTOMER } from "./solana-chain.js"

export interface SolanaDevnet {
  readonly url: string
  readonly usdtMint: string
  readonly chain: SolanaDevnetChain
}

/** The format of the Solana devnet's journal; a journal of another format is refused, not misread. */
const JOURNAL_VERSION = 1

/** A chain rebuilt from its journal (or a new one), recording every change it makes from now on. */
const journaledChain = (file: string, finalityLag: number) =>
  Effect.gen(function* () {
    const {
      devnet: chain,
      replayed,
      replayMs
    } = yield* resumeFromJournal({
      file,
      kind: "facet-solana-devnet",
      version: JOURNAL_VERSION,
      op: SolanaDevnetOp,
      make: (header) => new SolanaDevnetChain(finalityLag, header.id),
      flushesAfter: (op) => op.op === "slot" || op.op === "reorg"
    })
    if (replayed > 0)
      yield* Effect.logInfo(
        `Solana devnet resumed at slot ${chain.processed} from ${file} (${replayed} operations replayed in ${replayMs} ms)`
      )
    return { chain, fresh: replayed === 0 }
  })

export const startSolanaDevnet = (
  options: {
    readonly slotMs?: number
    readonly finalityLag?: number
    readonly port?: number
    /** Ports it must not take (the service's HTTP port, bound after the devnets start). */
    readonly avoidPorts?: ReadonlyArray<number>
    /** Where the chain is kept: its journal is replayed at start and every change appended to it. */
    readonly journalFile?: string
  } = {}
) =>
  Effect.gen(function* () {
    const { chain, fresh } =
      options.journalFile === undefined
        ? { chain: new SolanaDevnetChain(options.finalityLag ?? 4), fresh: true }
        : yield* journaledChain(options.journalFile, options.finalityLag ?? 4)
    if (fresh)
      yield* Effect.try({
        try: () => chain.setup(),
        catch: (cause) => new DevnetError({ message: "cannot set up the Solana devnet", cause })
      })
    chain.advance(Date.now())

    const answer = makeSolanaRpc(chain)
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify(answer(Buffer.concat(chunks).toString("utf8"))))
      })
    })
    const url = yield* serveOnLoopback(server, "Solana devnet", options.port, options.avoidPorts)
    yield* Effect.forkScoped(
      Effect.repeat(
        Effect.sync(() => chain.advance(Date.now())),
        Schedule.spaced(options.slotMs ?? 400)
      )
    )
    yield* Effect.logInfo(`Solana devnet (litesvm) on ${url}: USDT mint ${chain.usdtMint}`)
    return { url, usdtMint: chain.usdtMint, chain } satisfies SolanaDevnet
  })
