import { Effect, Option, Schedule } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { newId } from "../src/ids.js"
import { Accounts, Ledger, type LedgerTransfer } from "../src/ledger/ledger.js"
import { CustodyStore, type OperationRow } from "../src/stores/custody-store.js"
import { OrderStore } from "../src/stores/order-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { CustodyBooks, isNative, RENT_UNKNOWN, rentOf } from "./custody-books.js"
import { CustodyConfig, withGasMargin } from "./custody-config.js"
import type { OperationDriver } from "./engine/operation-driver.js"
import { GasFunding } from "./gas-funding.js"
import { TransferSender } from "./transfer-sender.js"
import { gasShareRefusal, paysOwnFee, transferFee } from "./transfer-costs.js"

/** A node that does not answer is waited for: quickly at first, then every 15 s. */
const retrySchedule = Schedule.exponential("1 second").pipe(Schedule.union(Schedule.spaced("15 seconds")))

/**
 * What a receive wallet's actor runs for its sweeps (`collection`: gas first when a token sweep needs it,
 * then the sweep, then the ledger) and for closing its emptied Solana token account (`account_close`).
 */
export class SweepDriver extends Effect.Service<SweepDriver>()("facet/SweepDriver", {
  effect: Effect.gen(function* () {
    const store = yield* CustodyStore
    const sender = yield* TransferSender
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const clients = yield* ChainClients
    const catalog = yield* AssetCatalog
    const config = yield* CustodyConfig
    const walletStore = yield* WalletStore
    const orderStore = yield* OrderStore
    const books = yield* CustodyBooks
    const gasFunding = yield* GasFunding

    /** The merchant of a sweep (only the platform's stake operations have none). */
    const merchantOf = (operation: OperationRow) =>
      operation.merchant_id === null
        ? Effect.dieMessage(`custody ${operation.id} (${operation.type}) has no merchant`)
        : Effect.succeed(operation.merchant_id)

    /**
     * A token sweep's gas, funded first (gasFunding.ensure): whether the sweep may be signed now. No energy
     * after all burns TRX only within the gas-share rule the sweep was accepted under.
     */
    const gasFirst = (operation: OperationRow, decimals: number) =>
      Effect.gen(function* () {
        const refuseBurn = (fee: bigint, reason: string) =>
          gasShareRefusal(config, { ...operation, fee, decimals }, { path: "burned", reason })
        const gas = yield* gasFunding
          .ensure(operation, refuseBurn)
          .pipe(Effect.retry({ while: (e) => e._tag === "ChainRpcError", schedule: retrySchedule }))
        // the gas wallet's actor answered without finishing it (it died): the resume pass comes back here
        if (gas === "pending") {
          yield* store.waitingFor(operation.id, "the gas funding, resumed later")
          return false
        }
        if (gas !== "ready") {
          yield* store.fail(operation.id, gas.failed)
          return false
        }
        yield* store.setStatus(operation.id, "SWEEPING", "the sweep to be signed")
        return true
      })

    /** A collection: gas first when a token sweep needs it, then the sweep, then the ledger. */
    const driveCollection = (operation: OperationRow) =>
      Effect.gen(function* () {
        const merchantId = yield* merchantOf(operation)
        const policy = yield* catalog.policy(merchantId, operation.chain, operation.currency)
        if (Option.isNone(policy)) return yield* store.fail(operation.id, "the asset is no longer in the catalogue")
        const decimals = policy.value.decimals
        if (operation.status === "GAS_FUNDING" && !(yield* gasFirst(operation, decimals))) return
        const wallet = yield* wallets.byId(operation.wallet_id)
        if (wallet === undefined) return yield* store.fail(operation.id, "the receive wallet is gone")
        const gasWallet = operation.chain === "SOLANA" ? yield* wallets.gasWallet("SOLANA") : undefined
        // a native sweep keeps back its own fee (with the margin): what is left of it stays uncollected
        const amount = paysOwnFee(operation)
          ? operation.amount -
            withGasMargin(
              config,
              yield* transferFee(clients, {
                chain: operation.chain,
                currency: operation.currency,
                from: operation.from_address,
                to: operation.to_address,
                amount: operation.amount
              }).pipe(Effect.retry({ schedule: retrySchedule }))
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
          ...(gasWallet === undefined ? {} : { feePayer: gasWallet.key }),
          ...(paysOwnFee(operation) ? { paysOwnFee: true } : {})
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

    const driver: OperationDriver = {
      kinds: ["collection", "account_close"],
      drive: (operation) => (operation.type === "account_close" ? driveClose(operation) : driveCollection(operation))
    }
    return driver
  }),
  dependencies: [
    AssetCatalog.Default,
    OrderStore.Default,
    WalletStore.Default,
    CustodyStore.Default,
    Ledger.Default,
    Wallets.Default,
    TransferSender.Default,
    CustodyBooks.Default,
    GasFunding.Default
  ]
}) {}
