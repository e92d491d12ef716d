import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { KeyRef } from "../../src/keys/signer.js"
import { Accounts, Ledger, type LedgerTransfer } from "../../src/ledger/ledger.js"
import { CustodyStore, type NewOperation } from "../../src/stores/custody-store.js"
import type { TransferLeg } from "../../custody/transfer-sender.js"
import type { Random } from "../faults/seeded-random.js"
import type { SimChain } from "./sim-chain.js"
import { NATIVE, type SimChainId } from "./sim-tx.js"

/** What an operation stands for in the workload (batch items and refunds are withdrawals to custody). */
export type OperationKind =
  | "withdrawal"
  | "batch item"
  | "refund"
  | "native withdrawal"
  | "collection"
  | "native consolidation"
  | "gas funding"
  | "energy lending"

export interface SimWallet {
  readonly id: string
  readonly chain: SimChainId
  readonly role: "gas" | "main" | "receive"
  readonly address: string
  readonly key: KeyRef
}

/** One operation as the real services store it, with the leg its actor sends and what it locked. */
export interface PlannedOperation {
  readonly row: NewOperation
  readonly kind: OperationKind
  readonly leg: TransferLeg
  /** A withdrawal's locked amount: its net amount, plus a native's quoted network fee. */
  readonly gross: bigint
  /** Handed to its actor at the start; otherwise by a later resume pass (an approval arriving later). */
  readonly handedAtStart: boolean
}

export interface Workload {
  readonly merchantId: string
  /**
   * The BEP20 gas wallet starts with enough for one funding only (its fundings beyond are honestly refused,
   * "insufficient funds", until the operator refills it when the network heals).
   */
  readonly gasShort: boolean
  readonly chains: ReadonlyArray<SimChainId>
  readonly wallets: ReadonlyArray<SimWallet>
  readonly operations: ReadonlyArray<PlannedOperation>
  readonly addressOf: (key: KeyRef) => string | undefined
}

/** Base units: USDT has 18 decimals on BEP20 and 6 elsewhere; the natives their own. */
export const DECIMALS: Record<SimChainId, { readonly native: number; readonly usdt: number }> = {
  BEP20: { native: 18, usdt: 18 },
  TRC20: { native: 6, usdt: 6 },
  SOLANA: { native: 9, usdt: 6 }
}
const FAMILY: Record<SimChainId, KeyRef["family"]> = { BEP20: "EVM", TRC20: "TRON", SOLANA: "SOLANA" }
const units = (whole: number, decimals: number) => BigInt(whole) * 10n ** BigInt(decimals)

/** The fee caps the seed's custody runs with (what a gas funding sends: the most a sweep may cost). */
export const FEE_CAPS: Record<SimChainId, { readonly maxFee: bigint; readonly maxGasPrice: bigint }> = {
  BEP20: { maxFee: 2n * 10n ** 15n, maxGasPrice: 30n * 10n ** 9n },
  TRC20: { maxFee: 50_000_000n, maxGasPrice: 210n },
  SOLANA: { maxFee: 10_000_000n, maxGasPrice: 20_000n }
}
/** Each chain's usual price (wei per gas, sun per energy unit, lamports per signature). */
export const BASE_PRICE: Record<SimChainId, bigint> = { BEP20: 5n * 10n ** 9n, TRC20: 100n, SOLANA: 5_000n }

const addressFor = (chain: SimChainId, label: string) => {
  const digest = createHash("sha256").update(label).digest("hex")
  return chain === "BEP20" ? `0x${digest.slice(0, 40)}` : chain === "TRC20" ? `T${digest.slice(0, 33)}` : digest
}

