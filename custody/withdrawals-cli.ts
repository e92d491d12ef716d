import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option, Schema } from "effect"
import * as os from "node:os"
import { operatorLive } from "../indexer/operator-runtime.js"
import { OperatorError, operatorConfig } from "../src/operator/operator-database.js"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { WithdrawalStatus } from "../src/domain/withdrawal.js"
import { AuditLog } from "../src/audit/audit-log.js"
import { Ledger } from "../src/ledger/ledger.js"
import { PolicyClock } from "../src/policy-clock.js"
import { Wallets } from "../src/wallets/wallets.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"
import { WithdrawalPolicy } from "./withdrawal-policy.js"
import { WithdrawalStore } from "./withdrawal-store.js"

const USAGE =
  "usage: npm run withdrawals -- list [--status PENDING] | approve ID --by NAME | reject ID --by NAME --reason TEXT | cancel ID --by NAME [--reason TEXT]\n" +
  "       npm run withdrawals -- auto-approve --merchant MERCHANT_ID --asset TRC20-USDT --daily 100|off --by NAME"

const option = (args: ReadonlyArray<string>, name: string) => {
  const i = args.indexOf(name)
  return i === -1 ? undefined : args[i + 1]
}

/**
 * `npm run withdrawals`: the operator's view of withdrawals and the human decision on them. Every decision
 * is recorded as the operator's (`--by` names the operator; a console user's login is refused: console
 * users decide in the console) and from where (this host). At most one operator approval counts per quorum.
 * An approved withdrawal is handed to the main wallet's actor by the running service within seconds.
 */
const main = Effect.gen(function* () {
  const args = process.argv.slice(2)
  const [command, id] = args
  if (
    command !== "list" &&
    command !== "approve" &&
    command !== "reject" &&
    command !== "cancel" &&
    command !== "auto-approve"
  ) {
    return yield* new OperatorError({ message: USAGE })
  }
  const config = yield* operatorConfig([])
  yield* Effect.gen(function* () {
    const store = yield* WithdrawalStore
    const decisions = yield* WithdrawalDecisions
    if (command === "list") {
      const status = option(args, "--status")
      if (status !== undefined && !Schema.is(WithdrawalStatus)(status))
        return yield* new OperatorError({ message: `--status must be one of ${WithdrawalStatus.literals.join(", ")}` })
      const rows = yield* store.listAll({ status, limit: 100 })
      for (const row of rows) console.log(JSON.stringify(row))
      if (rows.length === 0) console.error("no withdrawals")
      return
    }
    const by = option(args, "--by")
    const reason = option(args, "--reason")
    if (command === "auto-approve") {
      const merchant = option(args, "--merchant")
      const asset = /^([A-Z0-9]+)-([A-Z0-9]+)$/.exec(option(args, "--asset") ?? "")
      const daily = option(args, "--daily")
      if (
        merchant === undefined ||
        asset === null ||
        daily === undefined ||
        by === undefined ||
        (daily !== "off" && !/^\d+(\.\d+)?$/.test(daily))
      ) {
        return yield* new OperatorError({ message: USAGE })
      }
      yield* decisions
        .setAutoApproval(
          merchant,
          asset[1] ?? "",
          asset[2] ?? "",
          daily === "off" ? Option.none() : Option.some(daily),
          { kind: "operator", by, from: `cli@${os.hostname()}` }
        )
        .pipe(Effect.catchTag("NotFound", (e) => new OperatorError({ message: e.error })))
      console.log(
        `auto-approval of ${asset[0]} for ${merchant}: ${daily === "off" ? "off" : `up to ${daily} per rolling 24 h`}`
      )
      return
    }
    if (id === undefined || by === undefined || by.startsWith("--")) return yield* new OperatorError({ message: USAGE })
    if (command === "reject" && reason === undefined)
      return yield* new OperatorError({ message: "a rejection needs --reason" })
    const decision = command === "approve" ? "APPROVED" : command === "reject" ? "REJECTED" : "CANCELLED"
    // always the operator's own decision: never recorded as a console user's
    const withdrawal = yield* decisions
      .decide(id, decision, { kind: "operator", by, from: `cli@${os.hostname()}`, reason })
      .pipe(
        Effect.catchTags({
          NotFound: (e) => new OperatorError({ message: e.error }),
          Conflict: (e) => new OperatorError({ message: e.error }),
          Forbidden: (e) => new OperatorError({ message: e.error })
        })
      )
    if (withdrawal.status === "PENDING")
      console.error(
        `approval recorded: ${withdrawal.approvals.length} of ${withdrawal.required_approvals}; it stays PENDING until the quorum is reached`
      )
    console.log(JSON.stringify(withdrawal))
  }).pipe(
    Effect.provide(
      Layer.mergeAll(WithdrawalDecisions.Default, WithdrawalStore.Default).pipe(
        Layer.provide(WithdrawalPolicy.Default),
        Layer.provideMerge(
          Layer.mergeAll(
            AssetCatalog.Default,
            Wallets.Default,
            Ledger.Default,
            WithdrawalStore.Default,
            AuditLog.Default,
            PolicyClock.System
          )
        )
      )
    ),
    Effect.provide(operatorLive(config))
  )
}).pipe(
  Effect.catchTag("OperatorError", (error) =>
    Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 2
    })
  )
)

NodeRuntime.runMain(main)
