import { Args, Command, Options } from "@effect/cli"
import { Effect, Layer, Option, Schema } from "effect"
import * as os from "node:os"
import { parsedOption, refusalsAsUsage, subcommandNeeded, unreachedAsFailure } from "../src/operator/cli.js"
import { WithdrawalStatus } from "../src/domain/withdrawal.js"
import { SystemClockLive } from "../src/policy-clock.js"
import { OperatorMasterSeedLive } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { operatorConfig, operatorDatabaseLive } from "../src/operator/operator-database.js"
import { OperationHandOffByResumeLive } from "./engine/operation-hand-off.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"
import { WithdrawalStore } from "../src/stores/withdrawal-store.js"
import {
  ApproverNotAllowed,
  AssetNotEnrolled,
  DuplicateApproval,
  WithdrawalNotFound,
  WithdrawalNotPending
} from "./withdrawal-errors.js"
import { PolicyRefused } from "./withdrawal-policy-errors.js"
import { BatchItemNotDecidable } from "./withdrawal-batch-errors.js"

/**
 * `npm run withdrawals`: the operator's view of withdrawals and the human decision on them. Every decision
 * is recorded as the operator's (`--by` names the operator; a console user's login is refused: console
 * users decide in the console) and from where (this host). At most one operator approval counts per quorum.
 * An approved withdrawal is handed to the main wallet's actor by the running service's resume pass within
 * seconds (this process runs no actors; the console's approvals reach the actor at once, by message).
 * Exit codes (docs/operating/cli.md): a decision the rules refuse (unknown id, already decided, a console
 * user's login) is 2, as a bad command line is: the fault campaign counts those as answered refusals.
 */

const withdrawalId = Args.text({ name: "WITHDRAWAL_ID" }).pipe(Args.withDescription("a withdrawal id, from list"))
// a flag right after --by means its value was left out, and a blank name would record nobody: never an operator
const by = parsedOption("by", "NAME", "the operator's name", (value) =>
  value.startsWith("-") || value.trim() === "" ? Option.none() : Option.some(value.trim())
).pipe(Options.withDescription("the operator deciding (recorded in the audit log; not a console user's login)"))

/** What the subcommands run on: the withdrawal decisions, and the store `list` reads. */
export type WithdrawalServices = WithdrawalDecisions | WithdrawalStore

/**
 * The withdrawal decisions (bringing their own services) on the system clock; the entry gives the stores,
 * the signer (an approval makes the main wallet on first use) and the service's database, a test its own.
 * This process runs no wallet actors: what it approves, the running service's resume pass hands over.
 */
export const WithdrawalDecisionsLive = WithdrawalDecisions.Default.pipe(
  Layer.provideMerge(SystemClockLive),
  Layer.provide(OperationHandOffByResumeLive)
)

/**
 * The command tree, its subcommands on `services`: built when a subcommand runs (never for `--help` or a
 * usage error), what keeps a subcommand from them (an OperatorError: no database) is exit 1. The entry
 * (withdrawals-cli.ts) gives the service's database; custody/withdrawals-cli.test.ts a test's.
 */
