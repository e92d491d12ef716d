import { Duration, Effect, Either, Layer, Option } from "effect"
import { endpointsFor } from "../indexer/operator-runtime.js"
import { ChainRpcError } from "../src/chains/chain-client.js"
import { ChainClientsLive } from "../src/chains/chain-clients.js"
import type { AppConfigShape } from "../src/config.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { OperatorMasterSeedLive } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { fromBaseUnits } from "../src/money.js"
import { failed, refused } from "../src/operator/cli.js"
import { operatorDatabaseLive } from "../src/operator/operator-database.js"
import { CustodyStore, type OperationRow } from "../src/stores/custody-store.js"
import { CustodyConfigLive } from "./custody-config.js"
import { isFinished } from "./custody-operation.js"
import { EnergySource, type EnergyStatus } from "./energy.js"
import { energyReport } from "./energy-view.js"

/**
 * What `npm run custody -- energy …` does (the command line: energy-command.ts, which loads this module
 * only when a subcommand runs), and the services it runs on: the service's database, the chain clients and
 * the keys (the staking wallet is derived from the master seed).
 */

const TRX = NATIVE_ASSETS.TRC20
const trx = (sun: bigint) => fromBaseUnits(sun, TRX.decimals)

/** How long `stake`/`unstake` wait for the outcome: the resume pass hands it over within 2 s, then the chain. */
// mainnet: the hand-over (2 s), a block (3 s) and solidification (~19 blocks, ~57 s), with room for a busy wallet
const WAIT = Duration.minutes(5)
const POLL = Duration.seconds(1)
/** A node slower than this to tell the stake is taken for one that does not answer. */
const READ_TIMEOUT = Duration.seconds(20)

/** The database, the chain clients (on devnet those of the running service) and the keys, for `energy`. */
export const energyServicesLive = (config: AppConfigShape) =>
  EnergySource.Default.pipe(
    Layer.provideMerge(
      Layer.merge(ChainClientsLive.pipe(Layer.provide(endpointsFor(config.dataDir, config.network))), CustodyConfigLive)
    ),
    // the TRON client signs with it too
    Layer.provideMerge(LocalSignerLive.pipe(Layer.provide(OperatorMasterSeedLive))),
    Layer.provideMerge(operatorDatabaseLive(config))
  )

/** The stake as the chain and the books tell it; a node that does not answer is exit 1, saying so. */
const readStatus = Effect.flatMap(EnergySource, (energy) => energy.status()).pipe(
  Effect.timeoutFail({
    duration: READ_TIMEOUT,
    onTimeout: () => new ChainRpcError({ chain: "TRC20", message: `no answer within ${Duration.format(READ_TIMEOUT)}` })
  }),
  Effect.mapError((error) =>
    failed(
      `the TRON node did not answer (${error.message}): the stake cannot be read (on mainnet: FACET_TRON_API_URL; on devnet: is the service running?)`
    )
  )
)

export const printStatus = Effect.gen(function* () {
  console.log(JSON.stringify(energyReport(yield* readStatus), null, 2))
})

/** What an operator may ask of the stake: freeze or unfreeze, for energy (lent) or the wallet's own bandwidth. */
export type StakeChange = "energy_stake" | "energy_unstake" | "bandwidth_stake" | "bandwidth_unstake"

/** Why the chain would refuse the stake or unstake of `amount` sun now; none when it may go. */
const refusal = (kind: StakeChange, amount: bigint, status: EnergyStatus) => {
  if (kind === "bandwidth_unstake") {
    return amount > status.bandwidthStaked
      ? `unstake ${trx(amount)} TRX of bandwidth: ${trx(status.bandwidthStaked)} TRX is staked for bandwidth`
      : undefined
  }
  if (kind === "energy_stake" || kind === "bandwidth_stake") {
    return amount > status.balance
      ? `stake ${trx(amount)} TRX: the staking wallet ${status.address} holds ${trx(status.balance)} TRX`
      : undefined
  }
  // stake reserved by a lending not yet final would leave that lending without it (its transfer burns TRX)
  const free = status.staked - status.lentOnChain - status.lendingInFlight
  return amount > free
    ? `unstake ${trx(amount)} TRX: ${trx(free > 0n ? free : 0n)} TRX of the stake is neither lent nor reserved (staked ${trx(status.staked)}, lent ${trx(status.lentOnChain)}, reserved by lendings in flight ${trx(status.lendingInFlight)})`
    : undefined
}

