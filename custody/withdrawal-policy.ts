import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Option, Schedule } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { AuditLog, type AuditActor, SERVICE_ACTOR } from "../src/audit/audit-log.js"
import type { Chain } from "../src/domain/chain.js"
import { MerchantNotFound } from "../src/merchants/merchant-errors.js"
import { newId } from "../src/ids.js"
import { fitsPrecision, MoneyDecimal } from "../src/money.js"
import { PolicyClock } from "../src/policy-clock.js"
import { MerchantStore } from "../src/stores/merchant-store.js"
import { WithdrawalBatchStore } from "../src/stores/withdrawal-batch-store.js"
import { type PolicyChange, WithdrawalStore } from "../src/stores/withdrawal-store.js"
import { addressKey } from "./destination-address.js"
import { InvalidPolicySetting, PolicyChangeNotFound, PolicyRefused } from "./withdrawal-policy-errors.js"

export const DEFAULT_COOLING_OFF_SECONDS = 86_400
const MAX_COOLING_OFF_SECONDS = 30 * 86_400
const MAX_QUORUM = 10

/**
 * The settings a policy is made of. Per asset (`TRC20-USDT`): a maximum per withdrawal, a maximum per
 * rolling 24 h, and more approvals above an amount. Values are canonical text; null = unset (the default).
 */
export type SettingKind =
  | "address_book"
  | "refund_address_book"
  | "cooling_off"
  | "quorum"
  | "per_tx"
  | "per_day"
  | "quorum_above"
const PER_ASSET: ReadonlyArray<SettingKind> = ["per_tx", "per_day", "quorum_above"]

export interface SettingName {
  readonly kind: SettingKind
  /** The asset key of a per-asset setting. */
  readonly asset?: string
}

export const settingName = (setting: string): SettingName | undefined => {
  const [kind, asset, ...rest] = setting.split(":")
  if (rest.length > 0) return undefined
  if (kind === "address_book" || kind === "refund_address_book" || kind === "cooling_off" || kind === "quorum")
    return asset === undefined ? { kind } : undefined
  if (kind === "per_tx" || kind === "per_day" || kind === "quorum_above") {
    return asset !== undefined && /^[A-Z0-9]+-[A-Z0-9]+$/.test(asset) ? { kind, asset } : undefined
  }
  return undefined
}

/** `24h`, `90m`, `2d`, `3600s` or plain seconds → seconds. */
export const parseDuration = (text: string): number | undefined => {
  const match = /^(\d{1,9})([smhd]?)$/.exec(text.trim())
  if (match === null) return undefined
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] ?? ""] ?? 1
  return Number(match[1]) * unit
}

export const formatDuration = (seconds: number) =>
  seconds % 86_400 === 0 && seconds > 0
    ? `${seconds / 86_400}d`
    : seconds % 3600 === 0 && seconds > 0
      ? `${seconds / 3600}h`
      : seconds % 60 === 0 && seconds > 0
        ? `${seconds / 60}m`
        : `${seconds}s`

export interface QuorumTier {
  readonly above: MoneyDecimal
  readonly approvals: number
}

const parseTier = (value: string): QuorumTier | undefined => {
  const match = /^(\d+(?:\.\d+)?):(\d{1,2})$/.exec(value)
  return match === null ? undefined : { above: new MoneyDecimal(match[1] ?? "0"), approvals: Number(match[2]) }
}

const UNSET = new Set(["off", "none", "unset", ""])

/** A setting's value in canonical form, or why it is not acceptable. */
const canonical = (
  name: SettingName,
  raw: string | null
): { readonly value: string | null } | { readonly problem: string } => {
  const text = raw?.trim() ?? null
  switch (name.kind) {
    case "address_book":
    case "refund_address_book":
      return text === "on" || text === "off" ? { value: text } : { problem: `${name.kind} must be on or off` }
    case "cooling_off": {
      const seconds = text === null ? undefined : parseDuration(text)
      return seconds === undefined || seconds > MAX_COOLING_OFF_SECONDS
        ? { problem: "cooling_off must be a duration such as 24h, 90m or 2d (at most 30d)" }
        : { value: String(seconds) }
    }
    case "quorum": {
      const n = text === null || !/^\d{1,2}$/.test(text) ? 0 : Number(text)
      return n >= 1 && n <= MAX_QUORUM
        ? { value: String(n) }
        : { problem: `quorum must be a whole number from 1 to ${MAX_QUORUM}` }
    }
    case "per_tx":
    case "per_day":
      if (text === null || UNSET.has(text)) return { value: null }
      return /^\d+(\.\d+)?$/.test(text) && new MoneyDecimal(text).greaterThan(0)
        ? { value: new MoneyDecimal(text).toFixed() }
        : { problem: `${name.kind}:${name.asset ?? ""} must be an amount above zero, or off` }
    case "quorum_above": {
      if (text === null || UNSET.has(text)) return { value: null }
      const tier = parseTier(text)
      return tier === undefined || tier.approvals < 2 || tier.approvals > MAX_QUORUM
        ? {
            problem: `quorum_above:${name.asset ?? ""} must be AMOUNT:N with N from 2 to ${MAX_QUORUM} (e.g. 1000:2), or off`
          }
        : { value: `${tier.above.toFixed()}:${tier.approvals}` }
    }
  }
}

