import { createHash } from "node:crypto"
import type { SyntheticAccounts } from "./catch-up-addresses.js"
import { RecentBlocks } from "./catch-up-cache.js"
import { PaidTally } from "./catch-up-paid.js"
import { SyntheticRandom } from "./catch-up-random.js"
import { rawDataHex, type TronContractValue, typeUrl } from "./catch-up-tron-raw-data.js"

/** USDT on TRON mainnet (TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t): the synthetic chain's watched token. */
export const TRON_USDT = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"

/**
 * A block's make-up, after TRON mainnet: about 300 transactions, a third of them USDT `transfer` calls
 * (1% of those to watched addresses, 2% running out of energy: no log, nothing moved), a third TRX
 * transfers (0.5% to watched addresses), the rest calls of other TRC20 tokens and energy delegations.
 */
const SHAPE = {
  transactions: 280,
  spread: 41,
  usdt: 1 / 3,
  trx: 1 / 3,
  otherToken: 1 / 6,
  usdtWatched: 0.01,
  usdtOutOfEnergy: 0.02,
  trxWatched: 0.005,
  otherTokens: 3,
  blockMs: 3_000,
  genesisMs: 1_735_689_600_000
}

type Planned =
  | {
      readonly kind: "usdt" | "token"
      readonly contract: string
      readonly owner: string
      readonly to: string
      readonly amount: number
      readonly ok: boolean
      readonly watched: boolean
    }
  | {
      readonly kind: "trx"
      readonly owner: string
      readonly to: string
      readonly amount: number
      readonly watched: boolean
    }
  | { readonly kind: "delegate"; readonly owner: string; readonly to: string; readonly amount: number }

interface Rendered {
  readonly block: string
  readonly infos: string
}

const sha256Hex = (value: string | Buffer) => createHash("sha256").update(value).digest("hex")
const word = (hex40: string) => `000000000000000000000000${hex40}`
const amountWord = (amount: number) => amount.toString(16).padStart(64, "0")

/**
 * A TRON chain made on the fly from each block's number and a seed: blocks 0…head, each one's body
 * (`getblockbynum`) and transaction infos (`gettransactioninfobyblocknum`) as java-tron answers them, hashes
 * chained by parent. Nothing is stored but the most recent blocks made.
 */
export class SyntheticTronChain {
  // a block's body and infos are asked together; 128 covers every block the indexer has in flight
  private readonly recent = new RecentBlocks<Rendered>(128)
  private readonly ids = new RecentBlocks<string>(4096)
  private readonly otherTokens: ReadonlyArray<string>

  constructor(
    readonly seed: number,
    readonly head: number,
    readonly solidLag: number,
    private readonly accounts: SyntheticAccounts
  ) {
    this.otherTokens = Array.from(
      { length: SHAPE.otherTokens },
      (_, k) => `41${sha256Hex(`facet-catch-up:TRC20:token:${k}`).slice(0, 40)}`
    )
  }

  /** The block id: its number in the first 8 bytes, as java-tron makes it. */
  blockId(n: number): string {
    return this.ids.getOrMake(
      n,
      () => n.toString(16).padStart(16, "0") + sha256Hex(`facet-catch-up:TRC20:${this.seed}:${n}`).slice(16)
    )
  }

  private timestamp(n: number) {
    return SHAPE.genesisMs + n * SHAPE.blockMs
  }

  /** What block `n` holds, decided by its dice alone (cheap: no hashing, no JSON). */
  plan(n: number): ReadonlyArray<Planned> {
    if (n === 0) return []
    const rng = new SyntheticRandom(this.seed, n)
    const count = SHAPE.transactions + rng.below(SHAPE.spread)
    const planned: Array<Planned> = []
    const stranger = () => this.accounts.stranger(rng.below(50_000))
    const watchedOr = (chance: number) => {
      const watched = this.accounts.watchedCount > 0 && rng.fraction() < chance
      return { watched, to: watched ? this.accounts.watched(rng.below(this.accounts.watchedCount)) : stranger() }
    }
    for (let i = 0; i < count; i++) {
      const roll = rng.fraction()
      const owner = stranger()
      if (roll < SHAPE.usdt) {
        const { watched, to } = watchedOr(SHAPE.usdtWatched)
        planned.push({
          kind: "usdt",
          contract: TRON_USDT,
          owner,
          to,
          amount: 1 + rng.below(10_000_000_000),
          ok: rng.fraction() >= SHAPE.usdtOutOfEnergy,
          watched
        })
      } else if (roll < SHAPE.usdt + SHAPE.trx) {
        const { watched, to } = watchedOr(SHAPE.trxWatched)
        planned.push({ kind: "trx", owner, to, amount: 1 + rng.below(10_000_000_000), watched })
      } else if (roll < SHAPE.usdt + SHAPE.trx + SHAPE.otherToken) {
        const contract = this.otherTokens[rng.below(this.otherTokens.length)] ?? TRON_USDT
        planned.push({
          kind: "token",
          contract,
          owner,
          to: stranger(),
          amount: 1 + rng.below(1_000_000_000),
          ok: true,
          watched: false
        })
      } else {
        planned.push({ kind: "delegate", owner, to: stranger(), amount: 1_000_000 * (1 + rng.below(100_000)) })
      }
    }
    return planned
  }

