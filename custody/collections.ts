import { DateTime, Effect, Option, Schedule } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import type { AssetPolicy } from "../src/domain/asset-policy.js"
import { type Chain, NATIVE_ASSETS } from "../src/domain/chain.js"
import { newId } from "../src/ids.js"
import { Accounts, Ledger, type LedgerTransfer } from "../src/ledger/ledger.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { fitsPrecision, fromBaseUnits, MoneyDecimal, toBaseUnits } from "../src/money.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { OrderStore } from "../src/stores/order-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { CustodyConfig, withGasMargin } from "./custody-config.js"
import { CustodyStore, type OperationRow } from "../src/stores/custody-store.js"
import { CustodyBooks, isNative, isStakeOperation } from "./custody-books.js"
import { isFinished, type SweepOperation } from "./custody-operation.js"
import { type EnergyPlan, EnergySource } from "./energy.js"
import { GasWallets } from "./gas-wallets.js"
import { type SendOutcome, TransferSender } from "./transfer-sender.js"
import { WalletActors } from "./wallet-actor.js"
import { GasWalletEmpty, NetworkFeeUnavailable } from "./chain-errors.js"
import {
  InsufficientUncollected,
  InvalidSweepRequest,
  NothingToSweep,
  ReceiveWalletNotFound,
  SweepInFlight,
  SweepNotFound,
  WalletAssetNotFound
} from "./collection-errors.js"

/** What a final Solana token transfer waits for before it is booked (the rent it paid, if any). */
export const RENT_UNKNOWN = "the node's balances of its final transaction (the rent it paid, if any); resumed later"

/** How often a wallet waiting for its gas funding hands it to the gas wallet's actor again, in looks. */
const OWNER_EVERY_LOOKS = 4

/** A node that does not answer is waited for: quickly at first, then every 15 s. */
const retrySchedule = Schedule.exponential("1 second").pipe(Schedule.union(Schedule.spaced("15 seconds")))

const parseAssetKey = (key: string) => {
  const match = /^([A-Z0-9]+)-([A-Z0-9]+)$/.exec(key)
  return match === null ? undefined : { chain: match[1] ?? "", currency: match[2] ?? "" }
}

/** Why an asset cannot be collected for this merchant, in words; none when it can. */
const collectionRefusal = (policy: AssetPolicy): string | undefined => {
  if (policy.actions.collect) return undefined
  if (!policy.merchant_enabled)
    return `asset ${policy.asset_key} is not enabled for this merchant (POST /v1/wallet-asset-enrollments)`
  if (policy.status !== "live") return `asset ${policy.asset_key} is ${policy.status}: collection is not live for it`
  return `asset ${policy.asset_key} does not allow collection (collection_mode ${policy.collection_mode})`
}

/**
 * Collections (sweeps) of receive wallets into the merchant's main wallet, with the gas funding a token
 * sweep needs first. A request only validates and stores the operation, then hands it to the wallet's
 * actor; `drive` is what the actor runs, from durable state, as often as it is delivered.
 */