/** The operation as one JSON line (stdout): its id, what it does, where it stands, its transaction. */
const printOperation = (operation: OperationRow) =>
  Effect.gen(function* () {
    const attempts = yield* Effect.flatMap(CustodyStore, (store) => store.attempts(operation.id))
    const last = attempts.at(-1)
    console.log(
      JSON.stringify({
        operation_id: operation.id,
        type: operation.type,
        amount_trx: trx(operation.amount),
        status: operation.status,
        tx_hash: last?.tx_hash ?? null,
        ...(operation.failure_reason === null ? {} : { failure_reason: operation.failure_reason })
      })
    )
  })

/** The operation once it is COMPLETED or FAILED, saying on stderr what it waits for as that changes. */
const untilFinished = (id: string) =>
  Effect.gen(function* () {
    const store = yield* CustodyStore
    let said = ""
    for (;;) {
      const found = yield* store.operation(id)
      if (Option.isNone(found)) return yield* Effect.dieMessage(`custody operation ${id} vanished`)
      const operation = found.value
      const line = `${id} ${operation.status}${operation.waiting_for === null ? "" : `: waiting for ${operation.waiting_for}`}`
      if (line !== said) console.error(line)
      said = line
      if (isFinished(operation.status)) return operation
      yield* Effect.sleep(POLL)
    }
  })

/**
 * Stores the operator's stake or unstake of `amount` sun for the staking wallet's actor (the running
 * service's resume pass hands it over), refused first when the chain's figures say it cannot go; with
 * `wait`, follows it to its outcome: FAILED is exit 1 with the reason, still in flight after WAIT too.
 */
export const changeStake = (kind: StakeChange, amount: bigint, wait: boolean) =>
  Effect.gen(function* () {
    const verb = `${kind === "energy_stake" || kind === "bandwidth_stake" ? "stake" : "unstake"}${kind.startsWith("bandwidth") ? " (bandwidth)" : ""}`
    if ((kind === "energy_stake" || kind === "bandwidth_stake") && amount < 10n ** BigInt(TRX.decimals))
      return yield* refused(`stake ${trx(amount)} TRX: TRON stakes at least 1 TRX`)
    const status = yield* Effect.either(readStatus)
    if (Either.isRight(status)) {
      const refusedWhy = refusal(kind, amount, status.right)
      if (refusedWhy !== undefined) return yield* refused(refusedWhy)
    } else {
      console.error(`${status.left.message}; stored unchecked (the chain refuses what it cannot do)`)
    }
    const energy = yield* EnergySource
    const id = yield* energy.requestStake(kind, amount)
    const store = yield* CustodyStore
    if (!wait) {
      console.error(`${id} stored: ${verb} ${trx(amount)} TRX; the running service hands it over within seconds`)
      return yield* Effect.flatMap(store.operation(id), (found) =>
        Option.isSome(found) ? printOperation(found.value) : Effect.dieMessage(`custody operation ${id} vanished`)
      )
    }
    console.error(
      `${id} stored: ${verb} ${trx(amount)} TRX; waiting up to ${Duration.format(WAIT)} for the running service to send it and the chain to make it final (--no-wait not to)`
    )
    const finished = yield* untilFinished(id).pipe(Effect.timeoutOption(WAIT))
    if (Option.isNone(finished)) {
      const now = yield* store.operation(id)
      if (Option.isSome(now)) yield* printOperation(now.value)
      return yield* failed(
        `${id} is not finished after ${Duration.format(WAIT)}: it stays stored, for the running service to finish (is it running?); do not request it again, follow it with npm run custody -- show ${id}`
      )
    }
    yield* printOperation(finished.value)
    if (finished.value.status === "FAILED")
      return yield* failed(`${id} FAILED: ${finished.value.failure_reason ?? "no reason recorded"}`)
  })
