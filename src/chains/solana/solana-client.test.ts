import { createTransferCheckedInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token"
import { Connection, PublicKey, SystemProgram, Transaction } from "@solana/web3.js"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { SOLANA_DEVNET_CUSTOMER, type SolanaDevnet, startSolanaDevnet } from "../../devnet/solana/solana-devnet.js"
import { masterSeedFromMnemonic } from "../../keys/master-seed.js"
import { LocalSignerLive, Signer } from "../../keys/signer.js"
import { type ChainClient, sendTransfer } from "../chain-client.js"
import { makeFailoverClient } from "../failover-client.js"
import { makeSolanaClient } from "./solana-client.js"
import { rpcId, rpcMethod, rpcParams, startNodeProxy } from "../../../test/node-proxy.js"
import { startPrunedSolanaNode } from "../../../test/pruned-solana-node.js"

class Devnet extends Context.Tag("test/SolanaDevnet")<
  Devnet,
  { readonly devnet: SolanaDevnet; readonly client: ChainClient }
>() {}

const SignerLive = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

const DevnetLive = Layer.scoped(
  Devnet,
  Effect.gen(function* () {
    const devnet = yield* startSolanaDevnet({ slotMs: 100, finalityLag: 4 })
    const client = yield* makeSolanaClient({
      rpcUrl: devnet.url,
      tokens: new Map([["USDT", { mint: devnet.usdtMint, decimals: 6 }]])
    })
    return { devnet, client }
  })
).pipe(Layer.provideMerge(SignerLive))

const addressOf = (index: number) =>
  Effect.flatMap(Signer, (s) => s.deriveAddresses("SOLANA", 4, [index])).pipe(Effect.map(([k]) => k?.address ?? ""))

const rpc = (url: string, method: string, params: ReadonlyArray<unknown>) =>
  Effect.promise(async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })
    })
    const json: unknown = await res.json()
    return typeof json === "object" && json !== null ? Object.fromEntries(Object.entries(json)) : {}
  })

const settle = (client: ChainClient, signature: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100; i++) {
      const found = yield* client.transaction(signature)
      if (Option.isSome(found) && found.value.confirmations >= 2) return found.value
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`${signature} did not settle`))
  })

