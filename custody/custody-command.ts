import { Args, Command, Options } from "@effect/cli"
import { Effect, Layer, Option } from "effect"
import { refused, subcommandNeeded, unreachedAsFailure } from "../src/operator/cli.js"
import { operatorConfig, operatorDatabaseLive } from "../src/operator/operator-database.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { energyCommand } from "./energy-command.js"

/**
 * `npm run custody -- list|show|retry`: what the custody engine is doing, for operators. `list` prints one
 * JSON line per open operation (every recent one with --all) with what it waits for; `show` prints an
 * operation with every transaction it signed; `retry` hands an open operation to its wallet's actor again
 * at the running service's next resume pass (every 2 s). A FAILED operation moved nothing and is not
 * retried: request a new sweep. `energy` is the TRON stake that lends transfers their energy
 * (energy-command.ts). Exit codes: docs/operating/cli.md.
 */

/** `body` on the service's database; what keeps it from the database (configuration, none running) is exit 1. */
const onDatabase = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const config = yield* operatorConfig([])
    return yield* body.pipe(Effect.provide(operatorDatabaseLive(config)))
  }).pipe(unreachedAsFailure)

/** An operation by its id; an unknown id is the operator's mistake (exit 2). */
const operationOf = (id: string) =>
  Effect.flatMap(CustodyStore, (store) => store.operation(id)).pipe(
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.fail(refused(`no custody operation ${id}`)),
        onSome: Effect.succeed
      })
    )
  )

const operationId = Args.text({ name: "OPERATION_ID" }).pipe(Args.withDescription("an operation id (op_…), from list"))

const list = Command.make(
  "list",
  { all: Options.boolean("all").pipe(Options.withDescription("every recent operation, finished ones too")) },
  ({ all }) =>
    onDatabase(
      Effect.gen(function* () {
        const rows = yield* Effect.flatMap(CustodyStore, (store) => store.operatorList(all))
        for (const row of rows) console.log(JSON.stringify(row))
        if (rows.length === 0) console.error(all ? "no operations" : "no operation in flight")
      })
    )
).pipe(Command.withDescription("one JSON line per open operation (the latest 200), with what it waits for"))

const show = Command.make("show", { operationId }, ({ operationId }) =>
  onDatabase(
    Effect.gen(function* () {
      const operation = yield* operationOf(operationId)
      const attempts = yield* Effect.flatMap(CustodyStore, (store) => store.attempts(operationId))
      console.log(
        JSON.stringify(
          {
            ...operation,
            amount: operation.amount.toString(),
            transactions: attempts.map((a) => ({
              attempt: a.attempt,
              tx_hash: a.tx_hash,
              status: a.status,
              amount: a.amount.toString(),
              nonce: a.nonce?.toString() ?? null,
              valid_until: a.valid_until?.toString() ?? null,
              max_fee: a.max_fee.toString(),
              fee: a.fee?.toString() ?? null,
              block_number: a.block_number?.toString() ?? null
            }))
          },
          null,
          2
        )
      )
    })
  )
).pipe(Command.withDescription("an operation with every transaction it signed, as JSON"))

const retry = Command.make("retry", { operationId }, ({ operationId: argument }) =>
  onDatabase(
    Effect.gen(function* () {
      const operation = yield* operationOf(argument)
      if (operation.status === "COMPLETED" || operation.status === "FAILED") {
        return yield* refused(
          `${argument} is ${operation.status}: nothing to retry${operation.status === "FAILED" ? " (it moved nothing; request a new sweep)" : ""}`
        )
      }
      // the running service's resume pass hands operations untouched for a while to their actors again
      yield* Effect.flatMap(CustodyStore, (store) => store.markForResume(argument))
      console.log(
        `${argument} will be handed to its wallet's actor again within seconds (it waits for: ${operation.waiting_for ?? "nothing recorded"})`
      )
    })
  )
).pipe(Command.withDescription("hand an open operation to its wallet's actor again (within seconds)"))

/**
 * The energy commands' services: the database, and the chains (on devnet those of the running service),
 * loaded only when one of them runs (list, show and retry start without the chain clients).
 */
const energyServices = Layer.unwrapEffect(
  Effect.gen(function* () {
    const config = yield* operatorConfig([])
    const { energyServicesLive } = yield* Effect.promise(() => import("./energy-actions.js"))
    return energyServicesLive(config)
  })
)

export const custodyCommand = Command.make("custody", {}, () =>
  subcommandNeeded("npm run custody --", ["list", "show", "retry", "energy"])
).pipe(
  Command.withDescription(
    "what the custody engine is doing: its operations, a nudge for a stuck one, the TRON stake that lends energy"
  ),
  Command.withSubcommands([list, show, retry, energyCommand(energyServices)])
)
