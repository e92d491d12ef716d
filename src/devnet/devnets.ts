import { isHexAddress, tronHex41 } from "../keys/address-encoding.js"
import { Config, Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Address } from "viem"
import { ChainEndpoints, confirmationsConfig } from "../chains/chain-endpoints.js"
import { AppConfig } from "../config.js"
import { Signer } from "../keys/signer.js"
import { tronCustomerAddress } from "./devnet-customers.js"
import { fundNative, startAnvilDevnet } from "./evm/anvil-devnet.js"
import { startSolanaDevnet } from "./solana/solana-devnet.js"
import { startTronDevnet } from "./tron/tron-devnet.js"

/** What `npm run pay` and the indexer CLI read to reach the devnets `npm start` runs. */
export const DevnetFile = Schema.Struct({
  bep20: Schema.Struct({ rpcUrl: Schema.String, chainId: Schema.Number, tokens: Schema.Record({ key: Schema.String, value: Schema.String }) }),
  tron: Schema.Struct({ url: Schema.String, tokens: Schema.Record({ key: Schema.String, value: Schema.String }) }),
  solana: Schema.Struct({ rpcUrl: Schema.String, tokens: Schema.Record({ key: Schema.String, value: Schema.String }) }),
  pid: Schema.Number
})
export type DevnetFile = typeof DevnetFile.Type

export const devnetFilePath = (dataDir: string) => path.join(dataDir, "devnet.json")

/** Controls the tests and operators use on the running devnets. */
export class Devnets extends Context.Tag("facet/Devnets")<Devnets, {
  readonly bep20RpcUrl: string
  readonly tronUrl: string
  readonly solanaRpcUrl: string
}>() {}


/**
 * FACET_NETWORK=devnet (the default): anvil for BEP20, our TRON HTTP devnet and our litesvm Solana RPC,
 * all on free loopback ports, with the platform's gas wallets funded and the endpoints written to
 * FACET_DATA_DIR/devnet.json. Stopped with the service.
 */
export const DevnetsLive = Layer.scopedContext(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const signer = yield* Signer
    const confirmations = yield* confirmationsConfig("devnet")
    const timing = yield* Config.all({
      bep20BlockSeconds: Config.integer("FACET_DEVNET_BEP20_BLOCK_SECONDS").pipe(Config.withDefault(1)),
      tronBlockMs: Config.integer("FACET_DEVNET_TRON_BLOCK_MS").pipe(Config.withDefault(1000)),
      solanaSlotMs: Config.integer("FACET_DEVNET_SOLANA_SLOT_MS").pipe(Config.withDefault(400)),
      solanaFinalityLag: Config.integer("FACET_DEVNET_SOLANA_FINALITY_SLOTS").pipe(Config.withDefault(8))
    })
    const [anvil, tron, solana] = yield* Effect.all([
      startAnvilDevnet({ blockTimeSeconds: timing.bep20BlockSeconds }),
      startTronDevnet({ blockTimeMs: timing.tronBlockMs, solidLag: confirmations.tron }),
      startSolanaDevnet({ slotMs: timing.solanaSlotMs, finalityLag: timing.solanaFinalityLag })
    ], { concurrency: 3 })

    // the platform's gas wallets (account 0, index 0 of each key family) and the TRON customer get funds
    const [[evmGas], [tronGas], [solGas]] = yield* Effect.all([
      signer.deriveAddresses("EVM", 0, [0]),
      signer.deriveAddresses("TRON", 0, [0]),
      signer.deriveAddresses("SOLANA", 0, [0])
    ])
    if (evmGas !== undefined && isHexAddress(evmGas.address)) yield* fundNative(anvil.rpcUrl, evmGas.address, 1_000n * 10n ** 18n)
    const fundTron = (address: string | undefined, currency: string, amount: bigint) => {
      const hex = tronHex41(address)
      if (hex !== undefined) tron.ledger.fund(hex, currency, amount)
    }
    fundTron(tronGas?.address, "TRX", 100_000n * 10n ** 6n)
    fundTron(tronCustomerAddress, "TRX", 1_000_000n * 10n ** 6n)
    fundTron(tronCustomerAddress, "USDT", 1_000_000n * 10n ** 6n)
    if (solGas !== undefined) solana.chain.airdrop(solGas.address, 100n * 10n ** 9n)

    const file: DevnetFile = {
      bep20: { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, tokens: { USDT: anvil.tokens.USDT, VELNX: anvil.tokens.VELNX } },
      tron: { url: tron.url, tokens: { USDT: tron.tokens.USDT } },
      solana: { rpcUrl: solana.url, tokens: { USDT: solana.usdtMint } },
      pid: process.pid
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        fs.mkdirSync(config.dataDir, { recursive: true })
        fs.writeFileSync(devnetFilePath(config.dataDir), `${JSON.stringify(file, null, 2)}\n`)
      }),
      () => Effect.sync(() => fs.rmSync(devnetFilePath(config.dataDir), { force: true }))
    )
    yield* Effect.logInfo(`devnets ready; endpoints in ${devnetFilePath(config.dataDir)}`)
    const endpoints = {
      bep20: { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, tokens: new Map<string, Address>([["USDT", anvil.tokens.USDT], ["VELNX", anvil.tokens.VELNX]]), confirmations: confirmations.bep20 },
      tron: { url: tron.url, tokens: new Map([["USDT", tron.tokens.USDT]]), confirmations: confirmations.tron },
      solana: { rpcUrl: solana.url, tokens: new Map([["USDT", { mint: solana.usdtMint, decimals: 6 }]]) }
    }
    return Context.make(ChainEndpoints, endpoints).pipe(
      Context.add(Devnets, { bep20RpcUrl: anvil.rpcUrl, tronUrl: tron.url, solanaRpcUrl: solana.url })
    )
  })
)
