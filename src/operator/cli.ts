import { CliConfig, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Option, Schema } from "effect"
import { OperatorError } from "./operator-database.js"
import { MasterSeedError } from "../keys/master-seed.js"

/**
 * What every operator command (`npm run custody`, `npm run indexer`, …) shares: how it runs and how it
 * ends. Exit codes (docs/operating/cli.md): 0 done; 1 it could not be done or found a problem it looks
 * for (no database, a chain node error, reconciliation differences); 2 the command line or the request is
 * wrong (an unknown flag, a missing or malformed value, an unknown id, a decision the rules refuse) and
 * nothing was changed.
 */

/** How an operator command ends when it does not end with 0: its message goes to stderr. */
export class CliExit extends Schema.TaggedError<CliExit>()("CliExit", {
  code: Schema.Literal(1, 2),
  message: Schema.String
}) {}

/** Exit 2: the command line or the request is wrong; nothing was changed. */
export const refused = (message: string) => new CliExit({ code: 2, message })

/** Exit 1: it could not be done, or it found what it is there to find. */
export const failed = (message: string) => new CliExit({ code: 1, message })

/**
 * What keeps a command from the service's database or chains (an OperatorError of operatorConfig or
 * operatorLive: the configuration, no database or devnet running; a MasterSeedError: no seed of the service
 * to read) is exit 1, not a usage error.
 */
export const unreachedAsFailure = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, OperatorError | MasterSeedError> =>
      error instanceof OperatorError || error instanceof MasterSeedError,
    (error) => Effect.fail(failed(error.message))
  )

/**
 * What the service's rules refuse of a request (a bad value, an unknown id, a conflict, not allowed) is
 * exit 2: the failures named by `refusals` (their classes), each told by its message.
 */
export const refusalsAsUsage =
  <const Refusals extends ReadonlyArray<{ readonly _tag: string }>>(refusals: Refusals) =>
  <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.catchIf(
      self,
      (error): error is Extract<E, { readonly _tag: Refusals[number]["_tag"]; readonly message: string }> =>
        typeof error === "object" &&
        error !== null &&
        "_tag" in error &&
        refusals.some((refusal) => refusal._tag === error._tag),
      (error) => Effect.fail(refused(error.message))
    )

/**
 * `--name VALUE`, read by `parse`. A value it does not take is a usage error that names the flag and what
 * it takes (the library's own messages for choices and numbers do not name the flag).
 */
export const parsedOption = <A>(
  name: string,
  pseudoName: string,
  expected: string,
  parse: (value: string) => Option.Option<A>
) =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.mapEffect((value) =>
      Option.match(parse(value), {
        onNone: () => Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name} ${value}: expected ${expected}`))),
        onSome: Effect.succeed
      })
    )
  )

/** A command given without one of its subcommands (`command` as typed, e.g. `npm run custody --`): exit 2. */
export const subcommandNeeded = (command: string, subcommands: ReadonlyArray<string>) =>
  Effect.fail(refused(`${command}: name one of ${subcommands.join(", ")} (\`${command} --help\` for more)`))

/** Help without the library's built-in flags (--completions, --wizard, …): they still work, unlisted. */
const Config = CliConfig.layer({ showBuiltIns: false })

/** ANSI colour codes: help on a terminal shows them; a file, a pipe or NO_COLOR gets plain text. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")
/** The library's line for every text flag and argument, printed above the description each one has. */
const BOILERPLATE = /\n *A user-defined piece of text\.\n\n?/g
const colours = process.stdout.isTTY === true && process.env.NO_COLOR === undefined
const tidy = (values: ReadonlyArray<unknown>) =>
  values.map((v) => {
    if (typeof v !== "string") return v
    const text = v.replace(BOILERPLATE, "\n")
    return colours ? text : text.replace(ANSI, "")
  })
/** What the commands and the library print, tidied (tidy). */
const tidied = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.console, (base) =>
    Effect.withConsole(self, {
      ...base,
      log: (...values) => base.log(...tidy(values)),
      error: (...values) => base.error(...tidy(values)),
      unsafe: {
        ...base.unsafe,
        log: (...values) => base.unsafe.log(...tidy(values)),
        error: (...values) => base.unsafe.error(...tidy(values))
      }
    })
  )

/**
 * The code `command` ends with, run on `argv` (as `process.argv`: the runtime, the script, then the
 * arguments): 0 done or help asked for; 2 a usage error (printed by the library, naming the flag) or a
 * refusal; a CliExit's own code, its message on stderr. Any other failure is left to the caller (runCli:
 * reported by runMain, exit 1). In-process, for the tests: no Node start-up.
 */
export const exitCodeOf = <Name extends string, E, A>(
  command: Command.Command<Name, NodeContext.NodeContext, E, A>,
  script: string,
  argv: ReadonlyArray<string>
) =>
  Command.run(command, { name: `npm run ${script}`, version: "0.1.0" })(argv).pipe(
    Effect.as(0),
    Effect.catchAll((error) => {
      // usage errors were printed by the library, naming the flag; help asked for is no error
      if (ValidationError.isValidationError(error)) {
        if (ValidationError.isHelpRequested(error)) return Effect.succeed(0)
        // a flag where a command was expected: the library names the commands only, so name the flag
        const first = argv[2]
        const misplaced =
          ValidationError.isCommandMismatch(error) && first?.startsWith("-") === true
            ? Console.error(`${first} is not a flag of \`npm run ${script}\` itself: name a command first`)
            : Effect.void
        return Effect.as(
          Effect.zipRight(
            misplaced,
            Console.error(`(\`npm run ${script} -- --help\` for the commands and their flags)`)
          ),
          2
        )
      }
      if (Schema.is(CliExit)(error)) return Effect.as(Console.error(error.message), error.code)
      return Effect.fail(error)
    }),
    tidied,
    Effect.provide(Layer.merge(NodeContext.layer, Config))
  )

/**
 * Runs `command` on this process's arguments and exits with its code (exitCodeOf). Any other failure is
 * reported by runMain and exits 1.
 */
export const runCli = <Name extends string, E, A>(
  command: Command.Command<Name, NodeContext.NodeContext, E, A>,
  script: string
) =>
  NodeRuntime.runMain(exitCodeOf(command, script, process.argv), {
    teardown: (exit, onExit) =>
      onExit(
        Exit.isSuccess(exit)
          ? typeof exit.value === "number"
            ? exit.value
            : 0
          : Cause.isInterruptedOnly(exit.cause)
            ? 0
            : 1
      )
  })
