import { Effect, Option } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { newId } from "../src/ids.js"
import { Accounts, Ledger } from "../src/ledger/ledger.js"
import { fromBaseUnits } from "../src/money.js"
import { CustodyStore, type OperationRow } from "../src/stores/custody-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { CustodyBooks } from "./custody-books.js"
import { CustodyConfig, withGasMargin } from "./custody-config.js"
import { isFinished } from "./custody-operation.js"
import type { OperationDriver } from "./engine/operation-driver.js"
import { Operations } from "./engine/operations.js"
import { EnergySource } from "./energy.js"
import { type SendOutcome, type TransferLeg, TransferSender } from "./transfer-sender.js"
import { transferFee, usesEnergy } from "./transfer-costs.js"

/** How often a wallet waiting for its gas funding hands it to the gas wallet's actor again: in looks that found it in no block. */
const OWNER_EVERY_LOOKS = 4

/**
 * Gas funding: the platform gas wallet pays a sending wallet's gas (a receive wallet's token sweep, a main
 * wallet's token withdrawal) before its transfer, as a `gas_funding` operation of the gas wallet. `ensure`
 * is what the sending wallet's actor runs first; `driver` is what the gas wallet's actor runs.
 */
export class GasFunding extends Effect.Service<GasFunding>()("facet/GasFunding", {
  effect: Effect.gen(function* () {
    const store = yield* CustodyStore
    const sender = yield* TransferSender
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const clients = yield* ChainClients
    const config = yield* CustodyConfig
    const books = yield* CustodyBooks
    const energy = yield* EnergySource
    const operations = yield* Operations

    /** The funding's transfer: the gas wallet → the wallet it funds; none when the gas wallet is gone. */
    const legOf = (operation: OperationRow) =>
      Effect.map(Effect.orDie(wallets.byId(operation.wallet_id)), (gas) =>
        gas === undefined
          ? Option.none<TransferLeg>()
          : Option.some<TransferLeg>({
              from: gas.key,
              to: operation.to_address,
              currency: operation.currency,
              amount: operation.amount,
              decimals: NATIVE_ASSETS[operation.chain].decimals,
              walletId: operation.to_wallet_id
            })
      )

    /**
     * A gas funding's end in the books, by whichever actor saw it first: platform gas wallet → receive wallet;
     * final → ledger `gas` → `gas:<wallet>`, its fee `gas` → chain.
     */
    const book = (operation: OperationRow, outcome: SendOutcome) =>
      outcome._tag === "Failed"
        ? books.failed(operation, outcome)
        : books.finish(operation, outcome, [
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

    /**
     * A gas funding waited for by the wallet it funds. The gas wallet's actor is its one broadcaster: handed it
     * first, and again while its transfer stays out of every block looked at (every few looks: to send it
     * again, replace it, or judge it from final state) — each a message of its own, queued behind that actor's
     * other fundings, so not while a block holds it and only finality is waited for. This actor only looks,
     * and books it once final state shows it. Returns when it is finished, or when nothing of it is out even
     * after its actor had it (resumed later).
     */
    const awaitFunding = (funding: OperationRow) =>
      Effect.gen(function* () {
        const toOwner = operations.handOverAndWait(funding.id, funding.wallet_id, "again")
        yield* operations.handOverAndWait(funding.id, funding.wallet_id, "first")
        const leg = yield* legOf(funding)
        // the gas wallet's actor fails it (the gas wallet is gone): the resume pass finds it finished
        if (Option.isNone(leg)) return
        // looks that found it in no block: the owner may have to send it again, replace it or judge it
        for (let outOfBlocks = 0; ; ) {
          const current = yield* store.operation(funding.id)
          if (Option.isNone(current) || isFinished(current.value.status)) return
          const live = yield* store.liveAttempt(funding.id)
          if (Option.isNone(live)) {
            // proven dead, or never signed: its actor signs it (again)
            yield* toOwner
            if (Option.isNone(yield* store.liveAttempt(funding.id))) return
          }
          const looked = yield* sender.look(current.value, leg.value)
          if (Option.isSome(looked.outcome)) return yield* book(current.value, looked.outcome.value)
          if (!looked.inBlock && ++outOfBlocks % OWNER_EVERY_LOOKS === 0) yield* toOwner
          yield* Effect.sleep(config.pollInterval)
        }
      })

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
        const fullFee = transferFee(clients, {
          chain: operation.chain,
          currency: operation.currency,
          from: operation.from_address,
          to: operation.to_address,
          amount: operation.amount
        })
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
          const amount = withGasMargin(config, need.fee) - parked > 0n ? withGasMargin(config, need.fee) - parked : 1n
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

    /**
     * The gas wallet's actor: it signs and sends the funding and goes on to the next (its fundings are in
     * flight together; EVM: at consecutive nonces).
     */
    const driver: OperationDriver = {
      kinds: ["gas_funding"],
      drive: (operation) =>
        Effect.gen(function* () {
          const leg = yield* legOf(operation)
          if (Option.isNone(leg)) return yield* store.fail(operation.id, "the gas wallet is gone")
          const finished = yield* sender.sendOut(operation, leg.value)
          if (Option.isSome(finished)) yield* book(operation, finished.value)
        })
    }

    return { ensure: ensureGas, driver } as const
  }),
  dependencies: [
    CustodyStore.Default,
    Wallets.Default,
    Ledger.Default,
    TransferSender.Default,
    CustodyBooks.Default,
    EnergySource.Default,
    Operations.Default
  ]
}) {}
