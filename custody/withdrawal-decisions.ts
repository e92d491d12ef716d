import { SqlClient } from "@effect/sql"
import { Config, Effect, Layer, Option, Schedule } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { AuditLog, type AuditActor, SERVICE_ACTOR } from "../src/audit/audit-log.js"
import { newId } from "../src/ids.js"
import { Ledger } from "../src/ledger/ledger.js"
import { toBaseUnits } from "../src/money.js"
import { can } from "../src/console/console-roles.js"
import { PolicyClock } from "../src/policy-clock.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { ConsoleStore, type DeciderRow } from "../src/stores/console-store.js"
import { CustodyStore, type NewOperation } from "../src/stores/custody-store.js"
import { WithdrawalStore, type WithdrawalRow } from "../src/stores/withdrawal-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { requiredApprovals, WithdrawalPolicy } from "./withdrawal-policy.js"
import { OperationHandOff } from "./engine/operation-hand-off.js"
import { RefundEvents } from "./refund-events.js"
import { assetDecimals, render, unlock } from "./withdrawal-view.js"
import {
  AssetNotEnrolled,
  ApproverNotAllowed,
  DuplicateApproval,
  WithdrawalNotFound,
  WithdrawalNotPending
} from "./withdrawal-errors.js"
import { PolicyRefused } from "./withdrawal-policy-errors.js"
import { BatchItemNotDecidable } from "./withdrawal-batch-errors.js"

/**
 * Who decides, for the record. A console user is known by id, from their own authenticated console
 * session only. An operator (the CLI on the service's host) decides as the operator, named by `--by` and
 * audited as such, never as a console user: at most one operator approval counts towards a quorum, and a
 * `--by` that is the login of one of the merchant's console users is refused (that person approves in
 * the console, where their session proves who they are).
 */
export interface Decider {
  readonly kind: "console_user" | "operator" | "policy" | "service"
  readonly by: string
  readonly userId?: string | undefined
  /** A client address or `cli@host`. */
  readonly from: string
  readonly userAgent?: string | undefined
  readonly reason?: string | undefined
}

/**
 * The custody operation that sends an approved withdrawal from its chain's main wallet: a token's starts
 * with the gas its transfer needs (GAS_FUNDING), a native's and a Solana transfer's (the gas wallet pays) at
 * once. Its amount is the net amount, in base units.
 */
export const withdrawalOperation = (
  operationId: string,
  withdrawal: WithdrawalRow,
  main: { readonly id: string; readonly address: string },
  decimals: number
): NewOperation => ({
  id: operationId,
  type: "withdrawal",
  status: withdrawal.network_fee_included || withdrawal.chain === "SOLANA" ? "SWEEPING" : "GAS_FUNDING",
  merchant_id: withdrawal.merchant_id,
  chain: withdrawal.chain,
  currency: withdrawal.currency,
  wallet_id: main.id,
  from_address: main.address,
  to_wallet_id: main.id,
  to_address: withdrawal.to_address,
  amount: toBaseUnits(withdrawal.net_amount, decimals).toString(),
  withdrawal_id: withdrawal.id,
  waiting_for: "the main wallet's actor"
})

/**
 * The human decision on a PENDING withdrawal (the console, or the operator CLI; never the API), and the
 * expiry of undecided ones. An approval is recorded per person; the withdrawal stays PENDING until the
 * quorum its policy asks is reached, then the custody operation that sends it from the main wallet is
 * stored and, once committed, handed to that wallet's actor by message (from the operator CLI, which runs
 * no actors, the running service's resume pass hands it over within seconds). One rejection rejects it.
 * Rejection and cancellation unlock the funds in the same transaction as the status change; every decision
 * is in the audit log of that transaction.
 */