  /** The successful USDT and TRX transfers to watched addresses in blocks `from`–`to`. */
  paid(from: number, to: number): PaidTally {
    const tally = new PaidTally()
    for (let n = Math.max(0, from); n <= Math.min(to, this.head); n++) {
      for (const p of this.plan(n)) {
        if (p.kind === "usdt" && p.watched && p.ok) tally.add("USDT", BigInt(p.amount))
        if (p.kind === "trx" && p.watched) tally.add("TRX", BigInt(p.amount))
      }
    }
    return tally
  }

  private render(n: number): Rendered {
    const id = this.blockId(n)
    const parent = n === 0 ? "0".repeat(64) : this.blockId(n - 1)
    const time = this.timestamp(n)
    const rng = new SyntheticRandom(this.seed, n, 1)
    const refBlockBytes = ((n === 0 ? 0 : n - 1) & 0xffff).toString(16).padStart(4, "0")
    const refBlockHash = parent.slice(16, 32)
    const txs: Array<string> = []
    const infos: Array<string> = []
    for (const p of this.plan(n)) {
      const owner = `41${p.owner}`
      const to = `41${p.to}`
      const contract: TronContractValue =
        p.kind === "trx"
          ? { type: "TransferContract", owner, to, amount: p.amount }
          : p.kind === "delegate"
            ? { type: "DelegateResourceContract", owner, receiver: to, balance: p.amount }
            : {
                type: "TriggerSmartContract",
                owner,
                contract: p.contract,
                data: `a9059cbb0000000000000000000000${to}${amountWord(p.amount)}`
              }
      const trigger = contract.type === "TriggerSmartContract"
      const txTime = time - 1 - rng.below(SHAPE.blockMs)
      const feeLimit = trigger ? 100_000_000 : undefined
      const raw = rawDataHex({
        refBlockBytes,
        refBlockHash,
        expiration: txTime + 60_000,
        timestamp: txTime,
        feeLimit,
        contract
      })
      const txID = sha256Hex(Buffer.from(raw, "hex"))
      const value =
        contract.type === "TransferContract"
          ? `{"amount":${contract.amount},"owner_address":"${owner}","to_address":"${to}"}`
          : contract.type === "DelegateResourceContract"
            ? `{"owner_address":"${owner}","resource":"ENERGY","balance":${contract.balance},"receiver_address":"${to}"}`
            : `{"data":"${contract.data}","owner_address":"${owner}","contract_address":"${contract.contract}"}`
      const ok = p.kind === "trx" || p.kind === "delegate" || p.ok
      const ret = ok ? "SUCCESS" : "OUT_OF_ENERGY"
      txs.push(
        `{"ret":[{"contractRet":"${ret}"}],"signature":["${rng.filler(128)}0${rng.below(2)}"],"txID":"${txID}","raw_data":{"contract":[{"parameter":{"value":${value},"type_url":"${typeUrl(contract.type)}"},"type":"${contract.type}"}],"ref_block_bytes":"${refBlockBytes}","ref_block_hash":"${refBlockHash}","expiration":${txTime + 60_000},${feeLimit === undefined ? "" : `"fee_limit":${feeLimit},`}"timestamp":${txTime}},"raw_data_hex":"${raw}"}`
      )
      const common = (fee: number) =>
        `"id":"${txID}",${fee > 0 ? `"fee":${fee},` : ""}"blockNumber":${n},"blockTimeStamp":${time}`
      if (p.kind === "usdt" || p.kind === "token") {
        const energy = 29_650 + rng.below(100_000)
        infos.push(
          p.ok
            ? `{${common(energy * 210)},"contractResult":["0000000000000000000000000000000000000000000000000000000000000001"],"contract_address":"${p.contract}","receipt":{"energy_fee":${energy * 210},"energy_usage_total":${energy},"net_usage":345,"result":"SUCCESS"},"log":[{"address":"${p.contract.slice(2)}","topics":["ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef","${word(p.owner)}","${word(p.to)}"],"data":"${amountWord(p.amount)}"}]}`
            : `{${common(0)},"contractResult":[""],"contract_address":"${p.contract}","receipt":{"energy_usage":16,"energy_usage_total":16,"net_usage":345,"result":"OUT_OF_ENERGY"},"result":"FAILED","resMessage":"4e6f7420656e6f75676820656e65726779"}`
        )
      } else {
        infos.push(`{${common(0)},"contractResult":[""],"receipt":{"net_usage":${p.kind === "trx" ? 268 : 280}}}`)
      }
    }
    const header = `"block_header":{"raw_data":{"number":${n},"txTrieRoot":"${sha256Hex(id)}","witness_address":"41${this.accounts.stranger(n % 27)}","parentHash":"${parent}","version":31,"timestamp":${time}},"witness_signature":"${rng.filler(128)}00"}`
    // like a real node, an empty block has no transactions key
    const block =
      txs.length === 0
        ? `{"blockID":"${id}",${header}}`
        : `{"blockID":"${id}",${header},"transactions":[${txs.join(",")}]}`
    return { block, infos: `[${infos.join(",")}]` }
  }

  /** `getblockbynum`: the block, or `{}` for one the chain does not have (as java-tron answers). */
  block(n: number): string {
    return n < 0 || n > this.head ? "{}" : this.recent.getOrMake(n, (m) => this.render(m)).block
  }

  /** `gettransactioninfobyblocknum`: one info per transaction, `[]` for a block the chain does not have. */
  infos(n: number): string {
    return n < 0 || n > this.head ? "[]" : this.recent.getOrMake(n, (m) => this.render(m)).infos
  }

  get solid(): number {
    return Math.max(0, this.head - this.solidLag)
  }
}
