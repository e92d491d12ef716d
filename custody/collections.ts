import { DateTime, Effect, Layer, Option, Schedule } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import type { AssetPolicy } from "../src/domain/asset-policy.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { newId } from "../src/ids.js"
import { Accounts, Ledger } from "../src/ledger/ledger.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { fitsPrecision, fromBaseUnits, toBaseUnits } from "../src/money.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { CustodyConfig, withGasMargin } from "./custody-config.js"
import { CustodyStore, type OperationRow } from "../src/stores/custody-store.js"
import { isNative, isStakeOperation } from "./custody-books.js"
import type { SweepOperation } from "./custody-operation.js"
import { type EnergyPlan, EnergySource } from "./energy.js"
import { GasWallets } from "./gas-wallets.js"
import { Operations } from "./engine/operations.js"
import { gasShareRefusal, paysOwnFee, transferFee, usesEnergy } from "./transfer-costs.js"
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
 * Collections (sweeps) of receive wallets into the merchant's main wallet: the request side. A request
 * (the API, automatic collection, native consolidation) only validates and stores the operation, then hands
 * it to the receive wallet's actor, which drives it with the sweeps' driver (sweep-driver.ts).
 */
export class Collections extends Effect.Service<Collections>()("facet/Collections", {
  effect: Effect.gen(function* () {
    const store = yield* CustodyStore
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const ledgerStore = yield* LedgerStore
    const clients = yield* ChainClients
    const catalog = yield* AssetCatalog
    const assetStore = yield* AssetStore
    const operations = yield* Operations
    const config = yield* CustodyConfig
    const gas = yield* GasWallets
    const energy = yield* EnergySource

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
            : yield* transferFee(clients, {
                chain: policy.chain,
                currency: policy.currency,
                from: wallet.address,
                to: main.address,
                amount
              }).pipe(Effect.catchTag("ChainRpcError", unavailable))
        const tooCostly = gasShareRefusal(config, { ...policy, fee, amount }, planned)
        if (tooCostly !== undefined) return yield* new InvalidSweepRequest({ reason: tooCostly })
        const nativeDecimals = NATIVE_ASSETS[policy.chain].decimals
        if (paysOwnFee(policy) && amount <= withGasMargin(config, fee)) {
          return yield* new InvalidSweepRequest({
            reason: `${fromBaseUnits(amount, policy.decimals)} ${policy.currency} cannot pay its own network fee (${fromBaseUnits(withGasMargin(config, fee), nativeDecimals)})`
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
        yield* operations.handOver(id, wallet.id)
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
      view,
      autoSweep
    } as const
  }),
  dependencies: [
    AssetStore.Default,
    LedgerStore.Default,
    CustodyStore.Default,
    AssetCatalog.Default,
    Ledger.Default,
    Wallets.Default,
    GasWallets.Default,
    EnergySource.Default,
    Operations.Default
  ]
}) {}

/** Automatic collection, when FACET_AUTO_SWEEP_<CHAIN>_<CURRENCY> sets a threshold (off by default). */
export const AutoSweepLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const collections = yield* Collections
    const config = yield* CustodyConfig
    if (config.autoSweep.size === 0) return
    yield* Effect.logInfo(
      `automatic collection on: ${[...config.autoSweep].map(([asset, threshold]) => `${asset} from ${threshold}`).join(", ")}`
    )
    yield* Effect.forkScoped(
      Effect.repeat(
        collections.autoSweep().pipe(
          Effect.tap((n) => (n > 0 ? Effect.logInfo(`automatic collection: ${n} sweep(s) started`) : Effect.void)),
          Effect.catchAllCause((cause) => Effect.logWarning("automatic collection failed; trying again later", cause))
        ),
        Schedule.spaced(config.autoSweepInterval)
      )
    )
  })
).pipe(Layer.provide(Collections.Default))
