import { DateTime, Effect, Option } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { Accounts, Ledger, type LedgerTransfer } from "../src/ledger/ledger.js"
import { fromBaseUnits, toBaseUnits } from "../src/money.js"
import { CustodyStore, type OperationRow } from "../src/stores/custody-store.js"
import { MerchantStore } from "../src/stores/merchant-store.js"
import { withdrawalEventKey } from "../src/stores/webhook-store.js"
import { WithdrawalStore, type WithdrawalRow } from "../src/stores/withdrawal-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { WebhookOutbox } from "../src/webhooks/outbox.js"
import { CustodyBooks, isNative, RENT_UNKNOWN, rentOf } from "./custody-books.js"
import type { OperationDriver } from "./engine/operation-driver.js"
import { GasFunding } from "./gas-funding.js"
import { RefundEvents } from "./refund-events.js"
import { type SendOutcome, TransferSender } from "./transfer-sender.js"
import { assetDecimals, render, unlock } from "./withdrawal-view.js"

type Final = Extract<SendOutcome, { readonly _tag: "Final" }>

/**
 * What the main wallet's actor runs for a `withdrawal` operation — a single withdrawal, a batch's item or a
 * refund's payout alike: the chain balance checked before signing, gas funded for a token withdrawal, the
 * transfer of the net amount, then COMPLETED (locked → chain for the net amount, → fees for the platform
 * fee) or FAILED (unlocked), each with its webhook (and its refund's end), in one transaction.
 */
