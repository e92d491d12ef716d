import { Duration, Effect, Schedule } from "effect"
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  http,
  parseAbi
} from "viem"
import { mnemonicToAccount } from "viem/accounts"
import { freePortAvoiding } from "../../database/embedded-postgres.js"
import { DevnetError } from "../devnet-error.js"
import { livePidFromFile, stopPid, waitForExit, withLifeline, writePidFile } from "../../processes/child-process.js"
import { compileContract } from "./solidity-compiler.js"

/** Anvil's own well-known development mnemonic: its accounts are devnet customers and the deployer. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk"
const DEPLOYER_INDEX = 8
export const CUSTOMER_INDEX = 9
export const ANVIL_CHAIN_ID = 31337

export const tokenAbi = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function decimals() view returns (uint8)",
  "function transfer(address to, uint256 value) returns (bool)",
  "function approve(address spender, uint256 value) returns (bool)",
  "function mint(address to, uint256 value)",
  "function batchTransfer(address[] to, uint256[] values) returns (bool)",
  "event Transfer(address indexed from, address indexed to, uint256 value)"
])

export interface AnvilDevnet {
  readonly rpcUrl: string
  readonly pid: number
  readonly tokens: { readonly USDT: Address; readonly VELNX: Address }
  readonly chainId: number
}

const anvilBinary = Effect.try({
  try: () => {
    const require = createRequire(import.meta.url)
    return path.join(path.dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin", "anvil")
  },
  catch: (cause) =>
    new DevnetError({ message: "the anvil binary (npm @foundry-rs/anvil-linux-amd64) is not installed", cause })
})

const CONTRACT_SOURCE = fileURLToPath(new URL("./DevnetToken.sol", import.meta.url))

/** Compiles the devnet token. */
export const compileToken = compileContract(CONTRACT_SOURCE, "DevnetToken")

export interface AnvilOptions {
  /** Mine an empty block this often while the chain has recent transactions (see `heartbeat`); off when unset. */
  readonly blockTimeSeconds?: number
  readonly port?: number
  /**
   * Where the chain is kept across restarts: anvil loads it at start when it exists and dumps it every
   * second and when it stops (SIGTERM, which the lifeline also sends when the service dies).
   */
  readonly stateFile?: string
  /** The token contracts of a resumed chain: checked to be there instead of deployed again. */
  readonly tokens?: { readonly USDT: Address; readonly VELNX: Address }
  /** Block 0's time (seconds): the same time gives the same genesis hash, even if anvil makes it again. */
  readonly genesisTimestamp?: number
  /**
   * Ports anvil must not take (the service's HTTP port: it is bound after the devnets start, and a free
   * port picked before that could be the same — seen once in CI, the service then never became healthy).
   */
  readonly avoidPorts?: ReadonlyArray<number>
}

/** Blocks mined after the last transaction before an idle devnet stops growing. */
const IDLE_AFTER_BLOCKS = 32

/**
 * A real EVM node for BEP20 on loopback: anvil, run from its binary so one PID owns it, with the
 * devnet's USDT and VELNX (18 decimals) deployed and the customer account funded (or, resuming a chain
 * from `stateFile`, found where they were). Transactions are mined as they arrive; with
 * `blockTimeSeconds` empty blocks follow at that pace while there is something to confirm, so an idle
 * chain (and its state file) stops growing. Stopped with its scope, and with the service on a SIGKILL.
 */