/** Builds one seed's wallets and operations; `run` keeps two runs in one database apart. */
export const planWorkload = (seed: number, run: number, random: Random): Workload => {
  const prefix = `sim${run}s${seed}_`
  const merchantId = `${prefix}m`
  const wallets: Array<SimWallet> = []
  const operations: Array<PlannedOperation> = []
  const wallet = (chain: SimChainId, role: SimWallet["role"]) => {
    const made: SimWallet = {
      id: `${prefix}w${wallets.length}`,
      chain,
      role,
      address: addressFor(chain, `${prefix}${wallets.length}`),
      key: { family: FAMILY[chain], account: 7000 + run, index: seed * 32 + wallets.length }
    }
    wallets.push(made)
    return made
  }
  const chains: Array<SimChainId> = ["BEP20", ...(random.next() < 0.5 ? ["TRC20" as const] : ["SOLANA" as const])]
  for (const chain of chains) {
    const gas = wallet(chain, "gas")
    const main = wallet(chain, "main")
    const add = (planned: Omit<PlannedOperation, "handedAtStart">) => {
      operations.push({ ...planned, handedAtStart: random.next() < 0.8 })
    }
    const context = {
      prefix,
      merchantId,
      chain,
      gas,
      main,
      random,
      wallet,
      add,
      next: () => `${prefix}op${operations.length}`
    }
    planWithdrawals(context)
    planCollections(context)
  }
  const byKey = new Map(wallets.map((w) => [`${w.key.family}/${w.key.account}/${w.key.index}`, w.address]))
  return {
    merchantId,
    gasShort: random.next() < 0.3,
    chains,
    wallets,
    operations,
    addressOf: (key) => byKey.get(`${key.family}/${key.account}/${key.index}`)
  }
}

interface PlanContext {
  readonly prefix: string
  readonly merchantId: string
  readonly chain: SimChainId
  readonly gas: SimWallet
  readonly main: SimWallet
  readonly random: Random
  readonly wallet: (chain: SimChainId, role: SimWallet["role"]) => SimWallet
  readonly add: (planned: Omit<PlannedOperation, "handedAtStart">) => void
  readonly next: () => string
}

const operationRow = (
  c: PlanContext,
  fields: Pick<NewOperation, "type" | "status" | "wallet_id" | "from_address" | "to_wallet_id" | "to_address"> & {
    readonly currency: string
    readonly amount: bigint
  }
): NewOperation => ({
  id: c.next(),
  merchant_id: c.merchantId,
  chain: c.chain,
  waiting_for: "the wallet's actor",
  ...fields,
  amount: fields.amount.toString()
})

/** Withdrawals from the main wallet (single, batch items, refunds: the same operation), a native one on BEP20. */
const planWithdrawals = (c: PlanContext) => {
  const decimals = DECIMALS[c.chain]
  const count = c.chain === "BEP20" ? 1 + c.random.int(2) : 1
  for (let i = 0; i < count; i++) {
    const amount = units(10 + c.random.int(90), decimals.usdt)
    const to = addressFor(c.chain, `${c.prefix}payee${i}`)
    const row = operationRow(c, {
      type: "withdrawal",
      status: "SWEEPING",
      wallet_id: c.main.id,
      from_address: c.main.address,
      to_wallet_id: c.main.id,
      to_address: to,
      currency: "USDT",
      amount
    })
    const leg: TransferLeg = {
      from: c.main.key,
      to,
      currency: "USDT",
      amount,
      decimals: decimals.usdt,
      walletId: c.main.id,
      ...(c.chain === "SOLANA" ? { feePayer: c.gas.key } : {})
    }
    c.add({ row, kind: c.random.pick(["withdrawal", "batch item", "refund"] as const), leg, gross: amount })
  }
  if (c.chain === "BEP20" && c.random.next() < 0.5) {
    const amount = units(1, decimals.native) / 2n
    const quote = 21_000n * BASE_PRICE.BEP20 * 2n
    const to = addressFor(c.chain, `${c.prefix}payee-native`)
    const row = operationRow(c, {
      type: "withdrawal",
      status: "SWEEPING",
      wallet_id: c.main.id,
      from_address: c.main.address,
      to_wallet_id: c.main.id,
      to_address: to,
      currency: NATIVE.BEP20,
      amount
    })
    const leg: TransferLeg = {
      from: c.main.key,
      to,
      currency: NATIVE.BEP20,
      amount,
      decimals: decimals.native,
      walletId: c.main.id,
      maxFee: quote
    }
    c.add({ row, kind: "native withdrawal", leg, gross: amount + quote })
  }
}

/**
 * Token sweeps of receive wallets: on BEP20 and TRON each needs gas first, funded from the gas wallet (the
 * fundings in flight together, at consecutive EVM nonces); on TRON with energy lent from the stake; on Solana
 * the gas wallet pays the fee. A native consolidation on BEP20 pays its own fee.
 */
