import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { createWalletClient, http, type Address } from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { TestDatabaseLive } from "../test/database.js"
import { evmAddressOf } from "../test/evm-addresses.js"
import type { ChainClient } from "../src/chains/chain-client.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { makeBep20Client } from "../src/chains/evm/bep20-client.js"
import { ANVIL_MNEMONIC, CUSTOMER_INDEX, devnetChain, fundNative, startAnvilDevnet, tokenAbi } from "../src/devnet/evm/anvil-devnet.js"
import { masterSeedFromMnemonic } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { CustodyConfig } from "./custody-config.js"
import { OPERATION_COLUMNS, OperationRow } from "./custody-operation.js"
import { CustodyStore } from "./custody-store.js"
import { TransferSender } from "./transfer-sender.js"

/**
 * The moment a broadcast transaction is mined between custody's lookup of it ("not in a block") and the
 * nonce check ("its nonce is used"): on its own, the nonce check reads as "proven dead" and a second
 * transaction would be signed and sent — the same money twice. The lookup is made to miss once, exactly
 * there; the chain (anvil), the signing and the nonces are real.
 */
class Devnet extends Context.Tag("test/SenderDevnet")<Devnet, { readonly rpcUrl: string; readonly usdt: Address; readonly client: ChainClient }>() {}

const SignerLive = LocalSignerLive.pipe(Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow")))

const DevnetLive = Layer.scoped(
  Devnet,
  Effect.gen(function*() {
    const devnet = yield* startAnvilDevnet()
    // confirmations 0: a mined transaction is final at once, so its nonce reads as used right away
    const client = yield* makeBep20Client({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, tokens: new Map([["USDT", devnet.tokens.USDT]]), confirmations: 0 })
    return { rpcUrl: devnet.rpcUrl, usdt: devnet.tokens.USDT, client }
  })
)

/** The devnet's client, except that the first lookup after a broadcast answers "not there" (anvil has mined it by then). */
const ClientsLive = Layer.effect(
  ChainClients,
  Effect.map(Devnet, ({ client: real }) => {
    let missNext = false
    const client: ChainClient = {
      ...real,
      broadcast: (raw) => Effect.tap(real.broadcast(raw), () => Effect.sync(() => { missNext = true })),
      transaction: (hash) =>
        Effect.suspend(() => {
          if (!missNext) return real.transaction(hash)
          missNext = false
          return Effect.succeed(Option.none())
        })
    }
    return { get: (chain) => (chain === "BEP20" ? Option.some(client) : Option.none()), all: [client], nodes: Effect.succeed([]) }
  })
)

const ConfigLive = Layer.succeed(CustodyConfig, {
  pollInterval: Duration.millis(50),
  gasMarginPercent: 30,
  maxGasSharePercent: 5,
  resumeAfter: Duration.minutes(1),
  gasThresholds: { TRC20: { low: "100", empty: "10" }, BEP20: { low: "0.1", empty: "0.005" }, SOLANA: { low: "0.5", empty: "0.01" } },
  prices: new Map(),
  priceSource: "none",
  autoSweep: new Map(),
  autoSweepInterval: Duration.minutes(1),
  crashPoint: Option.none(),
  stuckAfterMinutes: 30
})

const TestLive = TransferSender.Default.pipe(
  Layer.provideMerge(CustodyStore.Default),
  Layer.provideMerge(ClientsLive),
  Layer.provideMerge(ConfigLive),
  Layer.provideMerge(DevnetLive),
  Layer.provideMerge(SignerLive),
  Layer.provideMerge(TestDatabaseLive)
)

const customer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX })
const TOKEN = 10n ** 18n

describe("a transfer in flight is never signed twice", () => {
  layer(TestLive, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("mined between the lookup and the nonce check: the sender finds it again and finishes with it — one transaction, the money moved once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const devnet = yield* Devnet
        const sender = yield* TransferSender
        const from = yield* evmAddressOf(6, 0)
        const to = yield* evmAddressOf(6, 1)
        yield* fundNative(devnet.rpcUrl, from, TOKEN)
        const wallet = createWalletClient({ account: customer, transport: http(devnet.rpcUrl) })
        yield* Effect.promise(() => wallet.writeContract({ address: devnet.usdt, abi: tokenAbi, functionName: "transfer", args: [from, 100n * TOKEN], chain: devnetChain(devnet.rpcUrl) }))

        yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
                   VALUES ('m1', 'M1', 'a1', 'p', 'p', 'b', 'u', 'exchange_wallet', '{}', 'whsec_test')`
        yield* sql`INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index) VALUES
                   ('wal_from', 'm1', 'receive', 'deposit', 'BEP20', 'EVM', ${from}, 'm/44/60/6/0/0', 6, 0),
                   ('wal_to', 'm1', 'main', 'main', 'BEP20', 'EVM', ${to}, 'm/44/60/6/0/1', 6, 1)`
        yield* sql`INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address, to_wallet_id, to_address, amount)
                   VALUES ('op_1', 'collection', 'SWEEPING', 'm1', 'BEP20', 'USDT', 'wal_from', ${from}, 'wal_to', ${to}, ${(10n * TOKEN).toString()})`
        const [operation] = yield* sql`SELECT ${sql.literal(OPERATION_COLUMNS)} FROM custody_operations WHERE id = 'op_1'`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(OperationRow)))
        )
        if (operation === undefined) return yield* Effect.dieMessage("no operation")

        const outcome = yield* sender.send(operation, {
          from: { family: "EVM", account: 6, index: 0 }, to, currency: "USDT", amount: 10n * TOKEN, decimals: 18, walletId: "wal_from"
        })
        // before the fix: the missed lookup read as "dead", a new transaction was signed each time, until
        // the sender held no more (ten transfers of ten tokens: all 100 sent; then "refused before signing")
        expect(outcome._tag, outcome._tag === "Failed" ? outcome.reason : "").toBe("Final")

        const attempts = yield* sql<{ tx_hash: string; status: string }>`SELECT tx_hash, status FROM custody_transactions WHERE operation_id = 'op_1'`
        expect(attempts.length).toBe(1)
        expect(outcome._tag === "Final" ? outcome.txHash : "").toBe(attempts[0]?.tx_hash)
        // on chain: ten tokens moved, once
        expect(yield* devnet.client.balance(to, "USDT")).toBe(10n * TOKEN)
        expect(yield* devnet.client.balance(from, "USDT")).toBe(90n * TOKEN)
      }))
  })
})
