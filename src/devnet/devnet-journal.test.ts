import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { tronHex41 } from "../keys/address-encoding.js"
import { payFromCustomer } from "./devnet-payments.js"
import { SOLANA_DEVNET_CUSTOMER, startSolanaDevnet } from "./solana/solana-devnet.js"
import { startTronDevnet } from "./tron/tron-devnet.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "facet-journal-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs `use` on a devnet started in a scope of its own, closed (the devnet stopped) afterwards. */
const withScope = <A, E, R>(effect: Effect.Effect<A, E, R | Scope.Scope>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const exit = yield* Effect.exit(Scope.extend(effect, scope))
    yield* Scope.close(scope, Exit.void)
    return yield* exit
  })

const TRON_TO = "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6"
const SOLANA_TO = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"

describe("devnet journals", () => {
  it.scopedLive("a restarted TRON devnet has the same blocks, ids and balances, and goes on from there", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const journalFile = path.join(dir, "tron.journal")
      const first = yield* withScope(
        Effect.gen(function* () {
          const devnet = yield* startTronDevnet({ blockTimeMs: 30, solidLag: 3, journalFile })
          devnet.ledger.fund(tronHex41(TRON_TO) ?? "", "TRX", 5_000_000n)
          devnet.ledger.fund(tronHex41(TRON_TO) ?? "", "USDT", 7n)
          yield* Effect.sleep("100 millis")
          devnet.ledger.reorg(2, true, Date.now())
          yield* Effect.sleep("100 millis")
          return {
            blocks: devnet.ledger.blocks.map((b) => b.blockID),
            balance: devnet.ledger.trxBalance(tronHex41(TRON_TO) ?? "")
          }
        })
      )
      const second = yield* withScope(
        Effect.gen(function* () {
          const devnet = yield* startTronDevnet({ blockTimeMs: 30, solidLag: 3, journalFile })
          return {
            blocks: devnet.ledger.blocks.map((b) => b.blockID),
            balance: devnet.ledger.trxBalance(tronHex41(TRON_TO) ?? "")
          }
        })
      )
      expect(second.blocks.slice(0, first.blocks.length)).toEqual(first.blocks)
      expect(second.blocks.length).toBeGreaterThan(first.blocks.length)
      expect(second.balance).toBe(5_000_000n)

      // a line cut short by a crash is dropped; the chain before it comes back
      fs.appendFileSync(journalFile, `{"op":"block","ti`)
      const third = yield* withScope(
        Effect.map(startTronDevnet({ blockTimeMs: 1000, solidLag: 3, journalFile }), (d) =>
          d.ledger.blocks.map((b) => b.blockID)
        )
      )
      expect(third.slice(0, second.blocks.length)).toEqual(second.blocks)

      // a journal of another format refuses the start instead of being misread
      const lines = fs.readFileSync(journalFile, "utf8").split("\n")
      fs.writeFileSync(journalFile, [lines[0]?.replace(`"version":1`, `"version":99`), ...lines.slice(1)].join("\n"))
      const refused = yield* Effect.flip(withScope(startTronDevnet({ blockTimeMs: 1000, solidLag: 3, journalFile })))
      expect(refused.message).toMatch(/format 99 of the facet-tron-devnet, this is format 1/)
    })
  )

  it.scopedLive(
    "a restarted Solana devnet has the same slots, blockhashes, genesis and balances, reorgs included",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const journalFile = path.join(dir, "solana.journal")
        const snapshot = (devnet: {
          readonly chain: {
            readonly blocks: ReadonlyMap<number, { readonly blockhash: string }>
            readonly genesisHash: string
            balance: (a: string) => bigint
          }
        }) => ({
          hashes: [...devnet.chain.blocks.entries()].map(([slot, b]) => `${slot}:${b.blockhash}`),
          genesis: devnet.chain.genesisHash,
          sol: devnet.chain.balance(SOLANA_TO),
          customer: devnet.chain.balance(SOLANA_DEVNET_CUSTOMER.publicKey.toBase58())
        })
        const first = yield* withScope(
          Effect.gen(function* () {
            const devnet = yield* startSolanaDevnet({ slotMs: 30, finalityLag: 8, journalFile })
            const file = {
              bep20: { rpcUrl: "", chainId: 0, tokens: {} },
              tron: { url: "", tokens: {} },
              solana: { rpcUrl: devnet.url, tokens: { USDT: devnet.usdtMint } },
              pid: 0
            }
            yield* payFromCustomer(file, "SOLANA-SOL", SOLANA_TO, "1.5")
            yield* payFromCustomer(file, "SOLANA-USDT", SOLANA_TO, "2")
            yield* Effect.sleep("150 millis")
            devnet.chain.reorg(3, true, Date.now())
            yield* Effect.sleep("100 millis")
            return snapshot(devnet)
          })
        )
        expect(first.sol).toBe(1_500_000_000n)
        const second = yield* withScope(
          Effect.map(startSolanaDevnet({ slotMs: 30, finalityLag: 8, journalFile }), snapshot)
        )
        expect(second.hashes.slice(0, first.hashes.length)).toEqual(first.hashes)
        expect(second).toMatchObject({ genesis: first.genesis, sol: first.sol, customer: first.customer })
        // another devnet is another chain
        const other = yield* withScope(
          Effect.map(startSolanaDevnet({ slotMs: 1000, journalFile: path.join(dir, "other.journal") }), snapshot)
        )
        expect(other.genesis).not.toBe(first.genesis)
      })
  )
})