/** The policy in force for one merchant at one moment. */
export interface EffectivePolicy {
  readonly addressBook: boolean
  /** Whether refunds' withdrawals go only to usable entries too (their destination is the customer's: off by default). */
  readonly refundAddressBook: boolean
  readonly coolingOffSeconds: number
  readonly quorum: number
  readonly perTx: (assetKey: string) => MoneyDecimal | undefined
  readonly perDay: (assetKey: string) => MoneyDecimal | undefined
  readonly quorumAbove: (assetKey: string) => QuorumTier | undefined
  /** The value of a setting as stored (null = unset/default). */
  readonly value: (setting: string) => string | null
  /** Every setting that is not the default, in name order. */
  readonly settings: ReadonlyArray<{ readonly setting: string; readonly value: string }>
}

const effectiveFrom = (values: ReadonlyMap<string, string | null>): EffectivePolicy => {
  const value = (setting: string) => values.get(setting) ?? null
  const amount = (setting: string) => {
    const v = value(setting)
    return v === null ? undefined : new MoneyDecimal(v)
  }
  return {
    addressBook: value("address_book") === "on",
    refundAddressBook: value("refund_address_book") === "on",
    coolingOffSeconds: Number(value("cooling_off") ?? DEFAULT_COOLING_OFF_SECONDS),
    quorum: Number(value("quorum") ?? 1),
    perTx: (asset) => amount(`per_tx:${asset}`),
    perDay: (asset) => amount(`per_day:${asset}`),
    quorumAbove: (asset) => {
      const v = value(`quorum_above:${asset}`)
      return v === null ? undefined : parseTier(v)
    },
    value,
    settings: [...values]
      .flatMap(([setting, v]) => (v === null ? [] : [{ setting, value: v }]))
      .sort((a, b) => a.setting.localeCompare(b.setting))
  }
}

/** How many distinct approvals a withdrawal of this amount needs under this policy. */
export const requiredApprovals = (policy: EffectivePolicy, assetKey: string, amount: string) => {
  const tier = policy.quorumAbove(assetKey)
  return tier !== undefined && new MoneyDecimal(amount).greaterThan(tier.above)
    ? Math.max(policy.quorum, tier.approvals)
    : policy.quorum
}

/**
 * How many distinct approvals a withdrawal batch needs under this policy. A batch is one decision, so each
 * asset's tier is judged on the sum of the batch's items in that asset, not on any item alone: five items of
 * 100 under "above 100: 3 approvals" need 3, as one withdrawal of 500 does. Assets are never added together
 * (a tier is in its asset's units); the batch needs the most any of its assets' totals asks.
 */
export const batchRequiredApprovals = (
  policy: EffectivePolicy,
  items: ReadonlyArray<{ readonly chain: string; readonly currency: string; readonly amount: string }>
) => {
  const totals = new Map<string, MoneyDecimal>()
  for (const w of items) {
    const asset = `${w.chain}-${w.currency}`
    totals.set(asset, (totals.get(asset) ?? new MoneyDecimal(0)).plus(w.amount))
  }
  return [...totals].reduce(
    (required, [asset, total]) => Math.max(required, requiredApprovals(policy, asset, total.toFixed())),
    policy.quorum
  )
}