describe("Solana client on the litesvm devnet", () => {
  layer(DevnetLive, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("moves USDT and SOL out and back, signed by our keys, and sees them as deposits to owners", () =>
      Effect.gen(function* () {
        const { client, devnet } = yield* Devnet
        const [a, b] = [yield* addressOf(0), yield* addressOf(1)]
        yield* rpc(devnet.url, "requestAirdrop", [a, 2_000_000_000])
        yield* rpc(devnet.url, "requestAirdrop", [b, 2_000_000_000])
        yield* rpc(devnet.url, "devnet_mintUsdt", [a, "50000000"])
        const start = yield* client.head

        const out = yield* sendTransfer(client, {
          from: { family: "SOLANA", account: 4, index: 0 },
          to: b,
          currency: "USDT",
          amount: 12_000_000n
        })
        yield* settle(client, out)
        const back = yield* sendTransfer(client, {
          from: { family: "SOLANA", account: 4, index: 1 },
          to: a,
          currency: "USDT",
          amount: 2_000_000n
        })
        yield* settle(client, back)
        const sol = yield* sendTransfer(client, {
          from: { family: "SOLANA", account: 4, index: 0 },
          to: b,
          currency: "SOL",
          amount: 1_000_000n
        })
        const status = yield* settle(client, sol)
        expect(status.status).toBe("success")

        expect(yield* client.balance(a, "USDT")).toBe(40_000_000n)
        expect(yield* client.balance(b, "USDT")).toBe(10_000_000n)
        expect(yield* client.balance(yield* addressOf(9), "USDT")).toBe(0n)

        const blocks = yield* client.blocks(start + 1n, yield* client.head)
        const transfers = blocks.flatMap((bl) => bl.transfers)
        expect(transfers.find((t) => t.txHash === out && t.currency === "USDT")).toMatchObject({
          from: a,
          to: b,
          amount: 12_000_000n,
          success: true
        })
        expect(transfers.find((t) => t.txHash === back && t.currency === "USDT")).toMatchObject({
          from: b,
          to: a,
          amount: 2_000_000n
        })
        expect(transfers.find((t) => t.txHash === sol && t.currency === "SOL")).toMatchObject({
          to: b,
          amount: 1_000_000n
        })
        for (let i = 1; i < blocks.length; i++) expect(blocks[i]?.parentHash).toBe(blocks[i - 1]?.hash)
        expect(yield* client.finalized).toBeLessThan(yield* client.head)
      })
    )

    it.effect(
      "closes an emptied token account, its lamports to the payee; one that holds tokens is refused unsigned",
      () =>
        Effect.gen(function* () {
          const { client, devnet } = yield* Devnet
          const [owner, payer, payee] = [yield* addressOf(10), yield* addressOf(11), yield* addressOf(12)]
          yield* rpc(devnet.url, "requestAirdrop", [payer, 1_000_000_000])
          yield* rpc(devnet.url, "devnet_mintUsdt", [owner, "5000000"])
          const ownerKey = { family: "SOLANA", account: 4, index: 10 } as const
          const payerKey = { family: "SOLANA", account: 4, index: 11 } as const
          const close = {
            from: ownerKey,
            to: payee,
            currency: "USDT",
            amount: 0n,
            feePayer: payerKey,
            action: { _tag: "CloseTokenAccount" }
          } as const
          // it holds 5 USDT: the token program would refuse, so nothing is signed
          const held = yield* Effect.flip(client.prepare(close))
          expect(held.message).toMatch(/holds 5000000 base units of USDT again: not closed/)
          yield* settle(
            client,
            yield* sendTransfer(client, {
              from: ownerKey,
              to: payee,
              currency: "USDT",
              amount: 5_000_000n,
              feePayer: payerKey
            })
          )
          const account = getAssociatedTokenAddressSync(new PublicKey(devnet.usdtMint), new PublicKey(owner), true)
          const lamports = (yield* Effect.promise(() =>
            new Connection(devnet.url, "confirmed").getAccountInfo(account)
          ))?.lamports
          const before = yield* client.balance(payee, "SOL")
          const signed = yield* client.prepare(close)
          expect(signed.amount).toBe(BigInt(lamports ?? 0))
          expect(signed.feePayer).toBe(payer)
          yield* client.broadcast(signed.raw)
          yield* settle(client, signed.txHash)
          expect(
            yield* Effect.promise(() => new Connection(devnet.url, "confirmed").getAccountInfo(account))
          ).toBeNull()
          expect((yield* client.balance(payee, "SOL")) - before).toBe(BigInt(lamports ?? 0))
          expect(yield* client.balance(owner, "SOL")).toBe(0n)
          // no token account left to close
          const gone = yield* Effect.flip(client.prepare(close))
          expect(gone.message).toMatch(/is no token account/)
        })
    )

    it.effect("refuses an overdraft, a wrong signature and a replay; unknown signatures are none", () =>
      Effect.gen(function* () {
        const { client, devnet } = yield* Devnet
        const poor = yield* addressOf(5)
        yield* rpc(devnet.url, "requestAirdrop", [poor, 10_000_000])
        const overdraft = yield* Effect.flip(
          sendTransfer(client, {
            from: { family: "SOLANA", account: 4, index: 5 },
            to: yield* addressOf(6),
            currency: "SOL",
            amount: 5_000_000_000n
          })
        )
        expect(overdraft._tag).toBe("TransferRejected")

        const connection = new Connection(devnet.url, "confirmed")
        const { blockhash } = yield* Effect.promise(() => connection.getLatestBlockhash())
        const tx = new Transaction({ feePayer: SOLANA_DEVNET_CUSTOMER.publicKey, recentBlockhash: blockhash }).add(
          SystemProgram.transfer({
            fromPubkey: SOLANA_DEVNET_CUSTOMER.publicKey,
            toPubkey: new PublicKey(poor),
            lamports: 1_000
          })
        )
        tx.sign(SOLANA_DEVNET_CUSTOMER)
        const wire = tx.serialize()
        const tampered = Buffer.from(wire)
        tampered[10] = (tampered[10] ?? 0) ^ 0xff
        const bad = yield* rpc(devnet.url, "sendTransaction", [tampered.toString("base64"), { encoding: "base64" }])
        expect(String(JSON.stringify(bad.error))).toMatch(/signature/i)
        const ok = yield* rpc(devnet.url, "sendTransaction", [wire.toString("base64"), { encoding: "base64" }])
        expect(typeof ok.result).toBe("string")
        const replay = yield* rpc(devnet.url, "sendTransaction", [wire.toString("base64"), { encoding: "base64" }])
        expect(String(JSON.stringify(replay.error))).toMatch(/already been processed/)
        expect(yield* client.transaction("1".repeat(64))).toEqual(Option.none())

        // a failing token transfer sent without preflight is recorded as failed and moves nothing
        const mint = new PublicKey(devnet.usdtMint)
        const failing = new Transaction({ feePayer: SOLANA_DEVNET_CUSTOMER.publicKey, recentBlockhash: blockhash }).add(
          createTransferCheckedInstruction(
            getAssociatedTokenAddressSync(mint, SOLANA_DEVNET_CUSTOMER.publicKey),
            mint,
            getAssociatedTokenAddressSync(mint, SOLANA_DEVNET_CUSTOMER.publicKey),
            SOLANA_DEVNET_CUSTOMER.publicKey,
            // the most a u64 amount holds: far more than the customer has (10^30 encoded as another number
            // before bigint-buffer's stand-in refused what does not fit)
            2n ** 64n - 1n,
            6
          )
        )
        failing.sign(SOLANA_DEVNET_CUSTOMER)
        const preflight = yield* rpc(devnet.url, "sendTransaction", [
          failing.serialize().toString("base64"),
          { encoding: "base64" }
        ])
        expect(String(JSON.stringify(preflight.error))).toMatch(/simulation failed/)
        const skipped = yield* rpc(devnet.url, "sendTransaction", [
          failing.serialize().toString("base64"),
          { encoding: "base64", skipPreflight: true }
        ])
        expect((yield* settle(client, String(skipped.result))).status).toBe("failed")
      })
    )

    it.effect("an injected reorg shows as a changed block hash", () =>
      Effect.gen(function* () {
        const { client, devnet } = yield* Devnet
        // the devnet closes a slot every 150 ms and finalizes 4 behind: on a busy machine the slot read
        // may be final by the time the reorg comes (then refused, the hash unchanged) — a few tries
        for (let attempt = 1; ; attempt++) {
          const slot = (yield* client.head) - 2n
          const [before] = yield* client.blocks(slot, slot)
          const reorg = yield* rpc(devnet.url, "devnet_reorg", [3, false])
          const [after] = yield* client.blocks(slot, slot)
          expect(after?.number).toBe(slot)
          if (reorg.error === undefined && after?.hash !== before?.hash) return
          if (attempt === 5)
            expect.fail(`no reorg replaced slot ${slot} in 5 tries: ${JSON.stringify(reorg.error ?? "hash unchanged")}`)
        }
      })
    )

    it.effect(
      "a produced slot the node cannot give (-32009, -32007) fails the read instead of passing for a skipped one",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { devnet } = yield* Devnet
            const slot = BigInt(Number((yield* rpc(devnet.url, "getSlot", [{ commitment: "confirmed" }])).result)) - 1n
            for (const [code, message] of [
              [-32009, `Slot ${slot} was skipped, or missing in long-term storage`],
              [-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`]
            ] as const) {
              const proxy = yield* startNodeProxy(devnet.url, ({ body }) =>
                rpcMethod(body) === "getBlock" && rpcParams(body)[0] === Number(slot)
                  ? { jsonrpc: "2.0", id: rpcId(body), error: { code, message } }
                  : undefined
              )
              const client = yield* makeSolanaClient({ rpcUrl: proxy.url, tokens: new Map() })
              const failed = yield* Effect.flip(client.blocks(slot - 1n, slot + 1n))
              expect(failed.message).toMatch(new RegExp(`getBlock ${slot}`))
            }
            // the same range through the node itself: every produced slot, in order
            const direct = yield* (yield* makeSolanaClient({ rpcUrl: devnet.url, tokens: new Map() })).blocks(
              slot - 1n,
              slot + 1n
            )
            expect(direct.map((b) => b.number)).toEqual([slot - 1n, slot, slot + 1n])
          })
        )
    )

    // A node without long-term storage answers getBlocks from its first available slot, silently leaving
    // out the slots it no longer holds: taken as skipped, the indexer passed blocks it never read, then halted
    // on a "fork deeper than the finality window"; failover never asked an archive node (#32 items 2 and 5)
    it.effect(
      "a node without the old ledger: a read below its first available slot fails naming the slots; a slot left out mid-range breaks the parent links; failover reads them from a node that keeps them",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { devnet } = yield* Devnet
            const direct = yield* makeSolanaClient({ rpcUrl: devnet.url, tokens: new Map() })
            const slot = Effect.map(rpc(devnet.url, "getSlot", [{ commitment: "confirmed" }]), (r) =>
              BigInt(Number(r.result))
            )
            // a chain long enough that slots before the pruned node's first exist
            let head = yield* slot
            while (head < 20n) head = yield* Effect.zipRight(Effect.sleep("100 millis"), slot)
            const start = head - 5n
            const pruned = yield* startPrunedSolanaNode(devnet.url, () => Number(start))
            const client = yield* makeSolanaClient({ rpcUrl: pruned.url, tokens: new Map() })
            const failed = yield* Effect.flip(client.blocks(start - 10n, head))
            expect(failed.message).toBe(
              `slots ${start - 10n}–${start - 1n} cannot be read from this node: its ledger starts at slot ${start} (getFirstAvailableBlock); a node that keeps them (an archive, or one with longer ledger retention) must read them`
            )
            // what it holds it reads as ever
            expect((yield* client.blocks(start, head)).map((b) => b.number)).toEqual(
              (yield* direct.blocks(start, head)).map((b) => b.number)
            )
            // a slot missing from its list in the middle of the range: the next block's parent is not in the answer
            const holey = yield* makeSolanaClient({
              rpcUrl: (yield* startPrunedSolanaNode(devnet.url, () => Number(start), [Number(start) + 2])).url,
              tokens: new Map()
            })
            const hole = yield* Effect.flip(holey.blocks(start, head))
            expect(hole.message).toContain(
              `slots ${start + 2n}–${start + 2n} cannot be read from this node: slot ${start + 3n}'s parent is slot ${start + 2n}, which its answer does not hold`
            )
            // given both, the pruned node first: the read fails over to the node that keeps the ledger
            const both = yield* makeFailoverClient(
              [
                { label: "pruned", client },
                { label: "archive", client: direct }
              ],
              { baseCooldownMs: 10 }
            )
            expect((yield* both.client.blocks(start - 10n, head)).map((b) => b.number)).toEqual(
              (yield* direct.blocks(start - 10n, head)).map((b) => b.number)
            )
          })
        )
    )

    // A node with short ledger retention, or another node behind the same URL, finds no status for a
    // signature. Before, "past lastValidBlockHeight" and "no status" read as "never landed": custody signed a
    // second transfer while the first had landed.
    it.effect(
      "past its last valid height, a transfer's fate is read from the final blocks back to its blockhash, not from a status lookup",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { client, devnet } = yield* Devnet
            const [a, b] = [yield* addressOf(7), yield* addressOf(8)]
            yield* rpc(devnet.url, "requestAirdrop", [a, 1_000_000_000])
            const missing = new Set<number>()
            const proxy = yield* startNodeProxy(devnet.url, ({ body }) => {
              const method = rpcMethod(body)
              if (method === "getSignatureStatuses")
                return { jsonrpc: "2.0", id: rpcId(body), result: { context: { slot: 0 }, value: [null] } }
              const [slot] = rpcParams(body)
              return method === "getBlock" && typeof slot === "number" && missing.has(slot)
                ? {
                    jsonrpc: "2.0",
                    id: rpcId(body),
                    error: {
                      code: -32007,
                      message: `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`
                    }
                  }
                : undefined
            })
            const pruned = yield* makeSolanaClient({ rpcUrl: proxy.url, tokens: new Map() })
            const from = { family: "SOLANA" as const, account: 4, index: 7 }
            const landed = yield* pruned.prepare({ from, to: b, currency: "SOL", amount: 1_000_000n })
            yield* pruned.broadcast(landed.raw)
            const slot = (yield* settle(client, landed.txHash)).blockNumber
            // signed and never sent: it can never land
            const lost = yield* pruned.prepare({ from, to: b, currency: "SOL", amount: 2_000_000n })
            const windowOf = (signed: typeof landed) => ({
              txHash: signed.txHash,
              from: signed.from,
              nonce: signed.nonce,
              validUntil: signed.validUntil,
              raw: signed.raw
            })
            expect((yield* pruned.transaction(landed.txHash))._tag).toBe("None")
            expect((yield* pruned.landing(windowOf(lost)))._tag).toBe("Open")

            // the chain moves past both blockhashes' last valid height, and those blocks become final
            for (let i = 0; i < 160; i++) devnet.chain.advance(Date.now())
            expect(yield* pruned.landing(windowOf(landed))).toMatchObject({
              _tag: "Landed",
              blockNumber: Option.getOrThrow(slot)
            })
            const never = yield* pruned.landing(windowOf(lost))
            expect(never._tag).toBe("NeverLanded")
            expect(never._tag === "NeverLanded" ? never.blocks : 0).toBeGreaterThan(1)
            // a block of the window the node cannot give: no proof either way (one inside the lost transfer's
            // window whatever slot its blockhash came from: a loaded machine may have moved on since `slot`)
            missing.add(Number(Option.getOrThrow(lost.validUntil)) - 10)
            const unproven = yield* pruned.landing(windowOf(lost))
            expect(unproven._tag === "Unproven" ? unproven.reason : unproven._tag).toMatch(/cannot be read/)
            expect(yield* client.balance(b, "SOL")).toBe(1_000_000n)
          })
        )
    )
  })
})
