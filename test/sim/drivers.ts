import { Effect, Option } from "effect"
import { CustodyBooks } from "../../custody/custody-books.js"
import { CustodyConfig, withGasMargin } from "../../custody/custody-config.js"
import { isFinished } from "../../custody/custody-operation.js"
import { SendPacer } from "../../custody/send-pacer.js"
import { type SendOutcome, type TransferLeg, TransferSender } from "../../custody/transfer-sender.js"
import { ChainClients } from "../../src/chains/chain-clients.js"
import { Accounts, Ledger, type LedgerTransfer } from "../../src/ledger/ledger.js"
import { CustodyStore, type OperationRow } from "../../src/stores/custody-store.js"
import type { PlannedOperation } from "./workload.js"

type Final = Extract<SendOutcome, { readonly _tag: "Final" }>

/**
 * What each wallet's actor runs for an operation, as the real services do (custody/collections.ts,
 * custody/withdrawals.ts, custody/energy.ts) with the real TransferSender and CustodyBooks: a withdrawal
 * sent to final and booked (or failed and unlocked); a gas funding signed and sent by the gas wallet's
 * actor (`sendOut`) and followed to final by the funded wallet's (`watch`); a sweep after its funding and
 * energy lending; a native consolidation keeping back its own fee. Safe to run again at any point.
 */
