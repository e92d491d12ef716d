import { Args, Command, Options } from "@effect/cli"
import { Effect, type Layer } from "effect"
import { toBaseUnits } from "../src/money.js"
import { refused, subcommandNeeded, unreachedAsFailure } from "../src/operator/cli.js"
import type { CustodyStore } from "../src/stores/custody-store.js"
import type { EnergySource } from "./energy.js"

/**
 * `npm run custody -- energy status|stake|unstake`: the platform's TRON stake, which lends custody's TRC20
 * transfers their energy (custody/energy.ts). `stake` and `unstake` store an operation that the running
 * service hands to the staking wallet's actor, and wait for its outcome. Exit codes (docs/operating/cli.md):
 * a malformed amount, or more than the stake or the wallet holds when that can be read, is 2 with nothing
 * stored; no node or database to reach, or a FAILED operation, is 1.
 */

/** What the subcommands run on. */
export type EnergyServices = EnergySource | CustodyStore

/**
 * What the subcommands do (energy-actions.ts) is loaded only when one runs: it brings the chain clients,
 * which `npm run custody -- list` and the rest need not load.
 */
const actions = Effect.promise(() => import("./energy-actions.js"))

// at most a sun's digits, and below 10^12 TRX (more than there is)
const TRX_AMOUNT = /^\d{1,12}(\.\d{1,6})?$/

/** AMOUNT as sun: TRX above 0 with at most 6 fractional digits; anything else is refused (exit 2). */
const sunOf = (amount: string) =>
  TRX_AMOUNT.test(amount) && /[1-9]/.test(amount)
    ? Effect.succeed(toBaseUnits(amount, 6))
    : Effect.fail(
        refused(`AMOUNT ${amount}: expected TRX above 0 with at most 6 fractional digits, such as 1000 or 0.5`)
      )

const amount = Args.text({ name: "AMOUNT" }).pipe(Args.withDescription("TRX, such as 1000 or 2500.5"))
const noWait = Options.boolean("no-wait").pipe(
  Options.withDescription("return once the operation is stored, without waiting for its outcome")
)
const bandwidth = Options.boolean("bandwidth").pipe(
  Options.withDescription(
    "for the staking wallet's own bandwidth instead of energy (its lendings, and the activations the gas wallet pays)"
  )
)

/**
 * The command tree, its subcommands on `services`, built when a subcommand runs; what keeps one from them
 * (an OperatorError: no database, no devnet running) is exit 1. The entry (custody-cli.ts) gives the
 * service's database and chains; custody/energy-cli.test.ts a test's.
 */
export const energyCommand = <E>(services: Layer.Layer<EnergyServices, E>) => {
  const withEnergy = <A, E2>(
    body: (run: Effect.Effect.Success<typeof actions>) => Effect.Effect<A, E2, EnergyServices>
  ) => Effect.flatMap(actions, body).pipe(Effect.provide(services), unreachedAsFailure)

  const status = Command.make("status", {}, () => withEnergy((run) => run.printStatus)).pipe(
    Command.withDescription(
      "the stake as JSON, in TRX: staked, lent, lendable, unfreezing, energy per day and used, what custody lent and burned"
    )
  )

  const change = (kind: "energy_stake" | "energy_unstake") =>
    Command.make(
      kind === "energy_stake" ? "stake" : "unstake",
      { amount, noWait, bandwidth },
      ({ amount, noWait, bandwidth }) =>
        Effect.flatMap(sunOf(amount), (sun) =>
          withEnergy((run) =>
            run.changeStake(
              bandwidth ? (kind === "energy_stake" ? "bandwidth_stake" : "bandwidth_unstake") : kind,
              sun,
              !noWait
            )
          )
        )
    ).pipe(
      Command.withDescription(
        kind === "energy_stake"
          ? "freeze AMOUNT TRX of the staking wallet for energy; waits for the outcome (up to 5 minutes)"
          : "start unfreezing AMOUNT TRX of the stake not lent (back after the chain's period: 14 days on mainnet); waits for the outcome (up to 5 minutes)"
      )
    )

  return Command.make("energy", {}, () =>
    subcommandNeeded("npm run custody -- energy", ["status", "stake", "unstake"])
  ).pipe(
    Command.withDescription("the TRON stake that lends custody's transfers their energy"),
    Command.withSubcommands([status, change("energy_stake"), change("energy_unstake")])
  )
}