export class WithdrawalDecisions extends Effect.Service<WithdrawalDecisions>()("facet/WithdrawalDecisions", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const catalog = yield* AssetCatalog
    const assetStore = yield* AssetStore
    const wallets = yield* Wallets
    const ledger = yield* Ledger
    const audit = yield* AuditLog
    const policy = yield* WithdrawalPolicy
    const clock = yield* PolicyClock
    const consoleStore = yield* ConsoleStore
    const withdrawals = yield* WithdrawalStore
    const { find } = withdrawals
    const custody = yield* CustodyStore
    const refundEvents = yield* RefundEvents
    const handOff = yield* OperationHandOff
    const settings = yield* Config.all({
      pendingHours: Config.number("FACET_WITHDRAWAL_PENDING_HOURS").pipe(Config.withDefault(72))
    }).pipe(Effect.orDie)

    /** The console user a decider is, if any, with what the policy needs to know of them. */
    const consoleUser = (decider: Decider, merchantId: string) =>
      decider.kind !== "console_user"
        ? Effect.succeed(Option.none<DeciderRow>())
        : consoleStore.findDecider(merchantId, decider.userId ?? "")

    /** An operator's name that is one of the merchant's console users' logins (it would read as that person's). */
    const operatorPosingAsUser = (decider: Decider, merchantId: string) =>
      decider.kind !== "operator"
        ? Effect.succeed(false)
        : consoleStore.isMerchantLogin(merchantId, decider.by.trim().toLowerCase())

    const auditActor = (decider: Decider, user: Option.Option<{ readonly login_name: string }>): AuditActor =>
      Option.isSome(user)
        ? { kind: "console_user", name: user.value.login_name, from: decider.from, userAgent: decider.userAgent }
        : decider.kind === "operator"
          ? { kind: "operator", name: decider.by, from: decider.from }
          : { ...SERVICE_ACTOR, name: decider.by }

    /**
     * Whether `decider` may take `decision` on `subject` (a withdrawal, or a withdrawal batch: the same
     * rules): 403 for a console user who is not the merchant's, removed, a viewer, not yet an approver
     * (cooling-off), or who requested it; an operator posing as a console user; 409 for the same person
     * twice or a second operator/policy approval. The console user and the audit actor it is, for the record.
     */
    const vet = Effect.fn("WithdrawalDecisions.vet")(function* (
      subject: {
        /** "withdrawal wdr_…", "withdrawal batch wbt_…": how messages name it. */
        readonly label: string
        readonly id: string
        readonly merchantId: string
        readonly createdByUserId: string | null
        readonly approvals: ReadonlyArray<{ readonly approver_kind: string; readonly approved_by: string }>
      },
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      decider: Decider,
      now: Date
    ) {
      const user = yield* consoleUser(decider, subject.merchantId)
      if (yield* operatorPosingAsUser(decider, subject.merchantId)) {
        return yield* new ApproverNotAllowed({
          reason: `${decider.by} is a console user of this merchant: the operator CLI decides as the operator, under the operator's own name; ${decider.by} decides in the console`
        })
      }
      if (decider.kind === "console_user" && Option.isNone(user))
        return yield* new ApproverNotAllowed({ reason: "this console user is not one of the merchant's" })
      if (Option.isSome(user)) {
        const who = user.value
        if (who.removed_at !== null)
          return yield* new ApproverNotAllowed({ reason: `${who.login_name} was removed from the console` })
        if (!can(who.role, "decide"))
          return yield* new ApproverNotAllowed({
            reason: `${who.login_name} is a ${who.role}: only an owner, admin or approver decides on withdrawals`
          })
      }
      if (decision === "APPROVED") {
        if (Option.isSome(user)) {
          const who = user.value
          if (who.approver_from !== null && who.approver_from > now) {
            return yield* new ApproverNotAllowed({
              reason: `${who.login_name}'s approvals count from ${who.approver_from.toISOString()} (a new user waits for the cooling-off)`
            })
          }
          if (subject.createdByUserId === who.id) {
            return yield* new ApproverNotAllowed({
              reason: `${who.login_name} requested ${subject.label} (in the console, or with an API key they minted): someone else must approve it`
            })
          }
          if (subject.approvals.some((a) => a.approver_kind === "console_user" && a.approved_by === who.login_name)) {
            return yield* new DuplicateApproval({
              withdrawalId: subject.id,
              approvedBy: who.login_name,
              subject: subject.label
            })
          }
        } else if (subject.approvals.some((a) => a.approver_kind !== "console_user")) {
          return yield* new DuplicateApproval({ withdrawalId: subject.id, subject: subject.label })
        }
      }
      return { user, actor: auditActor(decider, user) }
    })

    /**
     * Approve, reject or cancel a PENDING withdrawal, stored in one transaction (a savepoint inside the
     * caller's). Approving records one approval (403: a viewer, a user whose approval right has not started,
     * the user who created it in the console; 409: the same person twice, a second operator approval) and
     * approves it once the approvals reach the quorum: the custody operation that sends it is stored, and
     * returned for the caller to hand over once its own transaction committed.
     */
    const decideWithin = Effect.fn("WithdrawalDecisions.decideWithin")(function* (
      id: string,
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      decider: Decider,
      merchantId?: string
    ) {
      const now = yield* clock.now
      const approved = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const row = yield* find({ id, merchantId, lock: true })
            if (Option.isNone(row)) return yield* new WithdrawalNotFound({ withdrawalId: id })
            const withdrawal = row.value
            // an item of a batch is decided with its batch (WithdrawalBatches.decide), whatever its status
            if (withdrawal.batch_id !== null)
              return yield* new BatchItemNotDecidable({ withdrawalId: id, batchId: withdrawal.batch_id })
            if (withdrawal.status !== "PENDING")
              return yield* new WithdrawalNotPending({ withdrawalId: id, status: withdrawal.status, decision })
            const { user, actor } = yield* vet(
              {
                label: `withdrawal ${id}`,
                id,
                merchantId: withdrawal.merchant_id,
                createdByUserId: withdrawal.created_by_user_id,
                approvals: withdrawal.approvals
              },
              decision,
              decider,
              now
            )
            const reason = decider.reason === undefined ? "" : `: ${decider.reason}`
            if (decision === "APPROVED") {
              // the policy in force now, not the one of its creation: an address removed or a limit tightened since refuses
              yield* policy
                .admit(withdrawal.merchant_id, {
                  id,
                  chain: withdrawal.chain,
                  currency: withdrawal.currency,
                  toAddress: withdrawal.to_address,
                  amount: withdrawal.amount,
                  kind: withdrawal.kind
                })
                .pipe(Effect.mapError((refused) => new PolicyRefused({ reason: refused.reason, approving: id })))
              yield* withdrawals.insertApproval({
                withdrawal_id: id,
                approver_kind: Option.isSome(user) ? "console_user" : decider.kind === "policy" ? "policy" : "operator",
                user_id: Option.isSome(user) ? user.value.id : null,
                approved_by: Option.isSome(user) ? user.value.login_name : decider.by,
                from_address: decider.from.slice(0, 200),
                user_agent: (decider.userAgent ?? "").slice(0, 300)
              })
              const inForce = yield* policy.effective(withdrawal.merchant_id)
              const required = Math.max(
                withdrawal.required_approvals,
                requiredApprovals(inForce, `${withdrawal.chain}-${withdrawal.currency}`, withdrawal.amount)
              )
              // a removed user's approval of a still-pending withdrawal no longer counts
              const count = yield* withdrawals.countedApprovals(id)
              yield* audit.record(
                withdrawal.merchant_id,
                actor,
                "withdrawal.approved",
                id,
                `approval ${count} of ${required}${reason}`
              )
              if (count < required) {
                yield* withdrawals.raiseRequiredApprovals(id, required)
                return Option.none<{ readonly operationId: string; readonly walletId: string }>()
              }
            } else {
              yield* audit.record(
                withdrawal.merchant_id,
                actor,
                decision === "REJECTED" ? "withdrawal.rejected" : "withdrawal.cancelled",
                id,
                `${withdrawal.amount} ${withdrawal.currency} on ${withdrawal.chain} to ${withdrawal.to_address}${reason}`
              )
            }
            const by = Option.isSome(user) ? user.value.login_name : decider.by
            yield* withdrawals.recordDecision(id, decision, by, decider.from, decider.reason ?? null)
            const decimals = yield* assetDecimals(catalog, withdrawal)
            if (decision !== "APPROVED") {
              yield* ledger.post([
                unlock(
                  withdrawal,
                  toBaseUnits(withdrawal.amount, decimals),
                  decision === "REJECTED" ? "withdrawal_rejected" : "withdrawal_cancelled"
                )
              ])
              // a refund's withdrawal: the refund fails with it (the unlock above returned its money)
              if (withdrawal.refund_id !== null)
                yield* refundEvents.withdrawalEnded(
                  id,
                  "FAILED",
                  `its withdrawal ${id} was ${decision.toLowerCase()} by ${by}${reason}`
                )
              return Option.none<{ readonly operationId: string; readonly walletId: string }>()
            }
            const main = yield* wallets.mainWallet(withdrawal.merchant_id, withdrawal.chain)
            const operationId = newId("op")
            yield* custody.insertOperation(withdrawalOperation(operationId, withdrawal, main, decimals))
            yield* withdrawals.attachOperation(id, operationId)
            return Option.some({ operationId, walletId: main.id })
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      yield* Effect.logInfo(
        `withdrawal ${id} ${decision} by ${decider.by} from ${decider.from}${decider.reason === undefined ? "" : ` (${decider.reason})`}${Option.isSome(approved) ? `; operation ${approved.value.operationId}` : ""}`
      )
      return approved
    })

    /**
     * The decision (decideWithin), committed; an approval that reached its quorum is handed to the main
     * wallet's actor at once (OperationHandOff: from an operator command, by the running service's resume pass).
     */
    const decide = Effect.fn("Withdrawals.decide")(function* (
      id: string,
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      decider: Decider,
      merchantId?: string
    ) {
      const approved = yield* decideWithin(id, decision, decider, merchantId)
      yield* handOff.handOver(Option.toArray(approved))
      const row = yield* find({ id })
      return yield* Option.match(row, {
        onNone: () => Effect.dieMessage(`withdrawal ${id} vanished`),
        onSome: (r) => Effect.succeed(render(r))
      })
    })

    /** PENDING withdrawals nobody decided within FACET_WITHDRAWAL_PENDING_HOURS (72) → CANCELLED, unlocked. */
    const expire = Effect.fn("Withdrawals.expire")(function* () {
      const due = yield* withdrawals.undecidedFor(settings.pendingHours)
      for (const id of due) {
        yield* decide(id, "CANCELLED", {
          kind: "service",
          by: "expiry",
          from: "service",
          reason: `undecided for ${settings.pendingHours} h`
        }).pipe(
          // decided or gone meanwhile, or not the service's to cancel: left as it is
          Effect.catchTags({
            WithdrawalNotFound: () => Effect.void,
            WithdrawalNotPending: () => Effect.void,
            ApproverNotAllowed: () => Effect.void,
            BatchItemNotDecidable: () => Effect.void
          })
        )
      }
      return due.length
    })

    /** Sets (or, with none, switches off) a merchant's daily auto-approval limit for one asset. */
    const setAutoApproval = Effect.fn("WithdrawalDecisions.setAutoApproval")(function* (
      merchantId: string,
      chain: string,
      currency: string,
      dailyLimit: Option.Option<string>,
      decider: Decider
    ) {
      const updated = yield* Effect.orDie(assetStore.setAutoApprovalLimit(merchantId, chain, currency, dailyLimit))
      if (!updated) return yield* new AssetNotEnrolled({ merchantId, assetKey: `${chain}-${currency}` })
      yield* audit.record(
        merchantId,
        { kind: "operator", name: decider.by, from: decider.from },
        "policy.changed",
        `auto_approve:${chain}-${currency}`,
        `auto-approval of ${chain}-${currency} withdrawals needing one approval: ${Option.getOrElse(dailyLimit, () => "off")} per rolling 24 h`
      )
      yield* Effect.logInfo(
        `auto-approval of ${chain}-${currency} withdrawals for ${merchantId}: ${Option.getOrElse(dailyLimit, () => "off")} (set by ${decider.by} from ${decider.from})`
      )
    })

    return { decide, decideWithin, vet, expire, setAutoApproval } as const
  }),
  dependencies: [
    AssetStore.Default,
    CustodyStore.Default,
    WithdrawalStore.Default,
    ConsoleStore.Default,
    AssetCatalog.Default,
    Ledger.Default,
    Wallets.Default,
    AuditLog.Default,
    WithdrawalPolicy.Default,
    RefundEvents.Default
  ]
}) {}

/** PENDING withdrawals nobody decided in time are cancelled (funds unlocked), checked every minute. */
export const WithdrawalExpiryLive = Layer.scopedDiscard(
  Effect.flatMap(WithdrawalDecisions, (withdrawals) =>
    Effect.forkScoped(
      Effect.repeat(
        withdrawals.expire().pipe(
          Effect.tap((n) =>
            n > 0 ? Effect.logInfo(`${n} undecided withdrawal(s) expired and were cancelled`) : Effect.void
          ),
          Effect.catchAllCause((cause) => Effect.logWarning("withdrawal expiry failed; trying again later", cause))
        ),
        Schedule.spaced("1 minute")
      )
    )
  )
).pipe(Layer.provide(WithdrawalDecisions.Default))