export const makeDrivers = (
  plans: ReadonlyMap<string, PlannedOperation>,
  /** Hands an operation to its wallet's actor (its mailbox), as the engine's hand-over does. */
  handOver: (walletId: string, operationId: string) => Effect.Effect<void>
) =>
  Effect.gen(function* () {
    const sender = yield* TransferSender
    const store = yield* CustodyStore
    const books = yield* CustodyBooks
    const ledger = yield* Ledger
    const clients = yield* ChainClients
    const pacer = yield* SendPacer
    const config = yield* CustodyConfig

    const planOf = (operation: OperationRow) => {
      const plan = plans.get(operation.id)
      return plan === undefined ? Effect.dieMessage(`no plan for ${operation.id}`) : Effect.succeed(plan)
    }
    const isNative = (operation: OperationRow) => operation.currency !== "USDT"
    const unlock = (operation: OperationRow, amount: bigint, kind: string): LedgerTransfer => ({
      debit: Accounts.locked(operation.merchant_id ?? ""),
      credit: Accounts.available(operation.merchant_id ?? ""),
      chain: operation.chain,
      currency: operation.currency,
      amount,
      kind,
      reference: operation.id
    })

    const withdrawal = (operation: OperationRow, plan: PlannedOperation) =>
      Effect.gen(function* () {
        const outcome = yield* sender.send(operation, plan.leg)
        const native = plan.leg.maxFee !== undefined
        if (outcome._tag === "Failed") {
          const back = plan.gross - (native ? outcome.burned : 0n)
          return yield* books.failed(operation, outcome, ledger.post([unlock(operation, back, "withdrawal_failed")]))
        }
        const remainder = plan.gross - outcome.amount - (native ? outcome.fee : 0n)
        yield* books.finish(operation, outcome, [
          moved(operation, Accounts.locked(operation.merchant_id ?? ""), Accounts.chain, outcome, "withdrawal"),
          books.networkFee(operation, outcome.fee),
          unlock(operation, remainder, "network_fee_refund")
        ])
      })

    const moved = (
      operation: OperationRow,
      debit: LedgerTransfer["debit"],
      credit: LedgerTransfer["credit"],
      outcome: Final,
      kind: string
    ): LedgerTransfer => ({
      debit,
      credit,
      chain: operation.chain,
      currency: operation.currency,
      amount: outcome.amount,
      kind,
      reference: operation.id
    })

    /** A gas funding's end in the books (whoever drove it there). */
    const bookFunding = (operation: OperationRow, outcome: SendOutcome) =>
      outcome._tag === "Failed"
        ? books.failed(operation, outcome)
        : books.finish(operation, outcome, [
            moved(operation, Accounts.gas, Accounts.gasAt(operation.to_wallet_id), outcome, "gas_funding"),
            books.networkFee(operation, outcome.fee)
          ])

    /** The gas wallet's actor's turn at a funding: signed and sent, booked when it was final already. */
    const funding = (operation: OperationRow, plan: PlannedOperation) =>
      Effect.gen(function* () {
        const finished = yield* sender.sendOut(operation, plan.leg)
        if (Option.isSome(finished)) yield* bookFunding(operation, finished.value)
      })

    const lending = (operation: OperationRow, plan: PlannedOperation) =>
      Effect.gen(function* () {
        const outcome = yield* sender.send(operation, plan.leg)
        if (outcome._tag === "Failed") return yield* books.failed(operation, outcome)
        yield* books.finish(operation, outcome, [books.networkFee(operation, outcome.fee)])
      })

    /**
     * The funding of a sweep, followed here until final (the sweep's actor waits for it, as Collections'
     * ensureGas does): it looks at the funding while the gas wallet's actor sends it — the reader and the
     * owner of one transfer at the same moment, what defect 4 of issue 46 was about. False: it failed.
     */
    const gasReady = (operation: OperationRow) =>
      Effect.gen(function* () {
        const fundingId = operation.gas_funding_id
        if (fundingId === null) return true
        for (;;) {
          const found = Option.getOrUndefined(yield* store.operation(fundingId))
          if (found === undefined) return yield* Effect.dieMessage(`gas funding ${fundingId} vanished`)
          if (found.status === "FAILED") {
            yield* store.fail(operation.id, `gas funding failed: ${found.failure_reason ?? "no reason recorded"}`)
            return false
          }
          if (found.status === "COMPLETED") break
          // it only looks (GasFunding's awaitFunding): the gas wallet's actor is the funding's one broadcaster,
          // handed it again to take it further while no block holds it
          const looked = yield* sender.look(found, (yield* planOf(found)).leg)
          if (Option.isSome(looked.outcome)) {
            yield* bookFunding(found, looked.outcome.value)
            continue
          }
          if (!looked.inBlock) yield* handOver(found.wallet_id, found.id)
          yield* pacer.pause(operation.id)
        }
        yield* store.setStatus(operation.id, "SWEEPING", "the sweep to be signed")
        return true
      })

    /** The energy lent for a TRON sweep, sent inline by the sweep's actor before the sweep. */
    const energyReady = (operation: OperationRow) =>
      Effect.gen(function* () {
        if (operation.energy_id === null) return
        const found = Option.getOrUndefined(yield* store.operation(operation.energy_id))
        if (found !== undefined && !isFinished(found.status)) yield* lending(found, yield* planOf(found))
      })

    const collection = (given: OperationRow, plan: PlannedOperation) =>
      Effect.gen(function* () {
        if (given.status === "GAS_FUNDING" && !(yield* gasReady(given))) return
        const operation = Option.getOrElse(yield* store.operation(given.id), () => given)
        if (isFinished(operation.status)) return
        yield* energyReady(operation)
        const leg = isNative(operation) ? yield* keptBack(operation, plan.leg) : plan.leg
        if (leg.amount <= 0n) return yield* store.fail(operation.id, "the balance cannot pay its own network fee")
        const outcome = yield* sender.send(operation, leg)
        if (outcome._tag === "Failed") return yield* books.failed(operation, outcome)
        yield* books.finish(operation, outcome, [
          moved(
            operation,
            Accounts.uncollected(operation.merchant_id ?? "", operation.wallet_id),
            Accounts.available(operation.merchant_id ?? ""),
            outcome,
            "collection"
          ),
          books.networkFee(operation, outcome.fee)
        ])
      })

    /** A native sweep sends what is left after its own fee estimate with the margin (as Collections does). */
    const keptBack = (operation: OperationRow, leg: TransferLeg) =>
      Effect.gen(function* () {
        const client = Option.getOrUndefined(clients.get(operation.chain))
        if (client === undefined) return yield* Effect.dieMessage(`no ${operation.chain} client`)
        const fee = yield* client.feeEstimate({
          from: operation.from_address,
          to: operation.to_address,
          currency: operation.currency,
          amount: operation.amount,
          sponsored: false
        })
        return { ...leg, amount: operation.amount - withGasMargin(config, fee), paysOwnFee: true as const }
      })

    /** What a wallet's actor runs for one operation; a node error leaves it for the resume pass. */
    const drive = (operationId: string): Effect.Effect<void> =>
      Effect.gen(function* () {
        const found = yield* store.operation(operationId)
        if (Option.isNone(found) || isFinished(found.value.status)) return
        const operation = found.value
        const plan = yield* planOf(operation)
        if (operation.type === "withdrawal") return yield* withdrawal(operation, plan)
        if (operation.type === "gas_funding") return yield* funding(operation, plan)
        if (operation.type === "energy_delegation") return yield* lending(operation, plan)
        return yield* collection(operation, plan)
      }).pipe(
        Effect.asVoid,
        Effect.catchTag("ChainRpcError", () => pacer.pause(operationId))
      )

    return { drive } as const
  })
