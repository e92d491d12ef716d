import { keccak_256 } from "@noble/hashes/sha3.js"
import { createHash } from "node:crypto"
import type { SyntheticAccounts } from "./catch-up-addresses.js"
import { RecentBlocks } from "./catch-up-cache.js"
import { PaidTally } from "./catch-up-paid.js"
import { SyntheticRandom } from "./catch-up-random.js"

/** The watched tokens: Binance-Peg USDT and USDC on BNB Smart Chain mainnet (both 18 decimals). */
export const BSC_TOKENS = {
  USDT: "0x55d398326f99059ff775485246999027b3197955",
  USDC: "0x8ac76a51cc950d9822d68b83fe1ad97b32cd580d"
} as const

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
const APPROVAL_TOPIC = "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925"
const EMPTY_UNCLES = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
const EMPTY_ROOT = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
const ZERO32 = `0x${"0".repeat(64)}`

/**
 * A block's make-up, after BSC mainnet: about 100 transactions; token transfers of USDT (40%) and USDC (15%),
 * 1% of them to watched addresses; transfers of four tokens nobody watches (30%, also 1% to watched
 * addresses: not deposits, as those tokens are not configured); BNB value transfers (8%, 1% to watched
 * addresses, 3% reverted); approvals (the rest: a USDT log that is not a Transfer).
 */
const SHAPE = {
  transactions: 90,
  spread: 21,
  usdt: 0.4,
  usdc: 0.15,
  otherToken: 0.3,
  native: 0.08,
  watched: 0.01,
  nativeReverted: 0.03,
  otherTokens: 4,
  blockSeconds: 3,
  genesisSeconds: 1_735_689_600
}

type Planned =
  | {
      readonly kind: "token"
      readonly token: string
      readonly currency: string | undefined
      readonly from: string
      readonly to: string
      readonly amount: bigint
      readonly watched: boolean
    }
  | { readonly kind: "approval"; readonly from: string; readonly to: string; readonly amount: bigint }
  | {
      readonly kind: "native"
      readonly from: string
      readonly to: string
      readonly amount: bigint
      readonly ok: boolean
      readonly watched: boolean
    }

/** One log of a block, with what eth_getLogs filters on, and its JSON as a node prints it. */
export interface SyntheticLog {
  readonly address: string
  readonly topics: ReadonlyArray<string>
  readonly json: string
}

interface Made {
  readonly hash: string
  readonly full: string
  readonly hashesOnly: string
  readonly logs: ReadonlyArray<SyntheticLog>
  readonly receipts: ReadonlyArray<string>
}

const hex = (value: number | bigint) => `0x${value.toString(16)}`
const sha256Hex = (value: string) => createHash("sha256").update(value).digest("hex")
const word = (hex40: string) => `000000000000000000000000${hex40}`

/** The three bloom bits (EIP: keccak256 of the value, three 11-bit slices) of a log address or topic. */
const bloomBits = new Map<string, readonly [number, number, number]>()
const bitsOf = (valueHex: string) => {
  const known = bloomBits.get(valueHex)
  if (known !== undefined) return known
  const h = keccak_256(Buffer.from(valueHex.slice(2), "hex"))
  const bit = (i: number) => (((h[i] ?? 0) << 8) | (h[i + 1] ?? 0)) & 2047
  const made = [bit(0), bit(2), bit(4)] as const
  bloomBits.set(valueHex, made)
  return made
}
const bloomOf = (logs: ReadonlyArray<SyntheticLog>) => {
  const bytes = new Uint8Array(256)
  for (const log of logs) {
    for (const value of [log.address, ...log.topics]) {
      for (const bit of bitsOf(value)) bytes[255 - (bit >> 3)] = (bytes[255 - (bit >> 3)] ?? 0) | (1 << (bit & 7))
    }
  }
  return `0x${Buffer.from(bytes).toString("hex")}`
}

/**
 * A BNB Smart Chain made on the fly from each block's number and a seed: blocks 0…head as geth answers
 * them (full transactions or hashes), their logs for eth_getLogs, every transaction's receipt. A
 * transaction hash carries its block and position in its last 16 hex digits, so a receipt is found without
 * storing anything; the rest of it is a hash of the seed and that position.
 */
export class SyntheticBscChain {
  // a range's logs and bodies, then its receipts, are asked within moments; 512 covers the ranges in flight
  private readonly recent = new RecentBlocks<Made>(512)
  private readonly hashes = new RecentBlocks<string>(8192)
  readonly otherTokens: ReadonlyArray<string>