export class WithdrawalDriver extends Effect.Service<WithdrawalDriver>()("facet/WithdrawalDriver", {
  effect: Effect.gen(function* () {
    const catalog = yield* AssetCatalog
    const clients = yield* ChainClients
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const outbox = yield* WebhookOutbox
    const store = yield* CustodyStore
    const sender = yield* TransferSender
    const books = yield* CustodyBooks
    const gasFunding = yield* GasFunding
    const withdrawalStore = yield* WithdrawalStore
    const merchants = yield* MerchantStore
    const refundEvents = yield* RefundEvents
    const { find } = withdrawalStore

    /** The terminal webhook, in the caller's transaction: `{event}:{withdrawal_id}:{tx_hash}` (empty hash before broadcast). */
    const announce = (id: string, event: "wallet.withdrawal.completed" | "wallet.withdrawal.failed") =>
      Effect.gen(function* () {
        const row = yield* find({ id })
        if (Option.isNone(row)) return
        const webhookUrl = yield* merchants.webhookUrl(row.value.merchant_id)
        const withdrawal = render(row.value)
        yield* outbox.enqueue({
          merchantId: row.value.merchant_id,
          event,
          idempotencyKey: withdrawalEventKey(event, id, row.value.tx_hash),
          destination: Option.getOrNull(webhookUrl),
          body: { event, withdrawal, created_at: DateTime.formatIso(yield* DateTime.now) }
        })
      })

    /** FAILED: what was burned came out of the locked coins (natives) or the platform's gas; the rest goes back. */
    const fail = (operation: OperationRow, withdrawal: WithdrawalRow, gross: bigint, reason: string, burned: bigint) =>
      books.failed(
        operation,
        { reason, burned },
        Effect.gen(function* () {
          const spent = withdrawal.network_fee_included ? burned : 0n
          yield* ledger.post([unlock(withdrawal, gross - spent, "withdrawal_failed")])
          yield* withdrawalStore.markFailed(withdrawal.id, reason)
          yield* announce(withdrawal.id, "wallet.withdrawal.failed")
          if (withdrawal.refund_id !== null) yield* refundEvents.withdrawalEnded(withdrawal.id, "FAILED", reason)
        })
      )

    /** Before anything is signed: a shortfall on chain, in words (it fails clearly instead of a doomed transaction). */
    const shortfall = (operation: OperationRow, withdrawal: WithdrawalRow, decimals: number) =>
      Effect.gen(function* () {
        if ((yield* store.attempts(operation.id)).length > 0) return undefined
        const client = yield* Option.match(clients.get(operation.chain), {
          onNone: () => Effect.dieMessage(`no ${operation.chain} client`),
          onSome: Effect.succeed
        })
        const onChain = yield* client
          .balance(operation.from_address, operation.currency)
          .pipe(Effect.retry({ times: 5 }), Effect.option)
        return Option.isSome(onChain) && onChain.value < operation.amount
          ? `the main wallet holds ${fromBaseUnits(onChain.value, decimals)} ${operation.currency} on chain, less than the ${withdrawal.net_amount} to send`
          : undefined
      })

    /** The ledger transfers of a final withdrawal, or undefined while a Solana rent is still unknown. */
    const completion = (
      operation: OperationRow,
      withdrawal: WithdrawalRow,
      amounts: { readonly gross: bigint; readonly platformFee: bigint },
      outcome: Final
    ): ReadonlyArray<LedgerTransfer> | undefined => {
      const transfers: Array<LedgerTransfer> = [
        {
          debit: Accounts.locked(withdrawal.merchant_id),
          credit: Accounts.chain,
          chain: withdrawal.chain,
          currency: withdrawal.currency,
          amount: outcome.amount,
          kind: "withdrawal",
          reference: withdrawal.id
        },
        {
          debit: Accounts.locked(withdrawal.merchant_id),
          credit: Accounts.fees,
          chain: withdrawal.chain,
          currency: withdrawal.currency,
          amount: amounts.platformFee,
          kind: "platform_fee",
          reference: withdrawal.id
        },
        books.networkFee(operation, outcome.fee)
      ]
      // what stays locked (a native withdrawal's quoted network fee that was not burned) goes back to the merchant
      const remainder =
        amounts.gross - outcome.amount - amounts.platformFee - (withdrawal.network_fee_included ? outcome.fee : 0n)
      if (remainder > 0n) transfers.push(unlock(withdrawal, remainder, "network_fee_refund"))
      if (operation.chain !== "SOLANA" || isNative(operation)) return transfers
      // the gas wallet paid the recipient's token account's rent, if this transfer is the one that made it
      const rent = rentOf(operation, outcome)
      return rent === undefined ? undefined : [...transfers, ...rent]
    }

    const drive = (operation: OperationRow) =>
      Effect.gen(function* () {
        const row = yield* find({ id: operation.withdrawal_id ?? "" })
        if (Option.isNone(row)) return yield* store.fail(operation.id, "its withdrawal is gone")
        const withdrawal = row.value
        const decimals = yield* assetDecimals(catalog, withdrawal)
        const gross = toBaseUnits(withdrawal.amount, decimals)
        const platformFee = toBaseUnits(withdrawal.platform_fee, decimals)
        const fails = (reason: string, burned: bigint) => fail(operation, withdrawal, gross, reason, burned)
        const short = yield* shortfall(operation, withdrawal, decimals)
        if (short !== undefined) return yield* fails(short, 0n)
        if (operation.status === "GAS_FUNDING") {
          const gas = yield* gasFunding
            .ensure(operation)
            .pipe(Effect.retry({ while: (e) => e._tag === "ChainRpcError", times: 20 }))
          if (gas === "pending") return yield* store.waitingFor(operation.id, "the gas funding, resumed later")
          if (gas !== "ready") return yield* fails(gas.failed, 0n)
          yield* store.setStatus(operation.id, "SWEEPING", "the withdrawal to be signed")
        }
        const main = yield* Effect.orDie(wallets.byId(operation.wallet_id))
        if (main === undefined) return yield* fails("the main wallet is gone", 0n)
        const gasWallet = operation.chain === "SOLANA" ? yield* Effect.orDie(wallets.gasWallet("SOLANA")) : undefined
        const outcome = yield* sender.send(operation, {
          from: main.key,
          to: operation.to_address,
          currency: operation.currency,
          amount: operation.amount,
          decimals,
          walletId: operation.wallet_id,
          ...(gasWallet === undefined ? {} : { feePayer: gasWallet.key }),
          // a native withdrawal pays its network fee from its own amount: never more than it was quoted
          ...(withdrawal.network_fee_included
            ? { maxFee: toBaseUnits(withdrawal.network_fee, NATIVE_ASSETS[withdrawal.chain].decimals) }
            : {})
        })
        if (outcome._tag === "Failed") return yield* fails(outcome.reason, outcome.burned)
        const transfers = completion(operation, withdrawal, { gross, platformFee }, outcome)
        if (transfers === undefined) return yield* store.waitingFor(operation.id, RENT_UNKNOWN)
        yield* books.finish(
          operation,
          outcome,
          transfers,
          Effect.gen(function* () {
            yield* withdrawalStore.markCompleted(withdrawal.id, outcome.txHash)
            yield* announce(withdrawal.id, "wallet.withdrawal.completed")
            if (withdrawal.refund_id !== null) yield* refundEvents.withdrawalEnded(withdrawal.id, "COMPLETED", null)
          })
        )
      })

    const driver: OperationDriver = { kinds: ["withdrawal"], drive }
    return driver
  }),
  dependencies: [
    AssetCatalog.Default,
    MerchantStore.Default,
    CustodyStore.Default,
    WithdrawalStore.Default,
    Ledger.Default,
    Wallets.Default,
    CustodyBooks.Default,
    WebhookOutbox.Default,
    TransferSender.Default,
    GasFunding.Default,
    RefundEvents.Default
  ]
}) {}