export const startAnvilDevnet = (options: AnvilOptions = {}) =>
  Effect.gen(function* () {
    const binary = yield* anvilBinary
    const port =
      options.port !== undefined && options.port > 0 ? options.port : yield* freePortAvoiding(options.avoidPorts ?? [])
    const args = [
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--chain-id",
      String(ANVIL_CHAIN_ID),
      "--mnemonic",
      ANVIL_MNEMONIC,
      "--silent"
    ]
    if (options.genesisTimestamp !== undefined) args.push("--timestamp", String(options.genesisTimestamp))
    const pidFile = options.stateFile === undefined ? undefined : `${options.stateFile}.pid`
    if (options.stateFile !== undefined && pidFile !== undefined) {
      // an anvil of an earlier run may still be writing this state (it dumps when the service dies)
      const earlier = livePidFromFile(pidFile, options.stateFile)
      if (earlier !== undefined) {
        yield* Effect.logWarning(`waiting for the anvil of an earlier run (pid ${earlier}) to save its state`)
        if (!(yield* waitForExit(earlier, "15 seconds")))
          yield* stopPid(earlier, [
            ["SIGTERM", "15 seconds"],
            ["SIGKILL", "5 seconds"]
          ])
      }
      // with the states behind the last 128 blocks saved too: without them anvil cannot trace a block mined
      // before it restarted ("Resource not found"), and an indexer that had not read that block yet could
      // never read it (the fault campaign found a BEP20 indexer stuck so after a SIGKILL). Every state
      // kept would make the file grow with the chain (1,000 blocks: 82 MB, rewritten every second).
      args.push(
        "--state",
        options.stateFile,
        "--state-interval",
        "1",
        "--preserve-historical-states",
        "--prune-history",
        "128"
      )
    }
    const run = withLifeline(binary, args, "TERM")
    const child = yield* Effect.acquireRelease(
      Effect.try({
        try: () => spawn(run.command, run.args, { stdio: "ignore" }),
        catch: (cause) => new DevnetError({ message: "cannot start anvil", cause })
      }),
      (child) =>
        Effect.async<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          child.once("exit", () => resume(Effect.void))
          child.kill("SIGTERM")
        })
    )
    if (pidFile !== undefined && child.pid !== undefined) writePidFile(pidFile, child.pid)
    const rpcUrl = `http://127.0.0.1:${port}`
    const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 })
    yield* Effect.suspend(() =>
      child.exitCode !== null
        ? Effect.fail(
            new DevnetError({
              message: `anvil exited at start (code ${child.exitCode})${options.stateFile === undefined ? "" : `; its state ${options.stateFile} may be unreadable`}`
            })
          )
        : Effect.tryPromise({
            try: () => client.getChainId(),
            catch: (cause) => new DevnetError({ message: `anvil did not answer on ${rpcUrl}`, cause })
          })
    ).pipe(
      Effect.retry({
        schedule: Schedule.spaced("100 millis").pipe(Schedule.upTo("15 seconds")),
        while: () => child.exitCode === null
      })
    )
    const tokens =
      options.tokens === undefined ? yield* deployTokens(rpcUrl) : yield* checkTokens(rpcUrl, options.tokens)
    if (options.tokens !== undefined) yield* timeGoesOn(rpcUrl)
    if (options.blockTimeSeconds !== undefined && options.blockTimeSeconds > 0) {
      yield* Effect.forkScoped(heartbeat(rpcUrl, options.blockTimeSeconds))
    }
    yield* Effect.logInfo(
      `BEP20 devnet (anvil) on ${rpcUrl}: USDT ${tokens.USDT}, VELNX ${tokens.VELNX}${options.tokens === undefined ? "" : " (resumed)"}`
    )
    return { rpcUrl, pid: child.pid ?? 0, tokens, chainId: ANVIL_CHAIN_ID } satisfies AnvilDevnet
  })

/** The devnet as viem's chain definition (for wallet clients that sign with the devnet's accounts). */
export const devnetChain = (rpcUrl: string) =>
  ({
    id: ANVIL_CHAIN_ID,
    name: "facet-devnet",
    nativeCurrency: { name: "BNB", symbol: "BNB", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } }
  }) as const

/** Deploys the devnet's USDT and VELNX and mints the customer its tokens. */
const deployTokens = (rpcUrl: string) =>
  Effect.gen(function* () {
    const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 })
    const { abi, bytecode } = yield* compileToken
    const deployer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: DEPLOYER_INDEX })
    const customer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX })
    const wallet = createWalletClient({ account: deployer, transport: http(rpcUrl, { retryCount: 0 }) })
    const chain = devnetChain(rpcUrl)
    const deploy = (name: string, symbol: string) =>
      Effect.tryPromise({
        try: async () => {
          const hash = await wallet.deployContract({ abi, bytecode, args: [name, symbol, 18], chain })
          const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 })
          if (receipt.contractAddress === null || receipt.contractAddress === undefined)
            throw new Error("no contract address")
          const address = getAddress(receipt.contractAddress)
          const mint = await wallet.writeContract({
            address,
            abi: tokenAbi,
            functionName: "mint",
            args: [customer.address, 10n ** 30n],
            chain
          })
          await client.waitForTransactionReceipt({ hash: mint, pollingInterval: 100 })
          return address
        },
        catch: (cause) => new DevnetError({ message: `cannot deploy ${symbol}`, cause })
      })
    const USDT = yield* deploy("Tether USD (devnet)", "USDT")
    const VELNX = yield* deploy("VELNX (devnet)", "VELNX")
    return { USDT, VELNX }
  })