const planCollections = (c: PlanContext) => {
  const count = c.chain === "BEP20" ? 1 + c.random.int(3) : 1
  for (let i = 0; i < count; i++) planSweep(c)
  if (c.chain === "BEP20" && c.random.next() < 0.4) {
    const receive = c.wallet(c.chain, "receive")
    const amount = units(1, DECIMALS.BEP20.native)
    const row = operationRow(c, {
      type: "collection",
      status: "SWEEPING",
      wallet_id: receive.id,
      from_address: receive.address,
      to_wallet_id: c.main.id,
      to_address: c.main.address,
      currency: NATIVE.BEP20,
      amount
    })
    const leg: TransferLeg = {
      from: receive.key,
      to: c.main.address,
      currency: NATIVE.BEP20,
      amount,
      decimals: DECIMALS.BEP20.native,
      walletId: receive.id
    }
    c.add({ row, kind: "native consolidation", leg, gross: amount })
  }
}

const planSweep = (c: PlanContext) => {
  const receive = c.wallet(c.chain, "receive")
  const decimals = DECIMALS[c.chain]
  const amount = units(50 + c.random.int(50), decimals.usdt)
  const needsGas = c.chain !== "SOLANA"
  const row = operationRow(c, {
    type: "collection",
    status: needsGas ? "GAS_FUNDING" : "SWEEPING",
    wallet_id: receive.id,
    from_address: receive.address,
    to_wallet_id: c.main.id,
    to_address: c.main.address,
    currency: "USDT",
    amount
  })
  const leg: TransferLeg = {
    from: receive.key,
    to: c.main.address,
    currency: "USDT",
    amount,
    decimals: decimals.usdt,
    walletId: receive.id,
    ...(needsGas ? {} : { feePayer: c.gas.key })
  }
  c.add({ row, kind: "collection", leg, gross: amount })
  if (!needsGas) return
  const native = NATIVE[c.chain]
  const funding = operationRow(c, {
    type: "gas_funding",
    status: "SWEEPING",
    wallet_id: c.gas.id,
    from_address: c.gas.address,
    to_wallet_id: receive.id,
    to_address: receive.address,
    currency: native,
    amount: FEE_CAPS[c.chain].maxFee
  })
  const fundingLeg: TransferLeg = {
    from: c.gas.key,
    to: receive.address,
    currency: native,
    amount: FEE_CAPS[c.chain].maxFee,
    decimals: decimals.native,
    walletId: receive.id
  }
  c.add({ row: { ...funding, parent_id: row.id }, kind: "gas funding", leg: fundingLeg, gross: 0n })
  if (c.chain !== "TRC20" || c.random.next() < 0.3) return
  const stake = 1_000_000_000n
  const lending = operationRow(c, {
    type: "energy_delegation",
    status: "SWEEPING",
    wallet_id: receive.id,
    from_address: c.gas.address,
    to_wallet_id: receive.id,
    to_address: receive.address,
    currency: native,
    amount: stake
  })
  const lendingLeg: TransferLeg = {
    from: c.gas.key,
    to: receive.address,
    currency: native,
    amount: stake,
    decimals: decimals.native,
    walletId: receive.id,
    action: { _tag: "DelegateEnergy" }
  }
  // driven inline by the sweep's own actor, never handed over by itself
  c.add({ row: { ...lending, parent_id: row.id }, kind: "energy lending", leg: lendingLeg, gross: 0n })
}

/** What the ledger holds before the run: a withdrawal's amount locked, a sweep's amount uncollected. */
const openingLedger = (workload: Workload): ReadonlyArray<LedgerTransfer> =>
  workload.operations.flatMap((planned): ReadonlyArray<LedgerTransfer> => {
    const { row } = planned
    const asset = { chain: row.chain, currency: row.currency, reference: `${row.id}:opening` }
    if (row.type === "withdrawal") {
      const available = Accounts.available(workload.merchantId)
      return [
        { ...asset, debit: Accounts.chain, credit: available, amount: planned.gross, kind: "deposit" },
        {
          ...asset,
          debit: available,
          credit: Accounts.locked(workload.merchantId),
          amount: planned.gross,
          kind: "withdrawal_lock"
        }
      ]
    }
    if (row.type === "collection") {
      const uncollected = Accounts.uncollected(workload.merchantId, row.wallet_id)
      return [{ ...asset, debit: Accounts.chain, credit: uncollected, amount: planned.gross, kind: "deposit" }]
    }
    return []
  })

