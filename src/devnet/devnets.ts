import { Config, Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Address, createPublicClient, http } from "viem"
import { ChainEndpoints, confirmationsConfig } from "../chains/chain-endpoints.js"
import { checkChainIdentity } from "../chains/chain-identity.js"
import { AppConfig } from "../config.js"
import { isHexAddress, tronHex41 } from "../keys/address-encoding.js"
import { Signer } from "../keys/signer.js"
import { isAlive } from "../processes/child-process.js"
import { ChainIdentityStore } from "../stores/chain-identity-store.js"
import { IndexerStore } from "../stores/indexer-store.js"
import { tronCustomerAddress } from "./devnet-customers.js"
import { DevnetError } from "./devnet-error.js"
import { devnetViaConfig, reachedThrough } from "./devnet-via.js"
import { fundNative, mineBlocks, startAnvilDevnet } from "./evm/anvil-devnet.js"
import { startSolanaDevnet } from "./solana/solana-devnet.js"
import { startTronDevnet } from "./tron/tron-devnet.js"

/** What `npm run pay` and the indexer CLI read to reach the devnets `npm start` runs. */
export const DevnetFile = Schema.Struct({
  bep20: Schema.Struct({
    rpcUrl: Schema.String,
    chainId: Schema.Number,
    tokens: Schema.Record({ key: Schema.String, value: Schema.String })
  }),
  // forwarder: the devnet's built-in TRX forwarder contract (internal transactions); absent in older files
  tron: Schema.Struct({
    url: Schema.String,
    tokens: Schema.Record({ key: Schema.String, value: Schema.String }),
    forwarder: Schema.optional(Schema.String)
  }),
  solana: Schema.Struct({ rpcUrl: Schema.String, tokens: Schema.Record({ key: Schema.String, value: Schema.String }) }),
  pid: Schema.Number
})
export type DevnetFile = typeof DevnetFile.Type

export const devnetFilePath = (dataDir: string) => path.join(dataDir, "devnet.json")

/** Controls the tests and operators use on the running devnets. */
export class Devnets extends Context.Tag("facet/Devnets")<
  Devnets,
  {
    readonly bep20RpcUrl: string
    readonly tronUrl: string
    readonly solanaRpcUrl: string
  }
>() {}

/** The devnets cannot be resumed (or must not be): the start refuses with this one line. */
export class DevnetStateError extends Schema.TaggedError<DevnetStateError>()("DevnetStateError", {
  message: Schema.String
}) {}

/** The format of the devnets' kept state; state of another format is refused, not misread. */
const DEVNET_FORMAT = 1

/** Where the devnets keep their chains: anvil's state, the TRON and Solana journals, and the manifest. */
export const devnetStatePaths = (dataDir: string) => {
  const dir = path.join(dataDir, "devnets")
  return {
    dir,
    manifest: path.join(dir, "manifest.json"),
    anvilState: path.join(dir, "bep20-anvil-state.json"),
    tronJournal: path.join(dir, "tron.journal"),
    solanaJournal: path.join(dir, "solana.journal")
  }
}

/** Written once the three devnets are set up: from then on a start resumes them instead of making new ones. */
const DevnetManifest = Schema.Struct({
  format: Schema.Number,
  created_at: Schema.String,
  bep20: Schema.Struct({
    tokens: Schema.Struct({ USDT: Schema.String, VELNX: Schema.String }),
    /**
     * anvil's genesis time (seconds), passed again at every start: anvil's saved state does not always
     * keep block 0 (seen after a SIGKILL during payments), and a genesis it makes again is then the same.
     */
    genesis_timestamp: Schema.optional(Schema.Number)
  })
})

const RESET_HINT = "run `npm run devnet:reset` for a clean slate (it asks first)"

/**
 * Whether this start resumes the devnets of `dataDir` or makes new ones, refusing when neither is safe:
 * state of another format, part of it missing, or a database that indexed devnet chains whose state is gone.
 */