  constructor(
    readonly seed: number,
    readonly head: number,
    private readonly accounts: SyntheticAccounts
  ) {
    this.otherTokens = Array.from(
      { length: SHAPE.otherTokens },
      (_, k) => `0x${sha256Hex(`facet-catch-up:BEP20:token:${k}`).slice(0, 40)}`
    )
  }

  blockHash(n: number): string {
    return this.hashes.getOrMake(n, () => `0x${sha256Hex(`facet-catch-up:BEP20:${this.seed}:${n}`)}`)
  }

  txHash(n: number, i: number): string {
    return `0x${sha256Hex(`facet-catch-up:BEP20:${this.seed}:${n}:${i}`).slice(0, 48)}${n.toString(16).padStart(10, "0")}${i.toString(16).padStart(6, "0")}`
  }

  plan(n: number): ReadonlyArray<Planned> {
    if (n === 0) return []
    const rng = new SyntheticRandom(this.seed, n)
    const count = SHAPE.transactions + rng.below(SHAPE.spread)
    const planned: Array<Planned> = []
    const stranger = () => `0x${this.accounts.stranger(rng.below(50_000))}`
    const watchedOr = () => {
      const watched = this.accounts.watchedCount > 0 && rng.fraction() < SHAPE.watched
      return { watched, to: watched ? `0x${this.accounts.watched(rng.below(this.accounts.watchedCount))}` : stranger() }
    }
    for (let i = 0; i < count; i++) {
      const roll = rng.fraction()
      const from = stranger()
      const tokenAmount = BigInt(1 + rng.below(10_000_000)) * 10n ** 12n
      if (roll < SHAPE.usdt + SHAPE.usdc) {
        const currency = roll < SHAPE.usdt ? "USDT" : "USDC"
        planned.push({
          kind: "token",
          token: BSC_TOKENS[currency],
          currency,
          from,
          ...watchedOr(),
          amount: tokenAmount
        })
      } else if (roll < SHAPE.usdt + SHAPE.usdc + SHAPE.otherToken) {
        const token = this.otherTokens[rng.below(this.otherTokens.length)] ?? BSC_TOKENS.USDT
        planned.push({ kind: "token", token, currency: undefined, from, ...watchedOr(), amount: tokenAmount })
      } else if (roll < SHAPE.usdt + SHAPE.usdc + SHAPE.otherToken + SHAPE.native) {
        planned.push({
          kind: "native",
          from,
          ...watchedOr(),
          amount: BigInt(1 + rng.below(1_000_000_000)) * 10n ** 9n,
          ok: rng.fraction() >= SHAPE.nativeReverted
        })
      } else {
        planned.push({ kind: "approval", from, to: stranger(), amount: tokenAmount })
      }
    }
    return planned
  }

  /** The successful USDT, USDC and BNB transfers to watched addresses in blocks `from`–`to`. */
  paid(from: number, to: number): PaidTally {
    const tally = new PaidTally()
    for (let n = Math.max(0, from); n <= Math.min(to, this.head); n++) {
      for (const p of this.plan(n)) {
        if (p.kind === "token" && p.watched && p.currency !== undefined) tally.add(p.currency, p.amount)
        if (p.kind === "native" && p.watched && p.ok) tally.add("BNB", p.amount)
      }
    }
    return tally
  }

