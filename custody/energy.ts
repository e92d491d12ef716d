import { SqlClient } from "@effect/sql"
import { randomBytes } from "node:crypto"
import { Effect, Option } from "effect"
import type { ChainAction, EnergyResources } from "../src/chains/chain-client.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { newId } from "../src/ids.js"
import { tronAddress } from "../src/keys/address-encoding.js"
import { fromBaseUnits } from "../src/money.js"
import { CustodyStore, type EnergyPath, type OperationRow } from "../src/stores/custody-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { CustodyBooks, isStakeOperation, STAKE_OPERATIONS, type StakeOperation } from "./custody-books.js"
import { CustodyConfig, withGasMargin } from "./custody-config.js"
import { isFinished } from "./custody-operation.js"
import type { OperationDriver } from "./engine/operation-driver.js"
import { TransferSender } from "./transfer-sender.js"

const TRX = NATIVE_ASSETS.TRC20

/** A taking back the node refused is stored again after this long. */
export const RECLAIM_RETRY_MS = 10 * 60_000

/** What each of the stake's operations signs. */
const ACTIONS = {
  energy_delegation: "DelegateEnergy",
  energy_reclaim: "ReclaimEnergy",
  energy_stake: "StakeEnergy",
  energy_unstake: "UnstakeEnergy",
  bandwidth_stake: "StakeBandwidth",
  bandwidth_unstake: "UnstakeBandwidth"
} as const satisfies Record<StakeOperation, ChainAction["_tag"]>

/**
 * How a TRC20 transfer's energy would be paid for now, and what the platform burns on that path (in sun):
 * - `delegated`: `stake` sun of the platform's stake lend the sender `energy`: only bandwidth and activation;
 * - `burned`: TRX burned for the energy, `reason` says why none could be had.
 * `activation`: the sender was never activated, and the fee counts the chain's account-creation fee. Energy
 * the sender already has is not counted on: it may be a lending about to be taken back.
 */
export type EnergyPlan =
  | {
      readonly path: "delegated"
      readonly energy: bigint
      readonly stake: bigint
      /** Sun of stake the chain said could be lent, and when it was read. */
      readonly lendable: bigint
      readonly readAt: Date
      readonly activation: boolean
      readonly fee: bigint
    }
  | { readonly path: "burned"; readonly reason: string }

/** What the platform's stake is and does, for operators (`npm run custody -- energy status`, /health, /metrics). */
export interface EnergyStatus {
  readonly address: string
  /** In sun: frozen for energy, lent by the chain's figures, lendable now, liquid TRX, unfreezing. */
  readonly staked: bigint
  readonly lentOnChain: bigint
  readonly lendable: bigint
  readonly balance: bigint
  readonly unfreezing: ReadonlyArray<{ readonly amount: bigint; readonly availableAt: number }>
  /** The staking account's energy per day and what it has used (lent energy is the borrower's). */
  readonly energyLimit: bigint
  readonly energyUsed: bigint
  /** Sun frozen for the staking account's own bandwidth, and its bandwidth bytes per day (free and staked) and used. */
  readonly bandwidthStaked: bigint
  readonly bandwidthLimit: bigint
  readonly bandwidthUsed: bigint
  /** What custody has lent and not yet taken back (sun, lendings), and lendings still being signed or sent. */
  readonly lentByCustody: bigint
  readonly lendings: number
  readonly lendingInFlight: bigint
  /** Sun custody's TRON transactions burned (energy and bandwidth not paid with a stake). */
  readonly trxBurned: bigint
}

/**
 * Energy for custody's TRC20 transfers: from the platform's own stake first — lent to the sending address
 * for one transfer and taken back once it is final — and TRX burned only when none can be had. The
 * lending (`energy_delegation`) and the taking back (`energy_reclaim`) are custody operations like any
 * other (signed bytes stored before broadcast, driven from durable state), run by the actor of the wallet
 * whose transfer they serve: TRON has no nonce, so lendings to many wallets at once do not race, and the
 * stake they draw on is counted in the database under one lock. An energy rental market would be another
 * source behind `plan` and `reserve`.
 */