export const withdrawalsCommand = <E>(services: Layer.Layer<WithdrawalServices, E>) => {
  /** `body` with the withdrawal services; what keeps it from them is exit 1. */
  const withWithdrawals = <A, E2, R>(body: Effect.Effect<A, E2, R>) =>
    Effect.provide(body, services).pipe(unreachedAsFailure)

  const list = Command.make(
    "list",
    {
      status: parsedOption("status", "STATUS", `one of ${WithdrawalStatus.literals.join(", ")}`, (value) =>
        Schema.decodeUnknownOption(WithdrawalStatus)(value.toUpperCase())
      ).pipe(Options.optional, Options.withDescription("only withdrawals in this status"))
    },
    ({ status }) =>
      withWithdrawals(
        Effect.gen(function* () {
          const rows = yield* Effect.flatMap(WithdrawalStore, (store) =>
            store.listAll({ status: Option.getOrUndefined(status), limit: 100 })
          )
          for (const row of rows) console.log(JSON.stringify(row))
          if (rows.length === 0) console.error("no withdrawals")
        })
      )
  ).pipe(Command.withDescription("one JSON line per withdrawal, the latest 100"))

  /** The operator's decision on a withdrawal; what the rules refuse is exit 2. */
  const decide = (
    id: string,
    decision: "APPROVED" | "REJECTED" | "CANCELLED",
    by: string,
    reason: string | undefined
  ) =>
    withWithdrawals(
      Effect.gen(function* () {
        // always the operator's own decision: never recorded as a console user's
        const withdrawal = yield* Effect.flatMap(WithdrawalDecisions, (decisions) =>
          decisions.decide(id, decision, { kind: "operator", by, from: `cli@${os.hostname()}`, reason })
        ).pipe(
          refusalsAsUsage([
            WithdrawalNotFound,
            WithdrawalNotPending,
            DuplicateApproval,
            ApproverNotAllowed,
            PolicyRefused,
            BatchItemNotDecidable
          ])
        )
        if (withdrawal.status === "PENDING")
          console.error(
            `approval recorded: ${withdrawal.approvals.length} of ${withdrawal.required_approvals}; it stays PENDING until the quorum is reached`
          )
        console.log(JSON.stringify(withdrawal))
      })
    )

  const approve = Command.make("approve", { withdrawalId, by }, ({ withdrawalId, by }) =>
    decide(withdrawalId, "APPROVED", by, undefined)
  ).pipe(Command.withDescription("approve a PENDING withdrawal (one operator approval counts towards its quorum)"))

  const reject = Command.make(
    "reject",
    { withdrawalId, by, reason: Options.text("reason").pipe(Options.withDescription("why (told to the merchant)")) },
    ({ withdrawalId, by, reason }) => decide(withdrawalId, "REJECTED", by, reason)
  ).pipe(Command.withDescription("reject a PENDING withdrawal; its amount is released"))

  const cancel = Command.make(
    "cancel",
    { withdrawalId, by, reason: Options.text("reason").pipe(Options.optional, Options.withDescription("why")) },
    ({ withdrawalId, by, reason }) => decide(withdrawalId, "CANCELLED", by, Option.getOrUndefined(reason))
  ).pipe(Command.withDescription("cancel a withdrawal not yet sent"))

  const autoApprove = Command.make(
    "auto-approve",
    {
      merchant: Options.text("merchant").pipe(Options.withPseudoName("MERCHANT_ID")),
      asset: parsedOption("asset", "CHAIN-CURRENCY", "an asset such as TRC20-USDT", (value) =>
        Option.fromNullable(/^([A-Z0-9]+)-([A-Z0-9]+)$/.exec(value.toUpperCase())).pipe(
          Option.map(([key, chain = "", currency = ""]) => ({ key, chain, currency }))
        )
      ),
      // a limit of 0 is no limit (the database refuses one): off says that
      daily: parsedOption("daily", "AMOUNT|off", "an amount above 0 such as 100, or off", (value) =>
        value === "off"
          ? Option.some(Option.none<string>())
          : /^\d+(\.\d+)?$/.test(value) && /[1-9]/.test(value)
            ? Option.some(Option.some(value))
            : Option.none()
      ).pipe(Options.withDescription("auto-approve up to this total per rolling 24 h; off: every withdrawal waits")),
      by
    },
    ({ merchant, asset, daily, by }) =>
      withWithdrawals(
        Effect.gen(function* () {
          yield* Effect.flatMap(WithdrawalDecisions, (decisions) =>
            decisions.setAutoApproval(merchant, asset.chain, asset.currency, daily, {
              kind: "operator",
              by,
              from: `cli@${os.hostname()}`
            })
          ).pipe(refusalsAsUsage([AssetNotEnrolled]))
          console.log(
            `auto-approval of ${asset.key} for ${merchant}: ${Option.match(daily, { onNone: () => "off", onSome: (d) => `up to ${d} per rolling 24 h` })}`
          )
        })
      )
  ).pipe(
    Command.withDescription("a merchant's auto-approval of withdrawals that need one approval, within a daily total")
  )

  return Command.make("withdrawals", {}, () =>
    subcommandNeeded("npm run withdrawals --", ["list", "approve", "reject", "cancel", "auto-approve"])
  ).pipe(
    Command.withDescription("the operator's view of withdrawals and the human decision on them"),
    Command.withSubcommands([list, approve, reject, cancel, autoApprove])
  )
}

/**
 * What `npm run withdrawals` runs on: the service's database (DATABASE_URL, or the embedded PostgreSQL of the
 * service running in FACET_DATA_DIR), read when a subcommand runs. Deciding needs no chain: the service sends
 * what is approved.
 */
export const WithdrawalsOperatorLive = Layer.unwrapEffect(
  Effect.map(operatorConfig([]), (config) =>
    WithdrawalDecisionsLive.pipe(
      Layer.provide(LocalSignerLive.pipe(Layer.provide(OperatorMasterSeedLive))),
      Layer.provideMerge(operatorDatabaseLive(config))
    )
  )
)