/** True when going from `from` to `to` makes withdrawals easier (so the change must wait). */
export const loosens = (name: SettingName, from: string | null, to: string | null): boolean => {
  switch (name.kind) {
    case "address_book":
    case "refund_address_book":
      return (from ?? "off") === "on" && (to ?? "off") === "off"
    case "cooling_off":
      return Number(to ?? DEFAULT_COOLING_OFF_SECONDS) < Number(from ?? DEFAULT_COOLING_OFF_SECONDS)
    case "quorum":
      return Number(to ?? 1) < Number(from ?? 1)
    case "per_tx":
    case "per_day":
      return from !== null && (to === null || new MoneyDecimal(to).greaterThan(from))
    case "quorum_above": {
      const before = from === null ? undefined : parseTier(from)
      if (before === undefined) return false
      const after = to === null ? undefined : parseTier(to)
      return after === undefined || after.above.greaterThan(before.above) || after.approvals < before.approvals
    }
  }
}

/** A setting as people read it. */
export const describeValue = (name: SettingName, value: string | null) =>
  value === null
    ? name.kind === "cooling_off"
      ? formatDuration(DEFAULT_COOLING_OFF_SECONDS)
      : name.kind === "quorum"
        ? "1"
        : name.kind === "address_book" || name.kind === "refund_address_book"
          ? "off"
          : "no limit"
    : name.kind === "cooling_off"
      ? formatDuration(Number(value))
      : value

/** A setting's value as people read it, by the setting's stored name. */
export const describeSetting = (setting: string, value: string | null) =>
  describeValue(settingName(setting) ?? { kind: "quorum" }, value)

export type { PolicyChange }

export interface ChangeOutcome {
  readonly setting: string
  readonly from: string
  readonly to: string
  /** In force now, or from this time (a loosening waits for the cooling-off). */
  readonly effectiveAt: Date
  readonly pending: boolean
}

/**
 * The withdrawal policy: its settings in force, how they change (tightening at once, loosening only
 * after the cooling-off in force, cancellable meanwhile), and the admission of a new withdrawal (address
 * book, limits, the approvals it needs). One place, used by the API, the console and the operator CLI.
 */