export class Collections extends Effect.Service<Collections>()("facet/Collections", {
  effect: Effect.gen(function* () {
    const store = yield* CustodyStore
    const sender = yield* TransferSender
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const ledgerStore = yield* LedgerStore
    const clients = yield* ChainClients
    const catalog = yield* AssetCatalog
    const assetStore = yield* AssetStore
    const actors = yield* WalletActors
    const config = yield* CustodyConfig
    const gas = yield* GasWallets
    const walletStore = yield* WalletStore
    const orderStore = yield* OrderStore
    const books = yield* CustodyBooks
    const energy = yield* EnergySource

    const clientOf = (chain: Chain) =>
      Option.match(clients.get(chain), {
        onNone: () => Effect.dieMessage(`no chain client for ${chain}`),
        onSome: Effect.succeed
      })

    const policyOf = Effect.fn("Collections.policyOf")(function* (merchantId: string, assetKey: string) {
      const policy = (yield* catalog.policies(merchantId)).find((p) => p.asset_key === assetKey)
      if (policy === undefined) return yield* new WalletAssetNotFound({ assetKey })
      return policy
    })

    /** The merchant of a sweep, a funding or a withdrawal (only the platform's stake operations have none). */
    const merchantOf = (operation: OperationRow) =>
      operation.merchant_id === null
        ? Effect.dieMessage(`custody ${operation.id} (${operation.type}) has no merchant`)
        : Effect.succeed(operation.merchant_id)

    /** A TRC20 token transfer: its energy comes from the stake when it can (custody/energy.ts). */
    const usesEnergy = (asset: { readonly chain: Chain; readonly currency: string }) =>
      asset.chain === "TRC20" && !isNative(asset)
    /** A native transfer on TRON or BEP20 pays its fee out of the coins it moves (on Solana the gas wallet pays). */
    const paysOwnFee = (asset: { readonly chain: Chain; readonly currency: string }) =>
      isNative(asset) && asset.chain !== "SOLANA"

    /** The native units a transfer costs whoever pays its fee (on Solana the gas wallet, as fee payer). */
    const sweepFee = (chain: Chain, from: string, to: string, currency: string, amount: bigint) =>
      Effect.flatMap(clientOf(chain), (client) =>
        client.feeEstimate({ from, to, currency, amount, sponsored: chain === "SOLANA" })
      )

    const withMargin = (units: bigint) => withGasMargin(config, units)

    /** The value of base units of a currency in USDT, when it has a price. */
    const valueInUsdt = (currency: string, units: bigint, decimals: number) =>
      Option.map(Option.fromNullable(config.prices.get(currency)), (price) =>
        new MoneyDecimal(fromBaseUnits(units, decimals)).times(price)
      )

    /**
     * A sweep that costs more gas than a share of its value loses the merchant money: why it is refused, with
     * both figures and, on TRON, the energy path they are for; none when it may go.
     */
    const gasShareRefusal = (
      chain: Chain,
      fee: bigint,
      currency: string,
      amount: bigint,
      decimals: number,
      planned: EnergyPlan | undefined
    ) => {
      const native = NATIVE_ASSETS[chain]
      const gasValue = valueInUsdt(native.currency, withMargin(fee), native.decimals)
      const sweptValue = valueInUsdt(currency, amount, decimals)
      if (
        Option.isNone(gasValue) ||
        Option.isNone(sweptValue) ||
        !gasValue.value.greaterThan(sweptValue.value.times(config.maxGasSharePercent).div(100))
      )
        return undefined
      const path =
        planned === undefined
          ? ""
          : planned.path === "delegated"
            ? ` (its energy lent from the stake${planned.activation ? "; the address's activation included" : ""})`
            : ` (TRX burned for its energy: ${planned.reason})`
      return `the sweep's gas (${fromBaseUnits(withMargin(fee), native.decimals)} ${native.currency} ≈ ${gasValue.value.toFixed(2)} USDT) is more than ${config.maxGasSharePercent}% of its value (${fromBaseUnits(amount, decimals)} ${currency} ≈ ${sweptValue.value.toFixed(2)} USDT); sweep a larger balance later${path}`
    }

    const view = Effect.fn("Collections.view")(function* (operation: OperationRow) {
      const merchantId = yield* merchantOf(operation)
      const policy = yield* Effect.orDie(catalog.policy(merchantId, operation.chain, operation.currency))
      const decimals = Option.match(policy, {
        onNone: () => NATIVE_ASSETS[operation.chain].decimals,
        onSome: (p) => p.decimals
      })
      const attempts = yield* store.attempts(operation.id)
      const last = attempts[attempts.length - 1]
      const funding =
        operation.gas_funding_id === null ? Option.none() : yield* store.operation(operation.gas_funding_id)
      const fundingAttempts = Option.isSome(funding) ? yield* store.attempts(funding.value.id) : []
      const fundingTx = fundingAttempts[fundingAttempts.length - 1]
      const nativeDecimals = NATIVE_ASSETS[operation.chain].decimals
      const lending = operation.energy_id === null ? Option.none() : yield* store.operation(operation.energy_id)
      const shown: SweepOperation = {
        operation_id: operation.id,
        type: operation.type === "gas_funding" ? "gas_funding" : "collection",
        status: operation.status,
        asset_key: `${operation.chain}-${operation.currency}`,
        chain: operation.chain,
        currency: operation.currency,
        from_wallet_id: operation.wallet_id,
        from_address: operation.from_address,
        to_address: operation.to_address,
        amount: fromBaseUnits(operation.amount, decimals),
        ...(Option.isSome(funding)
          ? {
              gas_funding: {
                operation_id: funding.value.id,
                status: funding.value.status,
                tx_hash: fundingTx?.tx_hash ?? null,
                amount: fromBaseUnits(funding.value.amount, nativeDecimals),
                asset: NATIVE_ASSETS[operation.chain].currency
              }
            }
          : {}),
        ...(operation.energy_path === null
          ? {}
          : {
              energy: {
                path: operation.energy_path,
                ...(operation.energy_reason === null ? {} : { reason: operation.energy_reason }),
                ...(Option.isSome(lending)
                  ? {
                      operation_id: lending.value.id,
                      status: lending.value.status,
                      stake_lent: fromBaseUnits(lending.value.amount, nativeDecimals)
                    }
                  : {})
              }
            }),
        ...(last === undefined ? {} : { tx_hash: last.tx_hash }),
        ...(last?.fee === null || last?.fee === undefined
          ? {}
          : { network_fee: fromBaseUnits(last.fee, nativeDecimals) }),
        network_fee_asset: NATIVE_ASSETS[operation.chain].currency,
        ...(operation.waiting_for === null ? {} : { waiting_for: operation.waiting_for }),
        ...(operation.failure_reason === null ? {} : { failure_reason: operation.failure_reason }),
        created_at: DateTime.formatIso(DateTime.unsafeFromDate(operation.created_at)),
        updated_at: DateTime.formatIso(DateTime.unsafeFromDate(operation.updated_at))
      }
      return shown
    })

    /**
     * POST /v1/wallet-assets/{asset_key}/sweep; and, `byCustody`, custody consolidating a native coin (TRX,
     * BNB) by itself — the API refuses to sweep those (collection is off for them), but a merchant must be
     * able to withdraw what its users deposited, and withdrawals leave from the main wallet.
     */
    const start = (
      merchantId: string,
      assetKey: string,
      body: { readonly from_wallet_id: string; readonly amount?: string | undefined },
      byCustody: boolean
    ) =>
      Effect.gen(function* () {
        const policy = yield* policyOf(merchantId, assetKey)
        const refusal = byCustody && isNative(policy) && policy.actions.withdraw ? undefined : collectionRefusal(policy)
        if (refusal !== undefined) return yield* new InvalidSweepRequest({ reason: refusal })
        const wallet = yield* Effect.orDie(wallets.byId(body.from_wallet_id))
        if (
          wallet === undefined ||
          wallet.merchantId !== merchantId ||
          wallet.kind !== "receive" ||
          wallet.network !== policy.chain
        ) {
          return yield* new ReceiveWalletNotFound({ walletId: body.from_wallet_id, chain: policy.chain })
        }
        const uncollected = yield* Effect.orDie(
          ledger.balance(Accounts.uncollected(merchantId, wallet.id), policy.chain, policy.currency)
        )
        if (body.amount !== undefined && !fitsPrecision(body.amount, policy.amount_precision)) {
          return yield* new InvalidSweepRequest({
            reason: `amount ${body.amount} has more than ${policy.amount_precision} fractional digits, the precision of ${assetKey}`
          })
        }
        const amount = body.amount === undefined ? uncollected : toBaseUnits(body.amount, policy.decimals)
        if (amount <= 0n) return yield* new NothingToSweep({ walletId: wallet.id, assetKey })
        if (amount > uncollected) {
          return yield* new InsufficientUncollected({
            walletId: wallet.id,
            currency: policy.currency,
            requested: fromBaseUnits(amount, policy.decimals),
            uncollected: fromBaseUnits(uncollected, policy.decimals)
          })
        }
        const main = yield* Effect.orDie(wallets.mainWallet(merchantId, policy.chain))
        const unavailable = (e: { readonly message: string }) =>
          new NetworkFeeUnavailable({ chain: policy.chain, reason: e.message })
        // TRON: energy lent from the stake when it can be had; the fee is then what the lent energy leaves
        const planned: EnergyPlan | undefined = usesEnergy(policy)
          ? yield* energy
              .plan({
                from: wallet.address,
                to: main.address,
                currency: policy.currency,
                amount,
                walletId: wallet.id
              })
              .pipe(Effect.catchTag("ChainRpcError", unavailable))
          : undefined
        const fee =
          planned?.path === "delegated"
            ? planned.fee
            : yield* sweepFee(policy.chain, wallet.address, main.address, policy.currency, amount).pipe(
                Effect.catchTag("ChainRpcError", unavailable)
              )
        const tooCostly = gasShareRefusal(policy.chain, fee, policy.currency, amount, policy.decimals, planned)
        if (tooCostly !== undefined) return yield* new InvalidSweepRequest({ reason: tooCostly })
        const nativeDecimals = NATIVE_ASSETS[policy.chain].decimals
        if (paysOwnFee(policy) && amount <= withMargin(fee)) {
          return yield* new InvalidSweepRequest({
            reason: `${fromBaseUnits(amount, policy.decimals)} ${policy.currency} cannot pay its own network fee (${fromBaseUnits(withMargin(fee), nativeDecimals)})`
          })
        }
        const needsGas = !isNative(policy) && policy.chain !== "SOLANA"
        // a gas wallet known to be empty cannot fund it (or pay a Solana sweep's fee): refused before anything is stored
        if (!isNative(policy) && policy.chain !== "POLYGON") {
          const gasWallet = yield* gas.state(policy.chain)
          if (gasWallet.status === "empty") {
            return yield* new GasWalletEmpty({
              chain: policy.chain,
              balance: Option.getOrElse(gasWallet.balance, () => "?"),
              asset: gasWallet.asset
            })
          }
        }
        const id = newId("op")
        const inserted = yield* store.insertCollection({
          id,
          type: "collection",
          status: needsGas ? "GAS_FUNDING" : "SWEEPING",
          merchant_id: merchantId,
          chain: policy.chain,
          currency: policy.currency,
          wallet_id: wallet.id,
          from_address: wallet.address,
          to_wallet_id: main.id,
          to_address: main.address,
          amount: amount.toString(),
          ...(planned === undefined
            ? {}
            : { energy_path: planned.path, ...(planned.path === "burned" ? { energy_reason: planned.reason } : {}) }),
          waiting_for: needsGas ? "the gas estimate" : "the wallet's actor"
        })
        if (!inserted) {
          const busy = Option.getOrUndefined(yield* store.collectionInFlight(wallet.id))
          return yield* new SweepInFlight({ walletId: wallet.id, operationId: busy?.id, status: busy?.status })
        }
        yield* Effect.logInfo(
          `custody ${id}: ${byCustody ? "consolidation" : "sweep"} of ${fromBaseUnits(amount, policy.decimals)} ${assetKey} from ${wallet.address} to ${main.address} requested`
        )
        yield* handOver(id, wallet.id)
        const stored = yield* store.operation(id)
        if (Option.isNone(stored))
          return yield* Effect.dieMessage(`custody operation ${id} vanished after it was stored`)
        return yield* view(stored.value)
      })

    const request = Effect.fn("Collections.request")(function* (
      merchantId: string,
      assetKey: string,
      body: { readonly from_wallet_id: string; readonly amount?: string | undefined }
    ) {
      return yield* start(merchantId, assetKey, body, false)
    })

    /**
     * Native coins (TRX, BNB) deposited to receive wallets, consolidated into the main wallet by custody
     * itself from FACET_CONSOLIDATE_MIN_<CHAIN> (1 TRX, 0.001 BNB) and once the network fee is a small enough
     * share of them (FACET_SWEEP_MAX_GAS_SHARE_PERCENT): the merchant pays that fee out of the coins, as for a
     * native withdrawal. Returns how many were started.
     */
    const consolidateNatives = Effect.fn("Collections.consolidateNatives")(function* () {
      const due = yield* Effect.orDie(ledgerStore.nativesToConsolidate(config.consolidateMin))
      let started = 0
      for (const wallet of due) {
        const outcome = yield* Effect.either(
          start(wallet.merchant_id, `${wallet.chain}-${wallet.currency}`, { from_wallet_id: wallet.wallet_id }, true)
        )
        if (outcome._tag === "Right") started += 1
        else
          yield* Effect.logDebug(
            `consolidation of ${wallet.wallet_id} (${wallet.chain}-${wallet.currency}) not started: ${outcome.left.message}`
          )
      }
      return started
    })

    /** GET /v1/wallet-assets/{asset_key}/sweeps/{operation_id} */
    const get = Effect.fn("Collections.get")(function* (merchantId: string, assetKey: string, operationId: string) {
      const found = yield* store.operation(operationId)
      if (
        Option.isNone(found) ||
        found.value.type === "withdrawal" ||
        found.value.type === "account_close" ||
        isStakeOperation(found.value) ||
        found.value.merchant_id !== merchantId ||
        `${found.value.chain}-${found.value.currency}` !== assetKey
      ) {
        return yield* new SweepNotFound({ operationId, assetKey })
      }
      return yield* view(found.value)
    })

    /**
     * A gas funding: platform gas wallet → receive wallet; final → ledger `gas` → `gas:<wallet>`, its fee `gas` →
     * chain. The gas wallet's actor signs and sends it (`sent`) and goes on to the next: its fundings are in
     * flight together (EVM: at consecutive nonces). The actor of the wallet it funds waits for it anyway and
     * looks at it (`look`: never a send); whichever sees it final first books it.
     */
    const driveFunding = (operation: OperationRow, reach: "sent" | "look") =>
      Effect.gen(function* () {
        const gas = yield* Effect.orDie(wallets.byId(operation.wallet_id))
        if (gas === undefined) return yield* store.fail(operation.id, "the gas wallet is gone")
        const leg = {
          from: gas.key,
          to: operation.to_address,
          currency: operation.currency,
          amount: operation.amount,
          decimals: NATIVE_ASSETS[operation.chain].decimals,
          walletId: operation.to_wallet_id
        }
        const finished = yield* reach === "sent" ? sender.sendOut(operation, leg) : sender.look(operation, leg)
        if (Option.isNone(finished)) return
        const outcome = finished.value
        if (outcome._tag === "Failed") return yield* books.failed(operation, outcome)
        yield* books.finish(operation, outcome, [
          {
            debit: Accounts.gas,
            credit: Accounts.gasAt(operation.to_wallet_id),
            chain: operation.chain,
            currency: operation.currency,
            amount: outcome.amount,
            kind: "gas_funding",
            reference: operation.id
          },
          books.networkFee(operation, outcome.fee)
        ])
      })

    /**
     * A gas funding waited for by the wallet it funds. The gas wallet's actor is its one broadcaster: handed it
     * first, and again every few looks (to send it again, replace it, or judge it from final state) — each a
     * message of its own; this actor only looks, and books it once final state shows it. Returns when it is
     * finished, or when nothing of it is out even after its actor had it (resumed later).
     */
    const awaitFunding = (funding: OperationRow) =>
      Effect.gen(function* () {
        const toOwner = Effect.flatMap(store.kick(funding.id), (kicks) =>
          actors.run(
            funding.wallet_id,
            funding.id,
            Option.getOrElse(kicks, () => 0)
          )
        )
        yield* actors.run(funding.wallet_id, funding.id, 0)
        for (let looks = 1; ; looks++) {
          const current = yield* store.operation(funding.id)
          if (Option.isNone(current) || isFinished(current.value.status)) return
          if (Option.isNone(yield* store.liveAttempt(funding.id))) {
            // proven dead, or never signed: its actor signs it (again)
            yield* toOwner
            if (Option.isNone(yield* store.liveAttempt(funding.id))) return
          }
          yield* driveFunding(current.value, "look")
          if (looks % OWNER_EVERY_LOOKS === 0) yield* toOwner
          yield* Effect.sleep(config.pollInterval)
        }
      })

    /**
     * Solana: the rent the gas wallet (the fee payer) paid in a final token transfer for the recipient's token
     * account it made, from the chain's balances, not from what was signed: transfers signed before the first
     * of them lands each count the rent, and only the one that lands first pays it. Undefined: the node's
     * lookup has not said yet (nothing is booked on a guess).
     */
    const rentOf = (
      operation: OperationRow,
      outcome: Extract<SendOutcome, { readonly _tag: "Final" }>
    ): ReadonlyArray<LedgerTransfer> | undefined => {
      if (outcome.payerSpent === undefined) return undefined
      const rent = outcome.payerSpent - outcome.fee
      return rent <= 0n
        ? []
        : [
            {
              debit: Accounts.gas,
              credit: Accounts.chain,
              chain: operation.chain,
              currency: NATIVE_ASSETS[operation.chain].currency,
              amount: rent,
              kind: "rent",
              reference: operation.id
            }
          ]
    }

    /**
     * Makes sure the sending wallet can pay for its transfer (a receive wallet's sweep, a main wallet's token
     * withdrawal), funding it from the gas wallet first when it cannot. On TRON the energy comes from the
     * stake when it can, reserved here once: the wallet is then funded only for what the lent energy leaves
     * (bandwidth beyond its free bytes, and 1 sun that activates a never-activated address, whose creation
     * fee the gas wallet pays), and the lending is sent once the address exists. A lending that fails falls
     * back to TRX burned, unless `refuseBurn` (a sweep's gas-share rule) says why not.
     */
    const ensureGas = (
      operation: OperationRow,
      refuseBurn: (fee: bigint, reason: string) => string | undefined = () => undefined
    ) =>
      Effect.gen(function* () {
        const native = NATIVE_ASSETS[operation.chain]
        const fullFee = sweepFee(
          operation.chain,
          operation.from_address,
          operation.to_address,
          operation.currency,
          operation.amount
        )
        for (;;) {
          const current = Option.getOrElse(yield* store.operation(operation.id), () => operation)
          // a funding in flight is the gas wallet's actor's to send (serialized with its others), waited for here
          if (current.gas_funding_id !== null) {
            const funding = yield* store.operation(current.gas_funding_id)
            if (Option.isNone(funding))
              return yield* Effect.dieMessage(`gas funding ${current.gas_funding_id} vanished`)
            if (!isFinished(funding.value.status)) {
              yield* awaitFunding(funding.value)
              const done = yield* store.operation(funding.value.id)
              // nothing of it out (the gas wallet's actor died first): the resume pass comes back here
              if (Option.isNone(done) || !isFinished(done.value.status)) return "pending" as const
              continue
            }
            if (funding.value.status === "FAILED")
              return { failed: `gas funding failed: ${funding.value.failure_reason ?? "no reason recorded"}` } as const
          }
          if (usesEnergy(current) && current.energy_path !== "burned" && current.energy_id === null) {
            // a sweep accepted on the energy path's figures whose energy cannot be had now burns TRX only
            // within the gas-share rule (the stake went to transfers decided just before it)
            if ((yield* energy.reserve(current)) === "burned" && current.energy_path === "delegated") {
              const decided = Option.getOrElse(yield* store.operation(current.id), () => current)
              const refused = refuseBurn(yield* fullFee, decided.energy_reason ?? "the stake could lend no more")
              if (refused !== undefined) return { failed: refused } as const
            }
            continue
          }
          const lending = current.energy_id === null ? Option.none() : yield* store.operation(current.energy_id)
          if (current.energy_path === "delegated" && Option.isSome(lending) && lending.value.status === "FAILED") {
            const reason = `lending the stake's energy failed (${lending.value.failure_reason ?? "no reason recorded"})`
            const refused = refuseBurn(yield* fullFee, reason)
            if (refused !== undefined) return { failed: refused } as const
            yield* store.setEnergyPath(current.id, "burned", reason)
            continue
          }
          const lent = current.energy_path === "delegated" && Option.isSome(lending) ? lending.value : undefined
          // what the sender must hold: with lent energy, what it leaves (bandwidth, activation); else the whole fee
          const need =
            lent === undefined
              ? { fee: yield* fullFee, activate: false }
              : yield* energy.senderNeeds(current.from_address, current.wallet_id)
          const parked = yield* ledger.balance(Accounts.gasAt(current.wallet_id), current.chain, native.currency)
          if (parked >= need.fee && !need.activate) {
            if (lent === undefined || lent.status === "COMPLETED") return "ready" as const
            // only an existing account can borrow energy: lent now, after its funding
            yield* energy.drive(lent.id, "by its transfer")
            continue
          }
          const gas = yield* wallets.gasWallet(current.chain)
          const amount = withMargin(need.fee) - parked > 0n ? withMargin(need.fee) - parked : 1n
          const id = newId("op")
          yield* store.startGasFunding({
            id,
            type: "gas_funding",
            status: "SWEEPING",
            merchant_id: current.merchant_id,
            chain: current.chain,
            currency: native.currency,
            wallet_id: gas.id,
            from_address: gas.address,
            to_wallet_id: current.wallet_id,
            to_address: current.from_address,
            amount: amount.toString(),
            parent_id: current.id,
            waiting_for: "the gas wallet's actor"
          })
          // handed over below, and watched from here: the resume pass leaves it alone while it is (kicks > 0)
          yield* store.kick(id)
          yield* Effect.logInfo(
            `custody ${current.id}: funding ${fromBaseUnits(amount, native.decimals)} ${native.currency} of gas first (${id})${need.activate ? ", which activates the address" : ""}`
          )
        }
      })

    /** A collection: gas first when a token sweep needs it, then the sweep, then the ledger. */
    const driveCollection = (operation: OperationRow) =>
      Effect.gen(function* () {
        const merchantId = yield* merchantOf(operation)
        const policy = yield* catalog.policy(merchantId, operation.chain, operation.currency)
        if (Option.isNone(policy)) return yield* store.fail(operation.id, "the asset is no longer in the catalogue")
        const decimals = policy.value.decimals
        if (operation.status === "GAS_FUNDING") {
          // no energy after all: TRX burned only within the gas-share rule the sweep was accepted under
          const refuseBurn = (fee: bigint, reason: string) =>
            gasShareRefusal(operation.chain, fee, operation.currency, operation.amount, decimals, {
              path: "burned",
              reason
            })
          const gas = yield* ensureGas(operation, refuseBurn).pipe(
            Effect.retry({ while: (e) => e._tag === "ChainRpcError", schedule: retrySchedule })
          )
          // the gas wallet's actor answered without finishing it (it died): the resume pass comes back here
          if (gas === "pending") return yield* store.waitingFor(operation.id, "the gas funding, resumed later")
          if (gas !== "ready") return yield* store.fail(operation.id, gas.failed)
          yield* store.setStatus(operation.id, "SWEEPING", "the sweep to be signed")
        }
        const wallet = yield* wallets.byId(operation.wallet_id)
        if (wallet === undefined) return yield* store.fail(operation.id, "the receive wallet is gone")
        const gasWallet = operation.chain === "SOLANA" ? yield* wallets.gasWallet("SOLANA") : undefined
        // a native sweep keeps back its own fee (with the margin): what is left of it stays uncollected
        const amount = paysOwnFee(operation)
          ? operation.amount -
            withMargin(
              yield* sweepFee(
                operation.chain,
                operation.from_address,
                operation.to_address,
                operation.currency,
                operation.amount
              ).pipe(Effect.retry({ schedule: retrySchedule }))
            )
          : operation.amount
        if (amount <= 0n) return yield* store.fail(operation.id, "the balance cannot pay its own network fee")
        const outcome = yield* sender.send(operation, {
          from: wallet.key,
          to: operation.to_address,
          currency: operation.currency,
          amount,
          decimals: policy.value.decimals,
          walletId: operation.wallet_id,
          ...(gasWallet === undefined ? {} : { feePayer: gasWallet.key })
        })
        if (outcome._tag === "Failed") return yield* books.failed(operation, outcome)
        const moved: Array<LedgerTransfer> = [
          {
            debit: Accounts.uncollected(merchantId, operation.wallet_id),
            credit: Accounts.available(merchantId),
            chain: operation.chain,
            currency: operation.currency,
            amount: outcome.amount,
            kind: "collection",
            reference: operation.id
          }
        ]
        moved.push(books.networkFee(operation, outcome.fee))
        if (operation.chain === "SOLANA" && !isNative(operation)) {
          // the gas wallet also paid the rent of the main token account, if this transfer is the one that made it
          const rent = rentOf(operation, outcome)
          if (rent === undefined) return yield* store.waitingFor(operation.id, RENT_UNKNOWN)
          moved.push(...rent)
        }
        yield* books.finish(operation, outcome, moved, closeAfterSweep(operation, merchantId))
      })

    /**
     * Solana: a sweep that left its receive wallet nothing of the token closes the wallet's token account, its
     * rent (paid by whoever made the account, usually the payer) back to the platform's gas wallet — at an
     * order address once its orders are settled, at a deposit address only when configured (its next
     * depositor would pay to make it again). Stored in the sweep's completing transaction, so a crash cannot
     * lose it; the resume pass hands it to the wallet's actor.
     */
    const closeAfterSweep = (operation: OperationRow, merchantId: string) =>
      Effect.gen(function* () {
        if (operation.chain !== "SOLANA" || isNative(operation)) return
        const left = yield* ledger.balance(
          Accounts.uncollected(merchantId, operation.wallet_id),
          operation.chain,
          operation.currency
        )
        if (left > 0n) return
        const wallet = yield* walletStore.byId(operation.wallet_id)
        if (Option.isNone(wallet)) return
        const close =
          wallet.value.purpose === "order"
            ? config.closeTokenAccounts.order && (yield* orderStore.settledAt(operation.wallet_id))
            : wallet.value.purpose === "deposit" && config.closeTokenAccounts.deposit
        if (!close) return
        // made on first use, and this sweep's fee payer
        const gasWallet = yield* wallets.gasWallet(operation.chain)
        yield* store.insertAccountClose({
          id: newId("op"),
          type: "account_close",
          status: "SWEEPING",
          merchant_id: merchantId,
          chain: operation.chain,
          currency: operation.currency,
          wallet_id: operation.wallet_id,
          from_address: operation.from_address,
          to_wallet_id: gasWallet.id,
          to_address: gasWallet.address,
          amount: "0",
          parent_id: operation.id,
          waiting_for: "the receive wallet's actor"
        })
      })

    /** Closes a receive wallet's emptied token account: its rent `chain` → `gas`, the fee `gas` → `chain`. */
    const driveClose = (operation: OperationRow) =>
      Effect.gen(function* () {
        const wallet = yield* wallets.byId(operation.wallet_id)
        if (wallet === undefined) return yield* store.fail(operation.id, "the receive wallet is gone")
        const gasWallet = yield* wallets.gasWallet(operation.chain)
        const outcome = yield* sender.send(operation, {
          from: wallet.key,
          to: operation.to_address,
          currency: operation.currency,
          amount: 0n,
          decimals: NATIVE_ASSETS[operation.chain].decimals,
          walletId: operation.wallet_id,
          feePayer: gasWallet.key,
          action: { _tag: "CloseTokenAccount" }
        })
        if (outcome._tag === "Failed") return yield* books.failed(operation, outcome)
        // what came back, as the chain shows it: the gas wallet paid the fee and received the account's lamports
        if (outcome.payerSpent === undefined) return yield* store.waitingFor(operation.id, RENT_UNKNOWN)
        yield* books.finish(operation, outcome, [
          {
            debit: Accounts.chain,
            credit: Accounts.gas,
            chain: operation.chain,
            currency: NATIVE_ASSETS[operation.chain].currency,
            amount: outcome.fee - outcome.payerSpent,
            kind: "rent_refund",
            reference: operation.id
          },
          books.networkFee(operation, outcome.fee)
        ])
      })

    /** What a wallet's actor runs for an operation: safe to run again at any point. */
    const drive = Effect.fn("Collections.drive")(function* (operationId: string) {
      const found = yield* store.operation(operationId)
      if (Option.isNone(found) || isFinished(found.value.status)) return
      const operation = found.value
      yield* (
        operation.type === "gas_funding"
          ? driveFunding(operation, "sent")
          : operation.type === "account_close"
            ? driveClose(operation)
            : isStakeOperation(operation)
              ? energy.drive(operation.id)
              : driveCollection(operation)
      ).pipe(
        Effect.catchTag("ChainRpcError", (e) =>
          store.waitingFor(operation.id, `the ${operation.chain} node (${e.message}); resumed later`)
        ),
        Effect.catchTag("SqlError", (e) =>
          Effect.logError(`custody ${operation.id}: database error, resumed later: ${e.message}`)
        )
      )
    })

    /** Hands an operation to its wallet's actor, as a new message (each hand-over is counted in `kicks`). */
    const handOver = (operationId: string, walletId: string) =>
      Effect.gen(function* () {
        const kicks = yield* store.kick(operationId)
        yield* actors.kick(
          walletId,
          operationId,
          Option.getOrElse(kicks, () => 1)
        )
      })

    /**
     * Open operations not updated for a while get a new hand-over (after a crash, or a handler that died);
     * energy lent for transfers now over is taken back (stored here, handed over with the rest).
     */
    const resume = Effect.fn("Collections.resume")(function* (olderThanMs: number) {
      const reclaims = yield* energy
        .reclaimDue()
        .pipe(
          Effect.catchAllCause((cause) =>
            Effect.as(Effect.logWarning("custody: storing the takings-back of energy failed; tried again", cause), 0)
          )
        )
      if (reclaims > 0)
        yield* Effect.logInfo(`custody: taking back the energy lent for ${reclaims} finished transfer(s)`)
      const due = yield* store.open(olderThanMs)
      for (const operation of due) yield* handOver(operation.id, operation.wallet_id)
      return due.length
    })

    /**
     * Automatic collection: every receive wallet whose uncollected balance of an asset with a threshold
     * (FACET_AUTO_SWEEP_<CHAIN>_<CURRENCY>) has reached it, and that has no sweep in flight, is swept
     * through the same request path as the API (its policy, gas share and one-per-wallet rules).
     */
    const autoSweep = Effect.fn("Collections.autoSweep")(function* () {
      let started = 0
      for (const [assetKey, threshold] of config.autoSweep) {
        const parsed = parseAssetKey(assetKey)
        if (parsed === undefined) continue
        const decimals = yield* Effect.orDie(assetStore.decimals(parsed.chain, parsed.currency))
        if (Option.isNone(decimals)) continue
        const due = yield* Effect.orDie(
          ledgerStore.uncollectedAtLeast(parsed.chain, parsed.currency, toBaseUnits(threshold, decimals.value))
        )
        for (const wallet of due) {
          const outcome = yield* Effect.either(
            request(wallet.merchant_id, assetKey, { from_wallet_id: wallet.wallet_id })
          )
          if (outcome._tag === "Right") started += 1
          else
            yield* Effect.logDebug(
              `automatic sweep of ${wallet.wallet_id} (${assetKey}) not started: ${outcome.left.message}`
            )
        }
      }
      return started
    })

    return {
      request,
      consolidateNatives,
      get,
      drive,
      resume,
      view,
      autoSweep,
      ensureGas,
      paysOwnFee,
      rentOf,
      withMargin
    } as const
  }),
  dependencies: [
    AssetStore.Default,
    OrderStore.Default,
    WalletStore.Default,
    LedgerStore.Default,
    CustodyStore.Default,
    AssetCatalog.Default,
    Ledger.Default,
    Wallets.Default,
    GasWallets.Default,
    TransferSender.Default,
    WalletActors.Default,
    CustodyBooks.Default,
    EnergySource.Default
  ]
}) {}