  private make(n: number): Made {
    const hash = this.blockHash(n)
    const parent = n === 0 ? ZERO32 : this.blockHash(n - 1)
    const number = hex(n)
    const rng = new SyntheticRandom(this.seed, n, 1)
    const txs: Array<string> = []
    const txHashes: Array<string> = []
    const logs: Array<SyntheticLog> = []
    const receipts: Array<string> = []
    let gasUsed = 0
    this.plan(n).forEach((p, i) => {
      const txHash = this.txHash(n, i)
      const index = hex(i)
      const contract = p.kind === "token" ? p.token : p.kind === "approval" ? BSC_TOKENS.USDT : undefined
      const input =
        p.kind === "token"
          ? `0xa9059cbb${word(p.to.slice(2))}${p.amount.toString(16).padStart(64, "0")}`
          : p.kind === "approval"
            ? `0x095ea7b3${word(p.to.slice(2))}${p.amount.toString(16).padStart(64, "0")}`
            : "0x"
      const gas = p.kind === "native" ? 21_000 : 51_000 + rng.below(20_000)
      gasUsed += gas
      const to = contract ?? p.to
      const value = p.kind === "native" ? hex(p.amount) : "0x0"
      txs.push(
        `{"blockHash":"${hash}","blockNumber":"${number}","from":"${p.from}","gas":"${hex(gas + 10_000)}","gasPrice":"0x3b9aca00","hash":"${txHash}","input":"${input}","nonce":"${hex(rng.below(100_000))}","to":"${to}","transactionIndex":"${index}","value":"${value}","type":"0x0","chainId":"0x38","v":"${rng.below(2) === 0 ? "0x93" : "0x94"}","r":"0x${rng.filler(64)}","s":"0x${rng.filler(64)}"}`
      )
      txHashes.push(`"${txHash}"`)
      const own: Array<SyntheticLog> = []
      if (contract !== undefined && p.kind !== "native") {
        const topics = [
          p.kind === "token" ? TRANSFER_TOPIC : APPROVAL_TOPIC,
          `0x${word(p.from.slice(2))}`,
          `0x${word(p.to.slice(2))}`
        ]
        const json = `{"address":"${contract}","topics":[${topics.map((t) => `"${t}"`).join(",")}],"data":"0x${p.amount.toString(16).padStart(64, "0")}","blockNumber":"${number}","transactionHash":"${txHash}","transactionIndex":"${index}","blockHash":"${hash}","logIndex":"${hex(logs.length)}","removed":false}`
        own.push({ address: contract, topics, json })
        logs.push(...own)
      }
      const ok = p.kind !== "native" || p.ok
      receipts.push(
        `{"blockHash":"${hash}","blockNumber":"${number}","contractAddress":null,"cumulativeGasUsed":"${hex(gasUsed)}","effectiveGasPrice":"0x3b9aca00","from":"${p.from}","gasUsed":"${hex(gas)}","logs":[${own.map((l) => l.json).join(",")}],"logsBloom":"${bloomOf(own)}","status":"${ok ? "0x1" : "0x0"}","to":"${to}","transactionHash":"${txHash}","transactionIndex":"${index}","type":"0x0"}`
      )
    })
    const header = `"baseFeePerGas":"0x0","blobGasUsed":"0x0","difficulty":"0x2","excessBlobGas":"0x0","extraData":"0xd883010406846765746888676f312e32312e3132856c696e7578","gasLimit":"0x5f5e100","gasUsed":"${hex(gasUsed)}","hash":"${hash}","logsBloom":"${bloomOf(logs)}","miner":"0x${this.accounts.stranger(n % 21)}","mixHash":"${ZERO32}","nonce":"0x0000000000000000","number":"${number}","parentBeaconBlockRoot":"${ZERO32}","parentHash":"${parent}","receiptsRoot":"0x${sha256Hex(`${hash}:receipts`)}","sha3Uncles":"${EMPTY_UNCLES}","size":"${hex(600 + txs.length * 180)}","stateRoot":"0x${sha256Hex(`${hash}:state`)}","timestamp":"${hex(SHAPE.genesisSeconds + n * SHAPE.blockSeconds)}","totalDifficulty":"${hex(2 * n + 1)}"`
    const tail = `"transactionsRoot":"${txs.length === 0 ? EMPTY_ROOT : `0x${sha256Hex(`${hash}:txs`)}`}","uncles":[],"withdrawals":[],"withdrawalsRoot":"${EMPTY_ROOT}"`
    return {
      hash,
      full: `{${header},"transactions":[${txs.join(",")}],${tail}}`,
      hashesOnly: `{${header},"transactions":[${txHashes.join(",")}],${tail}}`,
      logs,
      receipts
    }
  }

  private made(n: number): Made {
    return this.recent.getOrMake(n, (m) => this.make(m))
  }

  /** eth_getBlockByNumber: the block with full transactions or their hashes; `null` past the head. */
  block(n: number, full: boolean): string {
    if (n < 0 || n > this.head) return "null"
    const made = this.made(n)
    return full ? made.full : made.hashesOnly
  }

  /** The logs of block `n` (in log index order). */
  logs(n: number): ReadonlyArray<SyntheticLog> {
    return n < 0 || n > this.head ? [] : this.made(n).logs
  }

  /** eth_getTransactionReceipt: found from the hash itself; `null` for a hash this chain never made. */
  receipt(txHash: string): string {
    const hash = txHash.toLowerCase()
    if (!/^0x[0-9a-f]{64}$/.test(hash)) return "null"
    const n = parseInt(hash.slice(50, 60), 16)
    const i = parseInt(hash.slice(60), 16)
    if (n > this.head || this.txHash(n, i) !== hash) return "null"
    return this.made(n).receipts[i] ?? "null"
  }
}