export class EnergySource extends Effect.Service<EnergySource>()("facet/EnergySource", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* CustodyStore
    const books = yield* CustodyBooks
    const sender = yield* TransferSender
    const wallets = yield* Wallets
    const clients = yield* ChainClients
    const config = yield* CustodyConfig

    const resources: Effect.Effect<EnergyResources> = Option.match(
      Option.flatMap(clients.get("TRC20"), (c) => Option.fromNullable(c.energy)),
      {
        onNone: () => Effect.dieMessage("no TRON client with Stake 2.0 reads"),
        onSome: Effect.succeed
      }
    )

    const staking = Effect.orDie(wallets.stakingWallet(config.energy.stakingIndex))

    const toLend = (needed: bigint) => withGasMargin(config, needed)

    /**
     * What a sender paid for with lent energy must still hold, in sun: bandwidth when its free bytes of the
     * day do not cover the transfer; and whether it must be activated first (custody never funded it and the
     * chain does not know it — a node's "no such account" alone is never taken for it when custody did).
     */
    const senderNeeds = Effect.fn("EnergySource.senderNeeds")(function* (address: string, walletId: string) {
      const chain = yield* resources
      const [account, prices, funded] = yield* Effect.all([
        chain.account(address),
        chain.prices,
        store.everFunded(walletId)
      ])
      const activate = !account.activated && !funded
      // a never-activated address has its day's free bandwidth whole once it exists
      const bandwidth =
        activate || account.bandwidthLimit - account.bandwidthUsed >= prices.transferBytes
          ? 0n
          : prices.transferBytes * prices.bandwidthByte
      if (!activate) return { fee: bandwidth, activate, creation: 0n }
      // the gas wallet creates it: the chain's fee, and its bandwidth unless the gas wallet's stake covers it
      const gas = yield* chain.account((yield* Effect.orDie(wallets.gasWallet("TRC20"))).address)
      const creation =
        prices.newAccount + (gas.stakedBandwidthLeft >= prices.transferBytes ? 0n : prices.newAccountBandwidth)
      return { fee: bandwidth, activate, creation }
    })

    /**
     * The path a TRC20 transfer of `amount` from `from` to `to` would take now, from the chain's figures
     * (nothing reserved: `reserve` decides for an operation, under the stake's lock).
     */
    const plan = Effect.fn("EnergySource.plan")(function* (request: {
      readonly from: string
      readonly to: string
      readonly currency: string
      readonly amount: bigint
      /** The wallet that sends (whether custody funded it before). */
      readonly walletId: string
      /**
       * The recipient may hold none of the token by the time the transfer is signed (an external address
       * may empty itself; a quote may have no recipient yet): planned for a new holder at least.
       */
      readonly recipientMayChange?: boolean
    }) {
      if (!config.energy.enabled)
        return { path: "burned", reason: "energy from the stake is off (FACET_TRON_ENERGY)" } satisfies EnergyPlan
      const chain = yield* resources
      const [sender, estimated, toNewHolder] = yield* Effect.all([
        senderNeeds(request.from, request.walletId),
        chain.transferEnergy(request),
        request.recipientMayChange === true
          ? chain.transferEnergy({ ...request, to: tronAddress(randomBytes(20)) })
          : Effect.succeed(0n)
      ])
      const needed = estimated > toNewHolder ? estimated : toNewHolder
      const activation = sender.activate
      const fee = sender.fee + sender.creation
      const owner = (yield* staking).address
      const energy = toLend(needed)
      // a second early, against the two clocks: a lending final just before the read is counted twice, never none
      const readAt = new Date(Date.now() - 1000)
      const [stake, lendable, inFlight] = yield* Effect.all([
        chain.stakeFor(owner, energy),
        chain.lendable(owner),
        Effect.orDie(store.lendingInFlight)
      ])
      if (lendable - inFlight < stake) {
        return {
          path: "burned",
          reason: `the stake can lend ${fromBaseUnits(lendable - inFlight > 0n ? lendable - inFlight : 0n, TRX.decimals)} TRX of its energy now, less than the ${fromBaseUnits(stake, TRX.decimals)} TRX this transfer's ${energy} energy needs`
        } satisfies EnergyPlan
      }
      return { path: "delegated", energy, stake, lendable, readAt, activation, fee } satisfies EnergyPlan
    })

    /**
     * Decides, once, how the operation's energy is paid for, and reserves the stake when it is lent: the
     * lending is stored with the operation pointing at it, in one transaction under the stake's lock that
     * counts every lending decided before it. Run again, it returns what was decided.
     */
    const reserve = Effect.fn("EnergySource.reserve")(function* (operation: OperationRow) {
      if (operation.energy_path === "burned" || operation.energy_id !== null)
        return operation.energy_path ?? "delegated"
      const planned = yield* plan({
        from: operation.from_address,
        to: operation.to_address,
        currency: operation.currency,
        amount: operation.amount,
        walletId: operation.wallet_id,
        recipientMayChange: operation.type === "withdrawal"
      })
      const owner = yield* staking
      const decided = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const locked = yield* store.lockOperation(operation.id)
            if (locked.energy_path === "burned" || locked.energy_id !== null) return locked.energy_path ?? "delegated"
            if (planned.path === "burned") {
              yield* store.setEnergyPath(operation.id, "burned", planned.reason)
              return "burned" as const
            }
            yield* store.lockStake
            // every lending the chain's figure may not show counts: those not final yet, and those final
            // since it was read (decided one at a time under the lock, none is counted by none)
            const inFlight = (yield* store.lendingInFlight) + (yield* store.lendingFinalSince(planned.readAt))
            if (planned.lendable - inFlight < planned.stake) {
              yield* store.setEnergyPath(
                operation.id,
                "burned",
                `the stake's lendable energy went to transfers decided just before this one`
              )
              return "burned" as const
            }
            yield* store.insertLending({
              id: newId("op"),
              type: "energy_delegation",
              status: "SWEEPING",
              merchant_id: operation.merchant_id,
              chain: "TRC20",
              currency: TRX.currency,
              wallet_id: operation.wallet_id,
              from_address: owner.address,
              to_wallet_id: operation.wallet_id,
              to_address: operation.from_address,
              amount: planned.stake.toString(),
              parent_id: operation.id,
              waiting_for: "the wallet's actor"
            })
            return "delegated" as const
          })
        )
        .pipe(Effect.orDie)
      yield* Effect.logInfo(
        decided === "delegated" && planned.path === "delegated"
          ? `custody ${operation.id}: ${planned.energy} energy lent from ${fromBaseUnits(planned.stake, TRX.decimals)} TRX of stake`
          : `custody ${operation.id}: TRX burned for its energy${planned.path === "burned" ? ` (${planned.reason})` : ""}`
      )
      return decided satisfies EnergyPath
    })

    /**
     * What keeps an operation of the stake from being signed now, in words; none when it may be. A lending
     * driven by a hand-over (not by its transfer) waits for its transfer, which activates the address first;
     * a taking back waits while another transfer borrows at the same address (java-tron would move part of
     * that transfer's use back with it: it could run out of energy mid-flight).
     */
    const notYet = (operation: OperationRow & { readonly type: StakeOperation }, alone: boolean) =>
      Effect.gen(function* () {
        if (operation.type === "energy_delegation" && alone)
          return Option.some("its transfer, which lends it once the address can borrow")
        if (operation.type !== "energy_reclaim") return Option.none<string>()
        const inUse = yield* store.lendingInUse(operation.to_address, operation.parent_id ?? "")
        return Option.map(
          inUse,
          (other) => `the transfer borrowing at this address (lending ${other.id}) to finish first`
        )
      })

    /**
     * A taking back after one the node refused: when the chain's final state shows nothing lent to the
     * address, the lending is over without a transaction (taken back by hand, or by an earlier one). A node
     * that does not answer proves nothing: it is sent as usual.
     */
    const nothingLeftLent = (operation: OperationRow) =>
      Effect.gen(function* () {
        if (operation.type !== "energy_reclaim" || operation.parent_id === null) return false
        if ((yield* store.refusedReclaims(operation.parent_id)) === 0) return false
        const chain = yield* resources
        const lent = yield* chain.lentTo(operation.from_address, operation.to_address).pipe(Effect.option)
        return Option.contains(lent, 0n)
      })

    /**
     * A lending, its taking back, a stake or unstake: the staking wallet signs; the fee (bandwidth) is the
     * platform's gas. One already signed is followed to its end whatever the configuration says now (a new
     * staking wallet never signs for an old one's operation).
     */
    const driveStakeAction = (operation: OperationRow & { readonly type: StakeOperation }, alone: boolean) =>
      Effect.gen(function* () {
        const owner = yield* staking
        const started = (yield* store.attempts(operation.id)).length > 0
        const sameOwner = owner.address === operation.from_address
        const changed = `the staking wallet is now ${owner.address}, not ${operation.from_address} (FACET_TRON_STAKING_INDEX changed)`
        if (!started) {
          if (!sameOwner) return yield* books.failed(operation, { reason: changed, burned: 0n })
          if (operation.type === "energy_delegation") {
            // its transfer is over (failed before it): lending now would only cost bandwidth
            const parent = operation.parent_id === null ? Option.none() : yield* store.operation(operation.parent_id)
            if (Option.isSome(parent) && isFinished(parent.value.status))
              return yield* books.failed(operation, {
                reason: "its transfer finished before energy was lent",
                burned: 0n
              })
          }
          const waiting = yield* notYet(operation, alone)
          if (Option.isSome(waiting)) return yield* store.waitingFor(operation.id, waiting.value)
          if (yield* nothingLeftLent(operation)) {
            yield* sql
              .withTransaction(
                Effect.zipRight(store.complete(operation.id), store.markTakenBack(operation.parent_id ?? ""))
              )
              .pipe(Effect.orDie)
            return yield* Effect.logInfo(
              `custody ${operation.id}: nothing of lending ${operation.parent_id} is lent to ${operation.to_address} any more (the chain's final state): over without a transaction`
            )
          }
        }
        const leg = {
          from: owner.key,
          to: operation.to_address,
          currency: TRX.currency,
          amount: operation.amount,
          decimals: TRX.decimals,
          walletId: operation.wallet_id,
          action: { _tag: ACTIONS[operation.type] }
        }
        const finished = sameOwner
          ? Option.some(yield* sender.send(operation, leg))
          : yield* sender.follow(operation, leg)
        // signed by the old staking wallet and proven dead: nothing landed, and nothing is signed again
        if (Option.isNone(finished)) return yield* books.failed(operation, { reason: changed, burned: 0n })
        const outcome = finished.value
        if (outcome._tag === "Failed") {
          if (operation.type === "energy_reclaim")
            yield* Effect.logError(
              `custody ${operation.id}: taking back ${fromBaseUnits(operation.amount, TRX.decimals)} TRX of energy lent to ${operation.to_address} failed (${outcome.reason}): it stays lent, tried again in ${RECLAIM_RETRY_MS / 60_000} minutes`
            )
          return yield* books.failed(operation, outcome)
        }
        yield* books.finish(
          operation,
          outcome,
          [books.networkFee(operation, outcome.fee)],
          operation.type === "energy_reclaim" && operation.parent_id !== null
            ? store.markTakenBack(operation.parent_id)
            : Effect.void
        )
      })

    /**
     * What an actor runs for an energy operation: safe to run again at any point. `by its transfer`: the
     * transfer the lending is for drives it inline, once the address can borrow; otherwise it was handed over.
     */
    const drive = Effect.fn("EnergySource.drive")(function* (
      operationId: string,
      by: "handed over" | "by its transfer" = "handed over"
    ) {
      const found = yield* store.operation(operationId)
      if (Option.isNone(found) || isFinished(found.value.status) || !isStakeOperation(found.value)) return
      // a node that does not answer is waited for inside the sender (and proves nothing to nothingLeftLent)
      yield* driveStakeAction(found.value, by === "handed over")
    })

    /**
     * Lendings whose transfer is over are taken back: the takings-back stored now (the resume pass runs
     * them); one the node refused is tried again ten minutes later.
     */
    const reclaimDue = Effect.fn("EnergySource.reclaimDue")(function* () {
      return (yield* store.insertDueReclaims(RECLAIM_RETRY_MS)).length
    })

    /**
     * An operator's stake or unstake of `amount` sun, for energy (what custody lends) or for the staking
     * wallet's own bandwidth (its lendings, the gas wallet's fundings and activations), stored for the
     * staking wallet's actor (the running service's resume pass hands it over within seconds).
     */
    const requestStake = Effect.fn("EnergySource.requestStake")(function* (
      kind: "energy_stake" | "energy_unstake" | "bandwidth_stake" | "bandwidth_unstake",
      amount: bigint
    ) {
      const owner = yield* staking
      const id = newId("op")
      yield* Effect.orDie(
        store.insertOperation({
          id,
          type: kind,
          status: "SWEEPING",
          merchant_id: null,
          chain: "TRC20",
          currency: TRX.currency,
          wallet_id: owner.id,
          from_address: owner.address,
          to_wallet_id: owner.id,
          to_address: owner.address,
          amount: amount.toString(),
          waiting_for: "the staking wallet's actor (the running service hands it over)"
        })
      )
      return id
    })

    const status = Effect.fn("EnergySource.status")(function* () {
      const chain = yield* resources
      const owner = yield* staking
      const [stake, lendable, account, lent, inFlight, burned] = yield* Effect.all([
        chain.stake(owner.address),
        chain.lendable(owner.address),
        chain.account(owner.address),
        store.lentOut(),
        Effect.orDie(store.lendingInFlight),
        store.tronBurned
      ])
      return {
        address: owner.address,
        staked: stake.staked,
        lentOnChain: stake.lent,
        lendable,
        balance: stake.balance,
        unfreezing: stake.unfreezing,
        energyLimit: account.energyLimit,
        energyUsed: account.energyUsed,
        bandwidthStaked: stake.bandwidthStaked,
        bandwidthLimit: account.bandwidthLimit,
        bandwidthUsed: account.bandwidthUsed,
        lentByCustody: lent.total,
        lendings: lent.n,
        lendingInFlight: inFlight,
        trxBurned: burned
      } satisfies EnergyStatus
    })

    /**
     * The staking wallet's and the borrowing wallets' actors: stakes, unstakes, lendings and takings-back;
     * the takings-back of lendings whose transfer is over are stored before each resume pass.
     */
    const driver: OperationDriver = {
      kinds: STAKE_OPERATIONS,
      drive: (operation) => (isStakeOperation(operation) ? driveStakeAction(operation, true) : Effect.void),
      storeDue: Effect.tap(reclaimDue(), (n) =>
        n > 0 ? Effect.logInfo(`custody: taking back the energy lent for ${n} finished transfer(s)`) : Effect.void
      )
    }

    return { plan, reserve, senderNeeds, drive, requestStake, status, staking, driver } as const
  }),
  dependencies: [CustodyStore.Default, CustodyBooks.Default, TransferSender.Default, Wallets.Default]
}) {}