/** A resumed chain must still hold the token contracts its manifest names. */
const checkTokens = (rpcUrl: string, tokens: { readonly USDT: Address; readonly VELNX: Address }) =>
  Effect.gen(function* () {
    const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 })
    for (const [symbol, address] of Object.entries(tokens)) {
      const code = yield* Effect.tryPromise({
        try: () => client.getCode({ address }),
        catch: (cause) => new DevnetError({ message: `cannot read ${symbol}`, cause })
      })
      if (code === undefined || code === "0x") {
        return yield* new DevnetError({ message: `the resumed BEP20 devnet has no ${symbol} contract at ${address}` })
      }
    }
    return tokens
  })

/**
 * A resumed chain's next block is stamped after its last one, as a real chain's always is: anvil stamps
 * blocks mined faster than one a second ahead of the clock, and after a restart from its state it went back
 * to the clock, so a later block could carry an earlier time (the fault campaign saw 2 s back).
 */
const timeGoesOn = (rpcUrl: string) =>
  Effect.gen(function* () {
    const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 })
    const latest = yield* Effect.tryPromise({
      try: () => client.getBlock({ blockTag: "latest" }),
      catch: (cause) => new DevnetError({ message: "cannot read the resumed chain's last block", cause })
    })
    const now = BigInt(Math.floor(Date.now() / 1000))
    if (latest.timestamp < now) return
    yield* Effect.tryPromise({
      try: () =>
        http(rpcUrl, { retryCount: 0 })({}).request({
          method: "evm_setNextBlockTimestamp",
          params: [`0x${(latest.timestamp + 1n).toString(16)}`]
        }),
      catch: (cause) => new DevnetError({ message: "evm_setNextBlockTimestamp failed", cause })
    })
  })

/**
 * Mines an empty block every `seconds` until IDLE_AFTER_BLOCKS blocks follow the last one with
 * transactions: confirmations advance while they matter, and an idle chain does not grow.
 */
const heartbeat = (rpcUrl: string, seconds: number) =>
  Effect.gen(function* () {
    const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 })
    let emptyBlocks = 0
    for (;;) {
      yield* Effect.sleep(Duration.seconds(seconds))
      const latest = yield* Effect.tryPromise(() => client.getBlock({ blockTag: "latest" }))
      if (latest.transactions.length > 0) emptyBlocks = 0
      if (emptyBlocks >= IDLE_AFTER_BLOCKS) continue
      yield* mineBlocks(rpcUrl, 1)
      emptyBlocks += 1
    }
  }).pipe(
    Effect.catchAll((error) => Effect.logWarning("BEP20 devnet heartbeat failed; retrying", error)),
    Effect.forever
  )

const testClient = (rpcUrl: string) => createTestClient({ mode: "anvil", transport: http(rpcUrl, { retryCount: 0 }) })

/** Gives an address native BNB on the devnet (anvil's balance cheat code). */
export const fundNative = (rpcUrl: string, address: Address, wei: bigint) =>
  Effect.tryPromise({
    try: () => testClient(rpcUrl).setBalance({ address, value: wei }),
    catch: (cause) => new DevnetError({ message: `cannot fund ${address}`, cause })
  })

export const mineBlocks = (rpcUrl: string, blocks: number) =>
  Effect.tryPromise({
    try: () => testClient(rpcUrl).mine({ blocks }),
    catch: (cause) => new DevnetError({ message: "cannot mine", cause })
  })

/** Replaces the last `depth` blocks with a new branch of as many (empty) blocks: `anvil_reorg`. */
export const reorgAnvil = (rpcUrl: string, depth: number) =>
  Effect.tryPromise({
    try: () => http(rpcUrl, { retryCount: 0 })({}).request({ method: "anvil_reorg", params: [depth, []] }),
    catch: (cause) => new DevnetError({ message: `anvil_reorg ${depth} failed`, cause })
  })