export class WithdrawalPolicy extends Effect.Service<WithdrawalPolicy>()("facet/WithdrawalPolicy", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* PolicyClock
    const audit = yield* AuditLog
    const catalog = yield* AssetCatalog
    const merchants = yield* MerchantStore
    const withdrawals = yield* WithdrawalStore
    const batchStore = yield* WithdrawalBatchStore

    /** The settings in force at `at`: stored ones, overlaid with pending changes already due (exact even before they are settled). */
    const load = (merchantId: string, at: Date) =>
      Effect.gen(function* () {
        const stored = yield* withdrawals.policySettings(merchantId)
        const due = yield* withdrawals.dueChanges(merchantId, at)
        return effectiveFrom(new Map([...stored, ...due].map((row) => [row.setting, row.value])))
      }).pipe(Effect.orDie)

    const effective = Effect.fn("WithdrawalPolicy.effective")(function* (merchantId: string) {
      return yield* load(merchantId, yield* clock.now)
    })

    const store = withdrawals.storeSetting

    /** Pending changes whose time has come become the stored settings, each recorded in the audit log. */
    const settle = Effect.fn("WithdrawalPolicy.settle")(function* (merchantId?: string) {
      const now = yield* clock.now
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const due = yield* withdrawals.applyDueChanges(now, SERVICE_ACTOR.name, merchantId)
            for (const change of [...due].sort((a, b) => a.effective_at.getTime() - b.effective_at.getTime())) {
              yield* store(change.merchant_id, change.setting, change.value, change.effective_at)
              yield* audit.record(
                change.merchant_id,
                SERVICE_ACTOR,
                "policy.change_applied",
                change.setting,
                `${change.setting}: ${describeSetting(change.setting, change.previous_value)} → ${describeSetting(change.setting, change.value)} in force (requested change ${change.id})`
              )
            }
            return due.length
          })
        )
        .pipe(Effect.orDie)
    })

    /**
     * Pending withdrawals need at least what the policy now asks (a tightening applies to them too); a pending
     * batch, what its totals per asset now ask, on the batch and every item. Batches are locked before the
     * withdrawals, the order a batch's decision takes them in.
     */
    const raisePendingQuorum = (merchantId: string, policy: EffectivePolicy) =>
      Effect.gen(function* () {
        const batches = yield* batchStore.lockPending(merchantId)
        const pending = yield* withdrawals.lockPending(merchantId)
        for (const w of pending) {
          if (w.batch_id !== null) continue
          const needed = requiredApprovals(policy, `${w.chain}-${w.currency}`, w.amount)
          if (needed > w.required_approvals) yield* withdrawals.raiseRequiredApprovals(w.id, needed)
        }
        for (const batch of batches) {
          const needed = batchRequiredApprovals(
            policy,
            pending.filter((w) => w.batch_id === batch.id)
          )
          if (needed <= batch.required_approvals) continue
          yield* batchStore.raiseRequiredApprovals(batch.id, needed)
          yield* withdrawals.raiseBatchRequiredApprovals(batch.id, needed)
        }
      })

    /**
     * Changes settings. Each is validated first (400, nothing changed). A tightening is in force at once; a
     * loosening waits for the cooling-off in force (after this request's own tightenings) and supersedes an
     * earlier pending change of the same setting; so does a tightening.
     */
    const change = Effect.fn("WithdrawalPolicy.change")(function* (
      merchantId: string,
      requests: ReadonlyArray<{ readonly setting: string; readonly value: string | null }>,
      actor: AuditActor
    ) {
      const assets = yield* catalog.policies(merchantId)
      const wanted: Array<{ setting: string; name: SettingName; value: string | null }> = []
      for (const request of requests) {
        const name = settingName(request.setting)
        if (name === undefined)
          return yield* new InvalidPolicySetting({ reason: `unknown policy setting ${request.setting}` })
        const asset = name.asset === undefined ? undefined : assets.find((a) => a.asset_key === name.asset)
        if (PER_ASSET.includes(name.kind) && asset === undefined)
          return yield* new InvalidPolicySetting({ reason: `unknown asset ${name.asset ?? ""}` })
        const result = canonical(name, request.value)
        if ("problem" in result) return yield* new InvalidPolicySetting({ reason: result.problem })
        const amount = name.kind === "quorum_above" ? result.value?.split(":")[0] : result.value
        if (
          asset !== undefined &&
          amount !== undefined &&
          amount !== null &&
          !fitsPrecision(amount, asset.amount_precision)
        ) {
          return yield* new InvalidPolicySetting({
            reason: `${request.setting}: ${amount} has more than ${asset.amount_precision} fractional digits`
          })
        }
        if (wanted.some((w) => w.setting === request.setting))
          return yield* new InvalidPolicySetting({ reason: `${request.setting} is given twice` })
        wanted.push({ setting: request.setting, name, value: result.value })
      }
      const now = yield* clock.now
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            if (!(yield* merchants.lockMerchant(merchantId))) return yield* new MerchantNotFound({ merchantId })
            yield* settle(merchantId)
            const before = yield* load(merchantId, now)
            const supersede = (setting: string) => withdrawals.supersedeChanges(merchantId, setting, now, actor.name)
            const record = (w: (typeof wanted)[number], effectiveAt: Date, pending: boolean) =>
              Effect.gen(function* () {
                const from = before.value(w.setting)
                yield* withdrawals.insertChange({
                  id: newId("pch"),
                  merchant_id: merchantId,
                  setting: w.setting,
                  previous_value: from,
                  value: w.value,
                  requested_by: actor.name,
                  requested_at: now,
                  effective_at: effectiveAt,
                  status: pending ? "PENDING" : "APPLIED",
                  ended_at: pending ? null : now,
                  ended_by: pending ? null : actor.name
                })
                const text = `${w.setting}: ${describeValue(w.name, from)} → ${describeValue(w.name, w.value)}`
                yield* audit.record(
                  merchantId,
                  actor,
                  "policy.changed",
                  w.setting,
                  pending ? `${text}, a loosening: in force from ${effectiveAt.toISOString()}` : `${text}, in force now`
                )
                return {
                  setting: w.setting,
                  from: describeValue(w.name, from),
                  to: describeValue(w.name, w.value),
                  effectiveAt,
                  pending
                } satisfies ChangeOutcome
              })
            const outcomes: Array<ChangeOutcome> = []
            const loosenings: typeof wanted = []
            for (const w of wanted) {
              const superseded = yield* supersede(w.setting)
              if (w.value === before.value(w.setting) || (w.value === null && before.value(w.setting) === null)) {
                if (superseded.length > 0)
                  yield* audit.record(
                    merchantId,
                    actor,
                    "policy.change_cancelled",
                    w.setting,
                    `${w.setting} kept at ${describeValue(w.name, w.value)}: pending change ${superseded.join(", ")} dropped`
                  )
                continue
              }
              if (loosens(w.name, before.value(w.setting), w.value)) {
                loosenings.push(w)
                continue
              }
              yield* store(merchantId, w.setting, w.value, now)
              outcomes.push(yield* record(w, now, false))
            }
            const tightened = yield* load(merchantId, now)
            if (outcomes.length > 0) yield* raisePendingQuorum(merchantId, tightened)
            const waitUntil = new Date(now.getTime() + tightened.coolingOffSeconds * 1000)
            for (const w of loosenings) outcomes.push(yield* record(w, waitUntil, true))
            if (outcomes.length > 0)
              yield* Effect.logInfo(
                `withdrawal policy of ${merchantId} changed by ${actor.name}: ${outcomes.map((o) => `${o.setting} ${o.from} → ${o.to}${o.pending ? ` from ${o.effectiveAt.toISOString()}` : ""}`).join("; ")}`
              )
            return outcomes
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    /** The owner (or an admin, or the operator) drops a pending loosening; it never takes effect. */
    const cancelChange = Effect.fn("WithdrawalPolicy.cancelChange")(function* (
      merchantId: string,
      changeId: string,
      actor: AuditActor
    ) {
      const now = yield* clock.now
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const found = yield* withdrawals.cancelChange(merchantId, changeId, now, actor.name)
            if (Option.isNone(found)) return yield* new PolicyChangeNotFound({ changeId })
            const cancelled = found.value
            yield* audit.record(
              merchantId,
              actor,
              "policy.change_cancelled",
              cancelled.setting,
              `${cancelled.setting} → ${describeSetting(cancelled.setting, cancelled.value)} cancelled (change ${changeId})`
            )
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
    })

    /** Changes, newest first: the pending ones and the recent history. */
    const changes = Effect.fn("WithdrawalPolicy.changes")(function* (merchantId: string, limit = 50) {
      return yield* withdrawals.changes(merchantId, limit)
    })

    /** Why the policy refuses one withdrawal on its own (the address book, the per-withdrawal limit), if it does. */
    const itemRefusal = (
      merchantId: string,
      policy: EffectivePolicy,
      now: Date,
      w: {
        readonly chain: Chain
        readonly currency: string
        readonly toAddress: string
        readonly amount: string
        readonly kind?: "withdrawal" | "refund" | undefined
      }
    ) =>
      Effect.gen(function* () {
        // a refund's destination is the customer's: the address book applies only when the merchant says so
        if (w.kind === "refund" ? policy.refundAddressBook : policy.addressBook) {
          const usableFrom = yield* withdrawals.addressUsableFrom(merchantId, w.chain, addressKey(w.chain, w.toAddress))
          if (Option.isNone(usableFrom))
            return `${w.toAddress} is not in this merchant's withdrawal address book (the address book is on): a console user must add it, and it is usable after the cooling-off`
          if (usableFrom.value > now)
            return `${w.toAddress} is in the address book but still cooling off: usable from ${usableFrom.value.toISOString()}`
        }
        const perTx = policy.perTx(`${w.chain}-${w.currency}`)
        if (perTx !== undefined && new MoneyDecimal(w.amount).greaterThan(perTx))
          return `${w.amount} ${w.currency} passes the per-withdrawal limit of ${perTx.toFixed()} ${w.currency} on ${w.chain}: at most ${perTx.toFixed()} per withdrawal`
        return undefined
      })

    /**
     * A new withdrawal against the policy, inside the transaction that locks its funds (after the merchant's
     * balance row is locked, so concurrent creations count each other): the address book, the limit per
     * withdrawal and per rolling 24 h. Returns the approvals it needs and the time it was admitted at (the
     * window counts by it); a refusal is 403 and rolls back. Run again at each approval, for the pending
     * withdrawal `w.id` (left out of the 24 h total it is checked against): the policy in force when it is
     * approved rules, not the one of its creation — an address removed since, a limit tightened since, refuse.
     */
    const admit = Effect.fn("WithdrawalPolicy.admit")(function* (
      merchantId: string,
      w: {
        readonly id?: string
        readonly chain: Chain
        readonly currency: string
        readonly toAddress: string
        readonly amount: string
        /** A refund's withdrawal meets the address book only when `refund_address_book` is on (`address_book` is for the merchant's own). */
        readonly kind?: "withdrawal" | "refund"
      }
    ) {
      const now = yield* clock.now
      const policy = yield* load(merchantId, now)
      const asset = `${w.chain}-${w.currency}`
      const refused = yield* itemRefusal(merchantId, policy, now, w)
      if (refused !== undefined) return yield* new PolicyRefused({ reason: refused })
      const amount = new MoneyDecimal(w.amount)
      const perDay = policy.perDay(asset)
      if (perDay !== undefined) {
        const used = yield* withdrawals.admittedTotal(merchantId, w, new Date(now.getTime() - 86_400_000), w.id ?? "")
        const total = new MoneyDecimal(used)
        if (total.plus(amount).greaterThan(perDay)) {
          const left = MoneyDecimal.max(perDay.minus(total), 0)
          return yield* new PolicyRefused({
            reason: `${w.amount} ${w.currency} passes the rolling 24 h limit of ${perDay.toFixed()} ${w.currency} on ${w.chain}: ${total.toFixed()} used, ${left.toFixed()} left in the window`
          })
        }
      }
      return { requiredApprovals: requiredApprovals(policy, asset, w.amount), admittedAt: now }
    })

    /**
     * A batch of withdrawals against the policy, as `admit` checks one, inside the transaction that locks
     * its funds: each item on its own (the address book, the per-withdrawal limit) and, per asset, the
     * batch's total against the rolling 24 h limit. Every refusal is returned, not only the first, for the
     * caller to refuse the batch whole (403); the approvals it needs are those its total per asset needs
     * (`batchRequiredApprovals`: a batch is one decision). Run again at each approval of the pending batch
     * `batchId`, whose own items are then left out of the window's total they are added to.
     */
    const admitBatch = Effect.fn("WithdrawalPolicy.admitBatch")(function* (
      merchantId: string,
      items: ReadonlyArray<{
        readonly chain: Chain
        readonly currency: string
        readonly toAddress: string
        readonly amount: string
      }>,
      batchId?: string
    ) {
      const now = yield* clock.now
      const policy = yield* load(merchantId, now)
      const refusedItems: Array<{ readonly index: number; readonly reason: string }> = []
      const totals = new Map<
        string,
        { readonly chain: Chain; readonly currency: string; readonly amount: MoneyDecimal }
      >()
      for (const [index, w] of items.entries()) {
        const refused = yield* itemRefusal(merchantId, policy, now, w)
        if (refused !== undefined) refusedItems.push({ index, reason: refused })
        const asset = `${w.chain}-${w.currency}`
        const sum = totals.get(asset)?.amount ?? new MoneyDecimal(0)
        totals.set(asset, { chain: w.chain, currency: w.currency, amount: sum.plus(w.amount) })
      }
      const refusedTotals: Array<string> = []
      const since = new Date(now.getTime() - 86_400_000)
      for (const [asset, total] of [...totals].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        const perDay = policy.perDay(asset)
        if (perDay === undefined) continue
        const used = new MoneyDecimal(
          batchId === undefined
            ? yield* withdrawals.admittedTotal(merchantId, total, since, "")
            : yield* withdrawals.admittedTotalOutsideBatch(merchantId, total, since, batchId)
        )
        if (used.plus(total.amount).greaterThan(perDay)) {
          const left = MoneyDecimal.max(perDay.minus(used), 0)
          refusedTotals.push(
            `the batch's total of ${total.amount.toFixed()} ${total.currency} passes the rolling 24 h limit of ${perDay.toFixed()} ${total.currency} on ${total.chain}: ${used.toFixed()} used, ${left.toFixed()} left in the window`
          )
        }
      }
      return { refusedItems, refusedTotals, requiredApprovals: batchRequiredApprovals(policy, items), admittedAt: now }
    })

    return { effective, settle, change, cancelChange, changes, admit, admitBatch } as const
  }),
  dependencies: [
    MerchantStore.Default,
    WithdrawalStore.Default,
    WithdrawalBatchStore.Default,
    AssetCatalog.Default,
    AuditLog.Default
  ]
}) {}

/** Pending loosenings come due in the audit log within a minute of their time, even when nobody looks. */
export const PolicySettleLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const policy = yield* WithdrawalPolicy
    yield* policy.settle().pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("withdrawal policy: settling due changes failed; retried", cause)
      ),
      Effect.repeat(Schedule.spaced(Duration.minutes(1))),
      Effect.forkScoped
    )
  })
).pipe(Layer.provide(WithdrawalPolicy.Default))