const planDevnets = (dataDir: string) =>
  Effect.gen(function* () {
    const paths = devnetStatePaths(dataDir)
    const endpoints = devnetFilePath(dataDir)
    if (fs.existsSync(endpoints)) {
      const owner = Schema.decodeUnknownOption(Schema.parseJson(DevnetFile))(fs.readFileSync(endpoints, "utf8"))
      if (owner._tag === "Some" && owner.value.pid !== process.pid && isAlive(owner.value.pid)) {
        return yield* new DevnetStateError({
          message: `the devnets in ${dataDir} belong to a running service (pid ${owner.value.pid}); stop it first or use another FACET_DATA_DIR`
        })
      }
    }
    if (fs.existsSync(paths.manifest)) {
      const manifest = yield* Schema.decodeUnknown(Schema.parseJson(DevnetManifest))(
        fs.readFileSync(paths.manifest, "utf8")
      ).pipe(
        Effect.mapError(
          () =>
            new DevnetStateError({
              message: `${paths.manifest} is unreadable, so the devnets cannot be resumed; ${RESET_HINT}`
            })
        )
      )
      if (manifest.format !== DEVNET_FORMAT) {
        return yield* new DevnetStateError({
          message: `the devnets in ${paths.dir} were kept by devnet format ${manifest.format}; this version reads format ${DEVNET_FORMAT} and cannot resume them; ${RESET_HINT}`
        })
      }
      const missing = [paths.anvilState, paths.tronJournal, paths.solanaJournal].filter((file) => !fs.existsSync(file))
      if (missing.length > 0) {
        return yield* new DevnetStateError({
          message: `the devnets in ${paths.dir} cannot be resumed: ${missing.map((f) => path.basename(f)).join(", ")} missing; ${RESET_HINT}`
        })
      }
      const { USDT, VELNX } = manifest.bep20.tokens
      if (!isHexAddress(USDT) || !isHexAddress(VELNX))
        return yield* new DevnetStateError({
          message: `${paths.manifest} names no BEP20 token contracts; ${RESET_HINT}`
        })
      return { resume: true as const, tokens: { USDT, VELNX }, genesisTimestamp: manifest.bep20.genesis_timestamp }
    }
    const cursorChains = yield* Effect.flatMap(IndexerStore, (store) => store.cursorChains)
    const identified = yield* Effect.flatMap(ChainIdentityStore, (store) => store.all)
    const indexed = [...new Set([...cursorChains, ...identified.map((i) => i.chain)])].sort()
    if (indexed.length > 0) {
      return yield* new DevnetStateError({
        message: `the database has indexed the devnet chains ${indexed.join(", ")}, but ${paths.dir} holds no devnet to resume (deleted, or kept by an older version); new chains would not match; ${RESET_HINT}`
      })
    }
    // what an interrupted first start may have left is not a chain anyone indexed: start clean
    yield* Effect.sync(() => fs.rmSync(paths.dir, { recursive: true, force: true }))
    return { resume: false as const, genesisTimestamp: Math.floor(Date.now() / 1000) }
  })

/**
 * FACET_NETWORK=devnet (the default): anvil for BEP20, our TRON HTTP devnet and our litesvm Solana RPC,
 * all on free loopback ports, their endpoints written to FACET_DATA_DIR/devnet.json. Their chains are
 * kept in FACET_DATA_DIR/devnets and resumed by the next start (the platform's gas wallets are funded
 * once, when the chains are made); each chain's genesis must be the one the database indexed.
 */
