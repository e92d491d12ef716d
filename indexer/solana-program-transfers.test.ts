import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import {
  createAssociatedTokenAccountInstruction,
  createCloseAccountInstruction,
  createSyncNativeInstruction,
  getAssociatedTokenAddressSync,
  NATIVE_MINT
} from "@solana/spl-token"
import { Connection, Keypair, PublicKey, SystemProgram, Transaction } from "@solana/web3.js"
import { Effect } from "effect"
import { AppConfig } from "../src/config.js"
import { solanaCustomer } from "../src/devnet/devnet-customers.js"
import { fromBaseUnits } from "../src/money.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { readDevnetFile } from "../test/service-process.js"
import { eventually } from "../test/webhook-receiver.js"

/**
 * Solana credits by balance change, so SOL that a program moves inside an instruction (here the SPL Token
 * program closing a token account: its rent goes to the destination, no System transfer anywhere) is seen
 * like any other arrival. (Custody closes no token account today; when it does, its close is excluded as
 * every transaction it signs is: by the hash it records before broadcasting, as gas fundings are.)
 */
describe("SOL moved by a program (Solana)", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect(
      "a token-account close whose rent goes to a deposit address is a SOL deposit of exactly the rent; so is SOL unwrapped to one",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Effect.flatMap(AppConfig, (config) => readDevnetFile(config.dataDir))
          const connection = new Connection(devnet.solana.rpcUrl, "confirmed")
          const mint = new PublicKey(devnet.solana.tokens.USDT ?? "")
          const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const addressOf = (user: string) =>
            Effect.map(
              client.request("POST", "/v1/deposit-addresses", {
                apiKey,
                json: { external_user_id: user, chain: "SOLANA", currency: "SOL" }
              }),
              (r) => String(asRecord(r.body).address)
            )
          const dora = yield* addressOf("dora")

          /** Signed by the customer (the fee payer) and `signers`, sent, and polled until confirmed (the devnet speaks no websocket). */
          const send = (tx: Transaction, signers: ReadonlyArray<Keypair>) =>
            Effect.gen(function* () {
              const { blockhash } = yield* Effect.promise(() => connection.getLatestBlockhash())
              tx.recentBlockhash = blockhash
              tx.feePayer = solanaCustomer.publicKey
              tx.sign(...signers)
              const sent = yield* Effect.promise(() => connection.sendRawTransaction(tx.serialize()))
              yield* eventually(
                Effect.promise(() => connection.getSignatureStatus(sent)),
                (st) => st.value?.confirmationStatus === "confirmed" || st.value?.confirmationStatus === "finalized",
                20_000
              )
              return sent
            })

          /** A token account of a fresh holder, opened by the customer (who pays its rent) and then closed to `destination`. */
          const openAndClose = (destination: string) =>
            Effect.gen(function* () {
              const holder = Keypair.generate()
              const account = getAssociatedTokenAddressSync(mint, holder.publicKey)
              yield* send(
                new Transaction().add(
                  createAssociatedTokenAccountInstruction(solanaCustomer.publicKey, account, holder.publicKey, mint)
                ),
                [solanaCustomer]
              )
              const rent = BigInt(yield* Effect.promise(() => connection.getBalance(account)))
              const closed = yield* send(
                new Transaction().add(
                  createCloseAccountInstruction(account, new PublicKey(destination), holder.publicKey)
                ),
                [solanaCustomer, holder]
              )
              return { closed, rent }
            })

          const { closed, rent } = yield* openAndClose(dora)
          expect(rent).toBeGreaterThan(0n)
          const deposits = (signature: string) =>
            sql<{ to_address: string; amount: string; status: string; type: string }>`
            SELECT to_address, trim_scale(amount)::text AS amount, status, type FROM transactions WHERE tx_hash = ${signature} AND chain = 'SOLANA'`
          const credited = yield* eventually(
            deposits(closed),
            (r) => r.length === 1 && r[0]?.status === "confirmed",
            30_000
          )
          expect(credited).toEqual([
            { to_address: dora, amount: fromBaseUnits(rent, 9), status: "confirmed", type: "deposit" }
          ])

          // a wallet that unwraps SOL to a deposit address: the Token program moves the wrapped lamports and the rent
          const wrapper = Keypair.generate()
          const wrapped = getAssociatedTokenAddressSync(NATIVE_MINT, wrapper.publicKey)
          yield* send(
            new Transaction().add(
              createAssociatedTokenAccountInstruction(
                solanaCustomer.publicKey,
                wrapped,
                wrapper.publicKey,
                NATIVE_MINT
              ),
              SystemProgram.transfer({
                fromPubkey: solanaCustomer.publicKey,
                toPubkey: wrapped,
                lamports: 250_000_000
              }),
              createSyncNativeInstruction(wrapped)
            ),
            [solanaCustomer]
          )
          const held = BigInt(yield* Effect.promise(() => connection.getBalance(wrapped)))
          const unwrapped = yield* send(
            new Transaction().add(createCloseAccountInstruction(wrapped, new PublicKey(dora), wrapper.publicKey)),
            [solanaCustomer, wrapper]
          )
          const arrived = yield* eventually(
            deposits(unwrapped),
            (r) => r.length === 1 && r[0]?.status === "confirmed",
            30_000
          )
          expect(held).toBeGreaterThan(250_000_000n)
          expect(arrived).toEqual([
            { to_address: dora, amount: fromBaseUnits(held, 9), status: "confirmed", type: "deposit" }
          ])
        })
    )
  })
})
