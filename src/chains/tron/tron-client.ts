import { Effect, Option, Schema } from "effect"
import { TronWeb } from "tronweb"
import { tronHex41 } from "../../keys/address-encoding.js"
import { Signer } from "../../keys/signer.js"
import {
  type ChainBlock,
  type ChainAction,
  type ChainClient,
  ChainRpcError,
  type EnergyResources,
  checkFeeCap,
  LandingEvidence,
  type LandingWindow,
  type SignedTransfer,
  TransferRejected,
  type TransferRequest
} from "../chain-client.js"
import { endpointLabel } from "../failover-client.js"
import { makeBudgetedFetch, type NodeBudget, throttleCheck, UNLIMITED } from "../node-budget.js"
import type { NodeHeaders } from "../node-headers.js"
import {
  decodeInternalTrxTransfers,
  decodeTrc20Transfers,
  decodeTrxTransfers,
  TronBlock,
  TronTransaction,
  TronTransactionInfo
} from "./tron-decoding.js"

export interface TronSettings {
  /** Full node HTTP API base URL; `/walletsolidity` is asked on the same host. */
  readonly url: string
  /** currency → TRC20 contract (base58 `T…`) */
  readonly tokens: ReadonlyMap<string, string>
  /** Blocks after which a transfer counts as final, when the solidified block is not used. */
  readonly confirmations: number
  /** Most TRX burned for energy by one TRC20 transfer (fee_limit), in sun. */
  readonly feeLimitSun?: number
  /** Blocks of a range read at once (two calls each: the block and its transaction infos); 8 unless set. */
  readonly concurrency?: number
  /** Headers sent with every call (a provider's API key: TronGrid's `TRON-PRO-API-KEY`). */
  readonly headers?: NodeHeaders
  /** Calls a second and at once the node takes (its provider's limits); none unless set. */
  readonly budget?: NodeBudget
  /**
   * Contract calls read without a single internal transaction before the node is taken not to record them
   * (java-tron's `vm.saveInternalTx` is false by default); 2,000 unless set (mainnet: a few minutes).
   */
  readonly internalTransactionsEvidence?: number
}

const NATIVE = "TRX"
/** How far the reference block's time may be from the signing time (it is the head block when signed). */
const REFERENCE_CLOCK_SLACK_MS = 10 * 60_000
const BlockNumber = Schema.Struct({
  block_header: Schema.Struct({
    raw_data: Schema.Struct({ number: Schema.optionalWith(Schema.Number, { default: () => 0 }) })
  })
})
/** A `getblock` answer: its header must be there (a node that does not know the API answers otherwise). */
const BlockHeader = Schema.Struct({
  blockID: Schema.String,
  block_header: Schema.Struct({ raw_data: Schema.Struct({ number: Schema.Number }) })
})
const Account = Schema.Struct({ address: Schema.optional(Schema.String), balance: Schema.optional(Schema.Number) })
/** `wallet/getaccount`'s Stake 2.0 fields (BANDWIDTH entries carry no `type`: it is the enum's default). */
const StakeAccount = Schema.Struct({
  balance: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  frozenV2: Schema.optionalWith(
    Schema.Array(Schema.Struct({ type: Schema.optional(Schema.String), amount: Schema.optional(Schema.Number) })),
    { default: () => [] }
  ),
  unfrozenV2: Schema.optionalWith(
    Schema.Array(
      Schema.Struct({
        type: Schema.optional(Schema.String),
        unfreeze_amount: Schema.optionalWith(Schema.Number, { default: () => 0 }),
        unfreeze_expire_time: Schema.optionalWith(Schema.Number, { default: () => 0 })
      })
    ),
    { default: () => [] }
  ),
  account_resource: Schema.optionalWith(
    Schema.Struct({
      delegated_frozenV2_balance_for_energy: Schema.optionalWith(Schema.Number, { default: () => 0 })
    }),
    { default: () => ({ delegated_frozenV2_balance_for_energy: 0 }) }
  )
})
/** `wallet/getaccountresource`: java-tron leaves zero fields out. */
const AccountResource = Schema.Struct({
  freeNetUsed: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  freeNetLimit: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  NetUsed: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  NetLimit: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  EnergyUsed: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  EnergyLimit: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  TotalEnergyLimit: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  TotalEnergyWeight: Schema.optionalWith(Schema.Number, { default: () => 0 })
})
/** `getdelegatedresourcev2`: `{}` when nothing is lent; java-tron leaves zero fields out. */
const DelegatedResources = Schema.Struct({
  delegatedResource: Schema.optionalWith(
    Schema.Array(
      Schema.Struct({ frozen_balance_for_energy: Schema.optionalWith(Schema.Number, { default: () => 0 }) })
    ),
    { default: () => [] }
  )
})
const DelegatableSize = Schema.Struct({ max_size: Schema.optionalWith(Schema.Number, { default: () => 0 }) })
const SUN_PER_TRX = 1_000_000n
const ConstantResult = Schema.Struct({
  constant_result: Schema.optional(Schema.Array(Schema.String)),
  energy_used: Schema.optional(Schema.Number)
})
const ChainParameters = Schema.Struct({
  chainParameter: Schema.optional(
    Schema.Array(Schema.Struct({ key: Schema.String, value: Schema.optional(Schema.Number) }))
  )
})
const SignedJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
/** Bandwidth a transfer's bytes take, rounded up (a signed TRX transfer is ~270 bytes, a TRC20 call ~345). */
const TX_BYTES = 350n
const BroadcastResult = Schema.Struct({
  result: Schema.optional(Schema.Boolean),
  code: Schema.optional(Schema.String),
  message: Schema.optional(Schema.String)
})
/** `gettransactioninfobyid`'s answer for an unknown (or not yet executed) transaction: an empty object. */
const NoTransactionInfo = Schema.Record({ key: Schema.String, value: Schema.Never })
const TxById = Schema.Struct({
  txID: Schema.optional(Schema.String),
  ret: Schema.optional(Schema.Array(Schema.Struct({ contractRet: Schema.optional(Schema.String) })))
})
const BuiltTrigger = Schema.Struct({ transaction: TronTransaction })
const TronInfos = Schema.Array(TronTransactionInfo)