export const DevnetsLive = Layer.scopedContext(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const signer = yield* Signer
    const confirmations = yield* confirmationsConfig("devnet")
    const timing = yield* Config.all({
      bep20BlockSeconds: Config.integer("FACET_DEVNET_BEP20_BLOCK_SECONDS").pipe(Config.withDefault(1)),
      tronBlockMs: Config.integer("FACET_DEVNET_TRON_BLOCK_MS").pipe(Config.withDefault(1000)),
      solanaSlotMs: Config.integer("FACET_DEVNET_SOLANA_SLOT_MS").pipe(Config.withDefault(400)),
      solanaFinalityLag: Config.integer("FACET_DEVNET_SOLANA_FINALITY_SLOTS").pipe(Config.withDefault(8))
    })
    // the service may reach a devnet through another URL (a proxy in front of it: a fault campaign's
    // load-balanced hostile nodes); devnet.json keeps the devnets' own URLs, for `npm run pay`
    const via = yield* devnetViaConfig
    const plan = yield* planDevnets(config.dataDir)
    const paths = devnetStatePaths(config.dataDir)
    yield* Effect.sync(() => fs.mkdirSync(paths.dir, { recursive: true }))
    const [anvil, tron, solana] = yield* Effect.all(
      [
        startAnvilDevnet({
          blockTimeSeconds: timing.bep20BlockSeconds,
          avoidPorts: [config.port],
          stateFile: paths.anvilState,
          ...(plan.genesisTimestamp === undefined ? {} : { genesisTimestamp: plan.genesisTimestamp }),
          ...(plan.resume ? { tokens: plan.tokens } : {})
        }),
        startTronDevnet({
          blockTimeMs: timing.tronBlockMs,
          solidLag: confirmations.tron,
          journalFile: paths.tronJournal,
          avoidPorts: [config.port]
        }),
        startSolanaDevnet({
          slotMs: timing.solanaSlotMs,
          finalityLag: timing.solanaFinalityLag,
          journalFile: paths.solanaJournal,
          avoidPorts: [config.port]
        })
      ],
      { concurrency: 3 }
    )

    if (!plan.resume) {
      // the platform's gas wallets (account 0, index 0 of each key family) and the TRON customer get funds
      const [[evmGas], [tronGas], [solGas]] = yield* Effect.all([
        signer.deriveAddresses("EVM", 0, [0]),
        signer.deriveAddresses("TRON", 0, [0]),
        signer.deriveAddresses("SOLANA", 0, [0])
      ])
      if (evmGas !== undefined && isHexAddress(evmGas.address))
        yield* fundNative(anvil.rpcUrl, evmGas.address, 1_000n * 10n ** 18n)
      const fundTron = (address: string | undefined, currency: string, amount: bigint) => {
        const hex = tronHex41(address)
        if (hex !== undefined) tron.ledger.fund(hex, currency, amount)
      }
      fundTron(tronGas?.address, "TRX", 100_000n * 10n ** 6n)
      fundTron(tronCustomerAddress, "TRX", 1_000_000n * 10n ** 6n)
      fundTron(tronCustomerAddress, "USDT", 1_000_000n * 10n ** 6n)
      if (solGas !== undefined) solana.chain.airdrop(solGas.address, 100n * 10n ** 9n)
      // anvil's state is dumped every second: the manifest (which makes the next start resume) waits for it
      yield* mineBlocks(anvil.rpcUrl, 1)
      yield* Effect.sleep("1100 millis")
      yield* Effect.try({
        try: () => {
          const manifest: typeof DevnetManifest.Encoded = {
            format: DEVNET_FORMAT,
            created_at: new Date().toISOString(),
            bep20: { tokens: anvil.tokens, genesis_timestamp: plan.genesisTimestamp }
          }
          fs.writeFileSync(`${paths.manifest}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`)
          fs.renameSync(`${paths.manifest}.tmp`, paths.manifest)
        },
        catch: (cause) => new DevnetError({ message: `cannot write ${paths.manifest}`, cause })
      })
    }

    // the chains must be the ones the database indexed (a resumed devnet is; anything else is refused)
    const genesis = yield* Effect.tryPromise({
      try: () => createPublicClient({ transport: http(anvil.rpcUrl, { retryCount: 0 }) }).getBlock({ blockNumber: 0n }),
      catch: (cause) => new DevnetError({ message: "cannot read the BEP20 devnet's genesis", cause })
    })
    for (const [chain, hash] of [
      ["BEP20", genesis.hash],
      ["TRC20", tron.ledger.blocks[0]?.blockID ?? ""],
      ["SOLANA", solana.chain.genesisHash]
    ] as const) {
      yield* checkChainIdentity(chain, "devnet", hash).pipe(
        Effect.catchTag("ChainIdentityMismatch", (mismatch) => new DevnetStateError({ message: mismatch.message }))
      )
    }

    const file: DevnetFile = {
      bep20: {
        rpcUrl: anvil.rpcUrl,
        chainId: anvil.chainId,
        tokens: { USDT: anvil.tokens.USDT, VELNX: anvil.tokens.VELNX }
      },
      tron: { url: tron.url, tokens: { USDT: tron.tokens.USDT }, forwarder: tron.forwarder },
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
    yield* Effect.logInfo(
      `devnets ${plan.resume ? "resumed" : "made"} (kept in ${paths.dir}); endpoints in ${devnetFilePath(config.dataDir)}`
    )
    const endpoints = yield* reachedThrough(
      {
        bep20: {
          rpcUrl: anvil.rpcUrl,
          chainId: anvil.chainId,
          tokens: new Map<string, Address>([
            ["USDT", anvil.tokens.USDT],
            ["VELNX", anvil.tokens.VELNX]
          ]),
          confirmations: confirmations.bep20,
          traces: "callTracer" as const
        },
        tron: { url: tron.url, tokens: new Map([["USDT", tron.tokens.USDT]]), confirmations: confirmations.tron },
        solana: { rpcUrl: solana.url, tokens: new Map([["USDT", { mint: solana.usdtMint, decimals: 6 }]]) }
      },
      via
    )
    return Context.make(ChainEndpoints, endpoints).pipe(
      Context.add(Devnets, { bep20RpcUrl: anvil.rpcUrl, tronUrl: tron.url, solanaRpcUrl: solana.url })
    )
  })
)