/** The chain balances before the run: the gas and main wallets rich, each receive wallet holding what it sweeps. */
export const fundChains = (workload: Workload, chains: ReadonlyMap<SimChainId, SimChain>) => {
  for (const w of workload.wallets) {
    const chain = chains.get(w.chain)
    if (chain === undefined) continue
    const native = NATIVE[w.chain]
    const short = workload.gasShort && w.role === "gas" && w.chain === "BEP20"
    // one funding (the chain's maximum fee) and its own fee at the highest price custody pays
    if (short) chain.credit(w.address, native, FEE_CAPS.BEP20.maxFee + 21_000n * FEE_CAPS.BEP20.maxGasPrice)
    else if (w.role !== "receive") chain.credit(w.address, native, units(1_000_000, DECIMALS[w.chain].native))
    if (w.role === "main") chain.credit(w.address, "USDT", units(1_000_000, DECIMALS[w.chain].usdt))
  }
  for (const planned of workload.operations) {
    const chain = [...chains.values()].find((c) => c.id === planned.row.chain)
    if (chain !== undefined && planned.row.type === "collection")
      chain.credit(planned.row.from_address, planned.row.currency, planned.gross)
  }
}

/** The operator refills the gas wallets (when the network heals). */
export const refillGasWallets = (workload: Workload, chains: ReadonlyMap<SimChainId, SimChain>) => {
  for (const w of workload.wallets)
    if (w.role === "gas")
      chains.get(w.chain)?.credit(w.address, NATIVE[w.chain], units(1_000_000, DECIMALS[w.chain].native))
}

/** The merchant, the wallets, the operations (as the services store them) and the opening ledger. */
export const installWorkload = (workload: Workload) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* CustodyStore
    const ledger = yield* Ledger
    const m = workload.merchantId
    yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
               VALUES (${m}, ${m}, ${m}, 'sim', ${m}, 'b', 'u', 'exchange_wallet', '{}', 'whsec_sim')`
    for (const w of workload.wallets) {
      // the platform has one gas wallet per network (a unique index): each seed's is stored as a receive
      // wallet of its merchant, which nothing here reads (the operations carry its address and key)
      const kind = w.role === "main" ? "main" : "receive"
      const purpose = w.role === "main" ? "main" : "deposit"
      yield* sql`INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
                 VALUES (${w.id}, ${m}, ${kind}, ${purpose}, ${w.chain}, ${w.key.family}, ${w.address},
                         ${`sim/${w.key.account}/${w.key.index}`}, ${w.key.account}, ${w.key.index})`
    }
    for (const { row } of workload.operations) {
      if (row.type === "gas_funding" && row.parent_id !== undefined)
        yield* store.startGasFunding({ ...row, parent_id: row.parent_id })
      else if (row.type === "energy_delegation" && row.parent_id !== undefined)
        yield* sql.withTransaction(store.insertLending({ ...row, parent_id: row.parent_id }))
      else yield* store.insertOperation(row)
    }
    yield* sql.withTransaction(ledger.post(openingLedger(workload)))
  })

/**
 * The seed's custody rows gone again, so that a long run's custody tables stay the size of one seed (custody
 * reads an operation's attempts by a scan of `custody_transactions`). Merchants, wallets and the ledger are
 * append-only (triggers refuse deletes) and indexed by what the next seeds read: they stay.
 */
export const removeWorkload = (workload: Workload) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ids = workload.operations.map((o) => o.row.id)
    yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`DELETE FROM transactions WHERE merchant_id = ${workload.merchantId}`
        yield* sql`UPDATE custody_operations SET gas_funding_id = NULL, energy_id = NULL, parent_id = NULL WHERE ${sql.in("id", ids)}`
        yield* sql`DELETE FROM custody_transactions WHERE ${sql.in("operation_id", ids)}`
        yield* sql`DELETE FROM custody_operations WHERE ${sql.in("id", ids)}`
        yield* sql`DELETE FROM evm_nonces WHERE ${sql.in(
          "address",
          workload.wallets.map((w) => w.address.toLowerCase())
        )}`
      })
    )
  })