const rpcError = (what: string) => (cause: unknown) =>
  new ChainRpcError({ chain: "TRC20", message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const decodeHexMessage = (message: string | undefined) =>
  message !== undefined && /^[0-9a-f]+$/i.test(message) ? Buffer.from(message, "hex").toString("utf8") : (message ?? "")

/**
 * TRON over its HTTP API with tronweb: blocks by number with one transaction-info call per block
 * (only `receipt.result == SUCCESS` counts for TRC20), finality from `/walletsolidity/getnowblock`,
 * balances via `getaccount` and a constant `balanceOf`, and transfers built offline against a real
 * reference block (tronweb `txLocal` + `blockHeader`), signed by the Signer and broadcast.
 */
export const makeTronClient = (settings: TronSettings) =>
  Effect.gen(function* () {
    const signer = yield* Signer
    // tronweb only builds transactions here (offline, against a reference block); every call to the node
    // goes through the node's budget
    const tronWeb = new TronWeb({ fullHost: settings.url })
    const budget = settings.budget ?? UNLIMITED
    const budgeted = makeBudgetedFetch(budget)
    const base = settings.url.replace(/\/+$/, "")
    /** A call to the node; a broadcast is sent once (a 429 to it is custody's to settle, not re-sent here). */
    const request = (path: string, payload: Record<string, unknown>, mode: "read" | "send" = "read") =>
      Effect.tryPromise({
        // the signal aborts the call when its caller gives up (the failover client's deadline)
        try: async (signal) => {
          const response = await (mode === "send" ? budgeted.send : budgeted.fetch)(`${base}/${path}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...settings.headers },
            body: JSON.stringify(payload),
            signal
          })
          if (!response.ok) throw new Error(`HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`)
          const body: unknown = await response.json()
          return body
        },
        catch: rpcError(path)
      })
    const post = <A, I>(
      path: string,
      payload: Record<string, unknown>,
      schema: Schema.Schema<A, I>,
      mode: "read" | "send" = "read"
    ) =>
      request(path, payload, mode).pipe(
        Effect.flatMap((body) => Schema.decodeUnknown(schema)(body)),
        Effect.mapError((e) => (e._tag === "ChainRpcError" ? e : rpcError(path)(e)))
      )
    /**
     * For the bulk of indexing (block bodies, transaction infos: hundreds of transactions a block): an answer
     * that already is a valid value is checked and used as it is, not rebuilt (decoding copies every object
     * of it); one that needs defaults filled in (an empty block has no `transactions`) is decoded.
     */
    const read = <A, I>(path: string, payload: Record<string, unknown>, schema: Schema.Schema<A, I>) => {
      const valid = Schema.is(schema)
      return request(path, payload).pipe(
        Effect.flatMap((body) => (valid(body) ? Effect.succeed(body) : Schema.decodeUnknown(schema)(body))),
        Effect.mapError((e) => (e._tag === "ChainRpcError" ? e : rpcError(path)(e)))
      )
    }
    const currencyOf = new Map(
      [...settings.tokens].flatMap(([currency, address]) => {
        const h = tronHex41(address)
        return h === undefined ? [] : [[h.slice(2), currency] as const]
      })
    )

    /**
     * The newest (or newest solidified) block's number from its header alone (`getblock` with detail false,
     * java-tron 4.7.1+): `getnowblock` sends the whole block, hundreds of transactions, on every poll. A node
     * without `getblock` is asked `getnowblock` from then on.
     */
    let headerOnly = true
    const topOf = (api: "wallet" | "walletsolidity") =>
      Effect.suspend(() =>
        headerOnly
          ? post(`${api}/getblock`, { detail: false }, BlockHeader).pipe(
              // a node that does not know getblock (404, or an answer without a header) is asked getnowblock
              // from then on; any other failure (a rate limit, a timeout) is the node's, and fails the read
              Effect.catchAll((e) =>
                /HTTP 40[45]|Expected|is missing/.test(e.message)
                  ? Effect.tap(post(`${api}/getnowblock`, {}, BlockNumber), () =>
                      Effect.sync(() => {
                        headerOnly = false
                      })
                    )
                  : Effect.fail(e)
              )
            )
          : post(`${api}/getnowblock`, {}, BlockNumber)
      ).pipe(Effect.map((b) => BigInt(b.block_header.raw_data.number)))
    const head = topOf("wallet")
    const genesis = Effect.map(post("wallet/getblockbynum", { num: 0 }, TronBlock), (b) => b.blockID)
    const finalized = topOf("walletsolidity")

    /**
     * Whether the node records `internal_transactions` (TRX sent by contracts): only a node run with
     * `vm.saveInternalTx = true` does, and a missing field reads as "none". Learned from the blocks read: one
     * internal transaction seen proves it; many contract calls without any make it a warning (said once in
     * the log, and in /health's checks), never a silent gap.
     */
    const evidenceNeeded = settings.internalTransactionsEvidence ?? 2_000
    const internal = { contractCalls: 0, seen: false, warned: false }
    const noteInternalTransactions = (infos: ReadonlyArray<TronTransactionInfo>) => {
      if (internal.seen) return
      for (const info of infos) {
        if ((info.internal_transactions?.length ?? 0) > 0) internal.seen = true
        else if (info.contract_address !== undefined) internal.contractCalls += 1
      }
    }
    const internalVerdict = () =>
      internal.seen
        ? "recorded by the node"
        : internal.contractCalls >= evidenceNeeded
          ? `not recorded by the node as far as it shows: none in ${internal.contractCalls} contract calls read (java-tron records them only with vm.saveInternalTx = true); TRX that contracts send to deposit addresses is not credited`
          : `not known yet (${internal.contractCalls} contract calls read, none with internal transactions)`
    const nodeChecks = Effect.gen(function* () {
      const verdict = internalVerdict()
      if (!internal.seen && internal.contractCalls >= evidenceNeeded && !internal.warned) {
        internal.warned = true
        yield* Effect.logWarning(`TRC20 node ${endpointLabel(settings.url)}: internal transactions ${verdict}`)
      }
      return { trc20_internal_transfers: verdict, ...(yield* throttleCheck("TRC20", budget, budgeted.state)) }
    })

    const fetchBlock = (n: bigint): Effect.Effect<ChainBlock, ChainRpcError> =>
      Effect.gen(function* () {
        const [block, infos] = yield* Effect.all(
          [
            read("wallet/getblockbynum", { num: Number(n) }, TronBlock),
            read("wallet/gettransactioninfobyblocknum", { num: Number(n) }, TronInfos)
          ],
          { concurrency: 2 }
        )
        const header = {
          number: BigInt(block.block_header.raw_data.number),
          hash: block.blockID,
          parentHash: block.block_header.raw_data.parentHash
        }
        if (header.number !== n)
          return yield* new ChainRpcError({ chain: "TRC20", message: `block ${n} is not available yet` })
        // both calls must describe the same block: infos name it by number only, so check the tx ids
        const ids = new Set(block.transactions.map((t) => t.txID))
        if (infos.some((i) => !ids.has(i.id))) {
          return yield* new ChainRpcError({
            chain: "TRC20",
            message: `block ${n} changed while it was read (reorg); read it again`
          })
        }
        // and every contract call needs its info (its TRC20 logs): a lagging backend answers [] without an error
        const withInfo = new Set(infos.map((i) => i.id))
        const missing = block.transactions.filter(
          (t) => t.raw_data.contract[0]?.type === "TriggerSmartContract" && !withInfo.has(t.txID)
        )
        if (missing.length > 0) {
          return yield* new ChainRpcError({
            chain: "TRC20",
            message: `block ${n}: no transaction info for ${missing.length} contract call(s) (${missing[0]?.txID}); read it again`
          })
        }
        noteInternalTransactions(infos)
        const transfers = [
          ...decodeTrxTransfers(block.transactions, header),
          ...decodeTrc20Transfers(infos, (c) => currencyOf.get(c), header),
          ...decodeInternalTrxTransfers(infos, header)
        ]
        return { ...header, timestamp: block.block_header.raw_data.timestamp, transfers }
      })

    const blocks = (from: bigint, to: bigint) => {
      const numbers: Array<bigint> = []
      for (let n = from; n <= to; n++) numbers.push(n)
      return Effect.forEach(numbers, fetchBlock, { concurrency: settings.concurrency ?? 8 })
    }

    /** From the full node (`wallet/`) or the solidified state (`walletsolidity/`). */
    const balanceFrom = (api: "wallet" | "walletsolidity", address: string, currency: string) =>
      Effect.gen(function* () {
        const owner = tronHex41(address)
        if (owner === undefined)
          return yield* new ChainRpcError({ chain: "TRC20", message: `not a TRON address: ${address}` })
        if (currency === NATIVE)
          return BigInt((yield* post(`${api}/getaccount`, { address: owner }, Account)).balance ?? 0)
        const contract = settings.tokens.get(currency)
        const contractHex = contract === undefined ? undefined : tronHex41(contract)
        if (contractHex === undefined)
          return yield* new ChainRpcError({ chain: "TRC20", message: `no contract configured for ${currency}` })
        const result = yield* post(
          `${api}/triggerconstantcontract`,
          {
            owner_address: owner,
            contract_address: contractHex,
            function_selector: "balanceOf(address)",
            parameter: owner.slice(2).padStart(64, "0")
          },
          ConstantResult
        )
        const word = result.constant_result?.[0]
        if (word === undefined || !/^[0-9a-f]*$/i.test(word))
          return yield* new ChainRpcError({ chain: "TRC20", message: "balanceOf returned nothing" })
        return BigInt(`0x${word === "" ? "0" : word}`)
      })
    const balance = (address: string, currency: string) => balanceFrom("wallet", address, currency)
    // the solidified height read before and after the balance: equal, the balance is that height's
    const finalBalance = (
      address: string,
      currency: string
    ): Effect.Effect<{ readonly balance: bigint; readonly height: bigint }, ChainRpcError> =>
      Effect.gen(function* () {
        const before = yield* finalized
        const value = yield* balanceFrom("walletsolidity", address, currency)
        const after = yield* finalized
        return before === after ? { balance: value, height: after } : yield* finalBalance(address, currency)
      })

    /** The reference-block header tronweb needs to build a transaction offline (TAPOS). */
    const referenceBlock = Effect.map(post("wallet/getnowblock", {}, TronBlock), (block) => {
      const number = block.block_header.raw_data.number
      return {
        ref_block_bytes: (number & 0xffff).toString(16).padStart(4, "0"),
        ref_block_hash: block.blockID.slice(16, 32),
        expiration: block.block_header.raw_data.timestamp + 60_000,
        timestamp: Date.now()
      }
    })

    /** The chain's prices (sun per energy unit, per bandwidth byte, for creating an account). */
    const chainPrices = Effect.map(post("wallet/getchainparameters", {}, ChainParameters), (p) => {
      const value = (key: string, fallback: number) =>
        BigInt(p.chainParameter?.find((e) => e.key === key)?.value ?? fallback)
      return {
        energy: value("getEnergyFee", 100),
        bandwidthByte: value("getTransactionFee", 1000),
        newAccount: value("getCreateNewAccountFeeInSystemContract", 1_000_000) + value("getCreateAccountFee", 100_000),
        newAccountOnly: value("getCreateNewAccountFeeInSystemContract", 1_000_000),
        newAccountBandwidth: value("getCreateAccountFee", 100_000)
      }
    })
    const accountExists = (hex41: string) =>
      Effect.map(
        post("wallet/getaccount", { address: hex41 }, Account),
        (a) => a.balance !== undefined || a.address !== undefined
      )

    const hexOf = (address: string) =>
      Option.match(Option.fromNullable(tronHex41(address)), {
        // custody asks for its own wallets' addresses: another is a defect, not a node failing (no cooldown)
        onNone: () => Effect.dieMessage(`not a TRON address: ${address}`),
        onSome: Effect.succeed
      })

    const energy: EnergyResources = {
      account: (address) =>
        Effect.gen(function* () {
          const hex = yield* hexOf(address)
          const [activated, r] = yield* Effect.all([
            accountExists(hex),
            post("wallet/getaccountresource", { address: hex }, AccountResource)
          ])
          return {
            activated,
            energyLimit: BigInt(r.EnergyLimit),
            energyUsed: BigInt(r.EnergyUsed),
            bandwidthLimit: BigInt(r.freeNetLimit + r.NetLimit),
            bandwidthUsed: BigInt(r.freeNetUsed + r.NetUsed),
            stakedBandwidthLeft: BigInt(Math.max(0, r.NetLimit - r.NetUsed))
          }
        }),
      stake: (owner) =>
        Effect.gen(function* () {
          const a = yield* post("wallet/getaccount", { address: yield* hexOf(owner) }, StakeAccount)
          const lent = BigInt(a.account_resource.delegated_frozenV2_balance_for_energy)
          const own = a.frozenV2.filter((f) => f.type === "ENERGY").reduce((sum, f) => sum + BigInt(f.amount ?? 0), 0n)
          return {
            staked: own + lent,
            lent,
            unfreezing: a.unfrozenV2
              .filter((u) => u.type === "ENERGY")
              .map((u) => ({ amount: BigInt(u.unfreeze_amount), availableAt: u.unfreeze_expire_time })),
            balance: BigInt(a.balance),
            // BANDWIDTH is the enum's default: java-tron leaves its `type` out
            bandwidthStaked: a.frozenV2
              .filter((f) => f.type === undefined || f.type === "BANDWIDTH")
              .reduce((sum, f) => sum + BigInt(f.amount ?? 0), 0n)
          }
        }),
      lentTo: (owner, receiver) =>
        Effect.gen(function* () {
          const answer = yield* post(
            "walletsolidity/getdelegatedresourcev2",
            { fromAddress: yield* hexOf(owner), toAddress: yield* hexOf(receiver) },
            DelegatedResources
          )
          return answer.delegatedResource.reduce((sum, d) => sum + BigInt(d.frozen_balance_for_energy), 0n)
        }),
      prices: Effect.map(chainPrices, (p) => ({
        energy: p.energy,
        bandwidthByte: p.bandwidthByte,
        newAccount: p.newAccountOnly,
        newAccountBandwidth: p.newAccountBandwidth,
        transferBytes: TX_BYTES
      })),
      transferEnergy: (request) =>
        Effect.gen(function* () {
          const contractHex = tronHex41(settings.tokens.get(request.currency))
          if (contractHex === undefined)
            return yield* new ChainRpcError({
              chain: "TRC20",
              message: `no contract configured for ${request.currency}`
            })
          return yield* transferEnergy(
            yield* hexOf(request.from),
            contractHex,
            yield* hexOf(request.to),
            request.amount
          )
        }),
      lendable: (owner) =>
        Effect.flatMap(hexOf(owner), (hex) =>
          Effect.map(post("wallet/getcandelegatedmaxsize", { owner_address: hex, type: 1 }, DelegatableSize), (d) =>
            BigInt(d.max_size)
          )
        ),
      stakeFor: (owner, wanted) =>
        Effect.gen(function* () {
          const r = yield* post("wallet/getaccountresource", { address: yield* hexOf(owner) }, AccountResource)
          if (r.TotalEnergyLimit <= 0 || r.TotalEnergyWeight <= 0)
            return yield* new ChainRpcError({ chain: "TRC20", message: "the node gave no network energy totals" })
          // energy = whole staked TRX × TotalEnergyLimit / TotalEnergyWeight, rounded down: whole TRX, one more
          const trx = (wanted * BigInt(r.TotalEnergyWeight)) / BigInt(r.TotalEnergyLimit) + 1n
          return trx * SUN_PER_TRX
        })
    }

    /** Energy a TRC20 `transfer` from `owner` would use now (the node runs it without sending it). */
    const transferEnergy = (owner: string, contractHex: string, to: string, amount: bigint) =>
      Effect.flatMap(
        post(
          "wallet/triggerconstantcontract",
          {
            owner_address: owner,
            contract_address: contractHex,
            function_selector: "transfer(address,uint256)",
            parameter: to.slice(2).padStart(64, "0") + amount.toString(16).padStart(64, "0")
          },
          ConstantResult
        ),
        (result) =>
          result.energy_used === undefined
            ? Effect.fail(
                new ChainRpcError({ chain: "TRC20", message: "triggerconstantcontract gave no energy estimate" })
              )
            : Effect.succeed(BigInt(result.energy_used))
      )

    /**
     * What the sender burns: bandwidth for the bytes (no free bandwidth is counted on), plus energy for a
     * token call, plus the creation fee when TRX goes to an account that does not exist yet.
     */
    const costOf = (owner: string, to: string, currency: string, amount: bigint) =>
      Effect.gen(function* () {
        const prices = yield* chainPrices
        const bandwidth = TX_BYTES * prices.bandwidthByte
        if (currency === NATIVE) {
          const burn = bandwidth + ((yield* accountExists(to)) ? 0n : prices.newAccount)
          return { burn, feeLimit: 0n, estimate: burn }
        }
        const contractHex = tronHex41(settings.tokens.get(currency))
        if (contractHex === undefined)
          return yield* new ChainRpcError({ chain: "TRC20", message: `no contract configured for ${currency}` })
        const energyFee = (yield* transferEnergy(owner, contractHex, to, amount)) * prices.energy
        // fee_limit: the estimate with a margin for the price moving before the block; the estimate itself is
        // what callers add their own margin to (custody's gas funding), not the margin on top of a margin
        const feeLimit = energyFee + energyFee / 5n
        return { burn: bandwidth + feeLimit, feeLimit, estimate: bandwidth + energyFee }
      })

    /** Signs a built transaction as the request's key: TRON's signed JSON with its expiry. */
    const signBuilt = (
      request: TransferRequest,
      unsigned: TronTransaction,
      fromAddress: string,
      maxFee: bigint,
      gasPrice: bigint
    ) =>
      Effect.gen(function* () {
        const signature = yield* signer.signDigest(request.from, Buffer.from(unsigned.txID, "hex"))
        const v = (signature[64] ?? 0) + 27
        const signed = {
          ...unsigned,
          signature: [Buffer.from(signature.subarray(0, 64)).toString("hex") + v.toString(16).padStart(2, "0")]
        }
        return {
          txHash: unsigned.txID,
          raw: JSON.stringify(signed),
          from: fromAddress,
          feePayer: fromAddress,
          nonce: Option.none(),
          validUntil: Option.some(BigInt(unsigned.raw_data.expiration)),
          maxFee,
          gasPrice
        } satisfies SignedTransfer
      })

    /**
     * Stake 2.0 (freeze, unfreeze, lend or take back energy): built from the reference block like a transfer, its
     * cost the bandwidth of its bytes (no energy). The chain checks stake, activation and what is lent.
     */
    const prepareStake = (
      request: TransferRequest,
      action: Exclude<ChainAction, { readonly _tag: "CloseTokenAccount" }>,
      from: string,
      to: string,
      fromAddress: string,
      blockHeader: Effect.Effect.Success<typeof referenceBlock>
    ) =>
      Effect.gen(function* () {
        if (request.amount <= 0n || request.amount > BigInt(Number.MAX_SAFE_INTEGER))
          return yield* new TransferRejected({ chain: "TRC20", message: `${action._tag}: amount out of range` })
        if ((action._tag === "DelegateEnergy" || action._tag === "ReclaimEnergy") === (to === from))
          return yield* new TransferRejected({
            chain: "TRC20",
            message: `${action._tag}: ${to === from ? "energy is lent to another account" : "the account itself is named"}`
          })
        const prices = yield* chainPrices
        const maxFee = TX_BYTES * prices.bandwidthByte
        yield* checkFeeCap("TRC20", request.feeCap, maxFee, prices.energy)
        // tronweb's builders take sun as a JS number: amounts beyond what one holds exactly were refused above
        const sun = Number(request.amount)
        const builder = tronWeb.transactionBuilder
        const built = yield* Effect.tryPromise({
          // each builder's own transaction type; decoded below as one
          try: (): Promise<unknown> => {
            switch (action._tag) {
              case "StakeEnergy":
                return builder.freezeBalanceV2(sun, "ENERGY", from, { blockHeader })
              case "UnstakeEnergy":
                return builder.unfreezeBalanceV2(sun, "ENERGY", from, { blockHeader })
              case "StakeBandwidth":
                return builder.freezeBalanceV2(sun, "BANDWIDTH", from, { blockHeader })
              case "UnstakeBandwidth":
                return builder.unfreezeBalanceV2(sun, "BANDWIDTH", from, { blockHeader })
              case "DelegateEnergy":
                return builder.delegateResource(sun, to, "ENERGY", from, false, undefined, { blockHeader })
              case "ReclaimEnergy":
                return builder.undelegateResource(sun, to, "ENERGY", from, { blockHeader })
            }
          },
          catch: (cause) => new TransferRejected({ chain: "TRC20", message: rpcError(action._tag)(cause).message })
        })
        const unsigned = yield* Schema.decodeUnknown(TronTransaction)(built).pipe(
          Effect.mapError(rpcError(action._tag))
        )
        return yield* signBuilt(request, unsigned, fromAddress, maxFee, prices.energy)
      })

    const prepare = (request: TransferRequest) =>
      Effect.gen(function* () {
        if (request.from.family !== "TRON")
          return yield* new TransferRejected({ chain: "TRC20", message: "TRON transfers need a TRON key" })
        if (request.action?._tag === "CloseTokenAccount")
          return yield* new TransferRejected({
            chain: "TRC20",
            message: "CloseTokenAccount is not a TRC20 transaction"
          })
        const to = tronHex41(request.to)
        if (to === undefined)
          return yield* new TransferRejected({ chain: "TRC20", message: `not a TRON address: ${request.to}` })
        const [key] = yield* signer.deriveAddresses("TRON", request.from.account, [request.from.index])
        const from = key === undefined ? undefined : tronHex41(key.address)
        if (from === undefined || key === undefined)
          return yield* Effect.die(new Error("the signer derived no address"))
        const blockHeader = yield* referenceBlock
        if (request.action !== undefined)
          return yield* prepareStake(request, request.action, from, to, key.address, blockHeader)
        const cost = yield* costOf(from, to, request.currency, request.amount)
        const energyPrice = (yield* chainPrices).energy
        yield* checkFeeCap("TRC20", request.feeCap, cost.burn, energyPrice)
        let unsigned: TronTransaction
        if (request.currency === NATIVE) {
          // tronweb's sendTrx takes sun as a JS number: refuse what a number cannot hold exactly
          if (request.amount > BigInt(Number.MAX_SAFE_INTEGER))
            return yield* new TransferRejected({ chain: "TRC20", message: "amount too large" })
          const built = yield* Effect.tryPromise({
            try: () => tronWeb.transactionBuilder.sendTrx(to, Number(request.amount), from, { blockHeader }),
            catch: (cause) => new TransferRejected({ chain: "TRC20", message: rpcError("sendTrx")(cause).message })
          })
          unsigned = yield* Schema.decodeUnknown(TronTransaction)(built).pipe(Effect.mapError(rpcError("sendTrx")))
        } else {
          const contract = settings.tokens.get(request.currency)
          if (contract === undefined)
            return yield* new TransferRejected({
              chain: "TRC20",
              message: `no contract configured for ${request.currency}`
            })
          // tronweb takes fee_limit in sun as a JS number: refuse what a number cannot hold exactly
          if (cost.feeLimit > BigInt(Number.MAX_SAFE_INTEGER))
            return yield* new TransferRejected({ chain: "TRC20", message: "fee limit too large" })
          const built = yield* Effect.tryPromise({
            try: () =>
              tronWeb.transactionBuilder.triggerSmartContract(
                contract,
                "transfer(address,uint256)",
                {
                  feeLimit: Number(cost.feeLimit),
                  txLocal: true,
                  blockHeader
                },
                [
                  { type: "address", value: to },
                  { type: "uint256", value: request.amount.toString() }
                ],
                from
              ),
            catch: (cause) =>
              new TransferRejected({ chain: "TRC20", message: rpcError("triggerSmartContract")(cause).message })
          })
          unsigned = (yield* Schema.decodeUnknown(BuiltTrigger)(built).pipe(
            Effect.mapError(rpcError("triggerSmartContract"))
          )).transaction
        }
        return yield* signBuilt(request, unsigned, key.address, cost.burn, energyPrice)
      })

    const broadcast = (raw: string) =>
      Effect.gen(function* () {
        const payload = yield* Schema.decodeUnknown(SignedJson)(raw).pipe(
          Effect.mapError(
            () => new TransferRejected({ chain: "TRC20", message: "signed transaction is not a JSON object" })
          )
        )
        const result = yield* post("wallet/broadcasttransaction", payload, BroadcastResult, "send")
        if (result.result === true) return
        // a duplicate means our earlier broadcast landed or is pending: the same bytes, so success
        if (result.code === "DUP_TRANSACTION_ERROR") return
        const message = `${result.code ?? "no code"}: ${decodeHexMessage(result.message)}`
        // a refusal is the node's documented `code` for these bytes; SERVER_BUSY and
        // NOT_ENOUGH_EFFECTIVE_CONNECTION are the node's state, and an answer with no code says nothing
        if (
          result.code === undefined ||
          result.code === "SERVER_BUSY" ||
          result.code === "NOT_ENOUGH_EFFECTIVE_CONNECTION"
        )
          return yield* new ChainRpcError({ chain: "TRC20", message: `broadcasttransaction: ${message}` })
        return yield* new TransferRejected({ chain: "TRC20", message })
      })

    /** A block by number, or none where the node does not have it (`{}`: not produced yet, or pruned). */
    /**
     * A solidified block by number (`walletsolidity`: a node answers `{}` above its own solidified height),
     * or none where the node does not have it: what is proven from it holds on every honest node.
     */
    const solidBlock = (n: bigint): Effect.Effect<Option.Option<TronBlock>, ChainRpcError> =>
      request("walletsolidity/getblockbynum", { num: Number(n) }).pipe(
        Effect.map((body) =>
          Option.filter(
            Schema.decodeUnknownOption(TronBlock)(body),
            (b) => BigInt(b.block_header.raw_data.number) === n
          )
        )
      )

    /**
     * Past its expiration by the solidified block's time, a transaction can no longer be included; whether it
     * was is read from the blocks themselves, not from a lookup by id (a lite node prunes it, a node behind
     * the same URL may not have it): from its reference block (found by the bytes and hash it carries)
     * forward, each block's parent hash checked against the one before, to the first block at or past its
     * expiration — every block it could have landed in, each read as solidified (no node's unfinished branch).
     */
    const landing = (window: LandingWindow) =>
      Effect.gen(function* () {
        if (Option.isNone(window.validUntil)) return LandingEvidence.Open()
        const expiration = window.validUntil.value
        const solid = yield* post("walletsolidity/getnowblock", {}, TronBlock)
        const solidNumber = BigInt(solid.block_header.raw_data.number)
        if (BigInt(solid.block_header.raw_data.timestamp) < expiration) return LandingEvidence.Open()
        const signed = yield* Schema.decodeUnknown(Schema.parseJson(TronTransaction))(window.raw).pipe(
          Effect.mapError(rpcError("stored transaction"))
        )
        const refLow = BigInt(Number.parseInt(signed.raw_data.ref_block_bytes, 16))
        // the highest block at or below the solidified one with those low 16 bits whose id carries that hash
        let reference: Option.Option<TronBlock> = Option.none()
        for (
          let n = solidNumber - ((((solidNumber - refLow) % 65536n) + 65536n) % 65536n), tries = 0;
          n >= 0n && tries < 4 && Option.isNone(reference);
          n -= 65536n, tries++
        ) {
          const block = yield* solidBlock(n)
          if (Option.isNone(block)) continue
          if (block.value.blockID.slice(16, 32) === signed.raw_data.ref_block_hash) {
            reference = block
            continue
          }
          // the solidified block made when it was signed (within minutes: the reference is the head then) is
          // another: its reference block was left by the chain, and no node of the solid chain includes it
          const signedAt = signed.raw_data.timestamp
          if (
            signedAt !== undefined &&
            Math.abs(block.value.block_header.raw_data.timestamp - signedAt) < REFERENCE_CLOCK_SLACK_MS
          ) {
            return LandingEvidence.NeverLanded({
              blocks: 0,
              proof: `its reference block ${n} (${signed.raw_data.ref_block_hash}) is not on the solidified chain, which has ${block.value.blockID} there`
            })
          }
        }
        if (Option.isNone(reference)) {
          return LandingEvidence.Unproven({
            reason: `its reference block (…${signed.raw_data.ref_block_bytes}, ${signed.raw_data.ref_block_hash}) cannot be read from the node`
          })
        }
        let previous = reference.value
        for (let n = BigInt(previous.block_header.raw_data.number) + 1n, read = 1; n <= solidNumber; n++, read++) {
          const block = yield* solidBlock(n)
          if (Option.isNone(block))
            return LandingEvidence.Unproven({
              reason: `block ${n}, within its validity window, cannot be read from the node`
            })
          if (block.value.block_header.raw_data.parentHash !== previous.blockID) {
            return LandingEvidence.Unproven({
              reason: `block ${n} does not follow block ${n - 1n} as read (nodes disagree on final blocks)`
            })
          }
          if (block.value.transactions.some((t) => t.txID === window.txHash))
            return LandingEvidence.Landed({ blockNumber: n })
          if (BigInt(block.value.block_header.raw_data.timestamp) >= expiration) {
            return LandingEvidence.NeverLanded({
              blocks: read,
              proof: `every solidified block of its validity window read (${read}): in none`
            })
          }
          previous = block.value
        }
        return LandingEvidence.Unproven({
          reason: `no block up to the solidified ${solidNumber} is past its expiration as read`
        })
      })

    const feeEstimate = (request: {
      readonly from: string
      readonly to: string
      readonly currency: string
      readonly amount: bigint
    }) =>
      Effect.gen(function* () {
        const from = tronHex41(request.from)
        const to = tronHex41(request.to)
        if (from === undefined || to === undefined)
          return yield* new ChainRpcError({ chain: "TRC20", message: "not a TRON address" })
        return (yield* costOf(from, to, request.currency, request.amount)).estimate
      })

    const transaction = (txHash: string) =>
      Effect.gen(function* () {
        if (!/^[0-9a-f]{64}$/i.test(txHash)) return Option.none()
        // the node answers `{}` for an id it does not know; a failure to answer is an error, not "none"
        // (custody would take the transaction for a dead one and sign another)
        const info = yield* post(
          "wallet/gettransactioninfobyid",
          { value: txHash },
          Schema.Union(TronTransactionInfo, NoTransactionInfo)
        )
        const tip = yield* head
        if ("id" in info && info.blockNumber !== undefined) {
          const receipt = info.receipt?.result
          let ok = receipt === undefined || receipt === "SUCCESS"
          if (receipt === undefined) {
            const tx = yield* post("wallet/gettransactionbyid", { value: txHash }, TxById)
            ok = (tx.ret?.[0]?.contractRet ?? "SUCCESS") === "SUCCESS"
          }
          const blockNumber = BigInt(info.blockNumber)
          return Option.some({
            status: ok ? ("success" as const) : ("failed" as const),
            blockNumber: Option.some(blockNumber),
            confirmations: Number(tip - blockNumber + 1n),
            fee: Option.some(BigInt(info.fee ?? 0))
          })
        }
        const pending = yield* post("wallet/gettransactionbyid", { value: txHash }, TxById)
        return pending.txID === undefined
          ? Option.none()
          : Option.some({
              status: "pending" as const,
              blockNumber: Option.none<bigint>(),
              confirmations: 0,
              fee: Option.none<bigint>()
            })
      })

    // two calls (the full node's head, the solidity node's): the indexer checks the final block's hash too,
    // read as solidified (a node on another branch has no such solid block)
    const tip = Effect.map(Effect.all([head, finalized], { concurrency: 2 }), ([h, f]) => ({ head: h, finalized: f }))
    const blockHash = (number: bigint) =>
      Effect.map(
        solidBlock(number),
        Option.map((b) => b.blockID)
      )

    const finalInclusion = (txHash: string, blockNumber: bigint) =>
      Effect.map(
        solidBlock(blockNumber),
        Option.exists((b) => b.transactions.some((t) => t.txID === txHash))
      )

    return {
      chain: "TRC20",
      skipsNumbers: false,
      nodeChecks,
      genesis,
      head,
      finalized,
      tip,
      blockHash,
      finalInclusion,
      blocks,
      balance,
      finalBalance,
      prepare,
      broadcast,
      landing,
      feeEstimate,
      finalNonce: () => Effect.succeed(0n),
      transaction,
      energy
    } satisfies ChainClient
  })
