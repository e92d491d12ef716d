import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { WithdrawalApproval, type WithdrawalStatus } from "../domain/withdrawal.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

const WithdrawalRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  out_withdrawal_no: Schema.NullOr(Schema.String),
  status: Schema.Literal("PENDING", "APPROVED", "REJECTED", "CANCELLED", "BROADCAST", "COMPLETED", "FAILED"),
  chain: Schema.Literal("TRC20", "BEP20", "POLYGON", "SOLANA"),
  currency: Schema.String,
  amount: Schema.String,
  platform_fee: Schema.String,
  network_fee: Schema.String,
  network_fee_asset: Schema.String,
  network_fee_included: Schema.Boolean,
  total_fee: Schema.String,
  net_amount: Schema.String,
  to_address: Schema.String,
  tx_hash: Schema.NullOr(Schema.String),
  fee_policy_version: Schema.String,
  failure_reason: Schema.NullOr(Schema.String),
  operation_id: Schema.NullOr(Schema.String),
  required_approvals: Schema.Number,
  created_by_user_id: Schema.NullOr(Schema.String),
  /** A merchant's own payout, or a refund's (its destination named by the customer on the claim page). */
  kind: Schema.Literal("withdrawal", "refund"),
  refund_id: Schema.NullOr(Schema.String),
  /** The order a refund's withdrawal gives money back for. */
  refund_order_id: Schema.NullOr(Schema.String),
  batch_id: Schema.NullOr(Schema.String),
  approvals: Schema.Array(WithdrawalApproval),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type WithdrawalRow = typeof WithdrawalRow.Type
const COLUMNS = `id, merchant_id, out_withdrawal_no, status, chain, currency, amount::text AS amount, platform_fee::text AS platform_fee,
  network_fee::text AS network_fee, network_fee_asset, network_fee_included, total_fee::text AS total_fee, net_amount::text AS net_amount,
  to_address, tx_hash, fee_policy_version, failure_reason, operation_id, required_approvals, created_by_user_id, batch_id,
  kind, refund_id, (SELECT r.order_id FROM refunds r WHERE r.id = withdrawals.refund_id) AS refund_order_id,
  (SELECT coalesce(json_agg(json_build_object('approved_by', a.approved_by, 'approver_kind', a.approver_kind,
            'approved_at', to_char(a.approved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY a.approved_at), '[]'::json)
   FROM withdrawal_approvals a WHERE a.withdrawal_id = withdrawals.id) AS approvals,
  created_at, updated_at`

/** A withdrawal as `npm run withdrawals -- list` prints it (one JSON line each, in this order). */
const OperatorRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  status: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  amount: Schema.String,
  net_amount: Schema.String,
  to_address: Schema.String,
  tx_hash: Schema.NullOr(Schema.String),
  decided_by: Schema.NullOr(Schema.String),
  decided_at: Schema.NullOr(Schema.DateFromSelf),
  decision_reason: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf
})

/** A new withdrawal with its fee snapshot, as the request side stores it. */
export type NewWithdrawal = {
  readonly id: string
  readonly merchant_id: string
  readonly out_withdrawal_no: string | null
  readonly status: "PENDING"
  readonly chain: Chain
  readonly currency: string
  readonly amount: string
  readonly platform_fee: string
  readonly platform_fee_bps: number
  readonly network_fee: string
  readonly network_fee_asset: string
  readonly network_fee_included: boolean
  readonly total_fee: string
  readonly net_amount: string
  readonly fee_model: string
  readonly fee_policy_version: string
  readonly to_address: string
  readonly required_approvals: number
  readonly admitted_at: Date
  readonly created_by: string
  readonly created_by_user_id: string | null
  /** A refund's withdrawal (default: a merchant's own). */
  readonly kind?: "withdrawal" | "refund"
  readonly refund_id?: string
}

/** An item of a withdrawal batch: a new withdrawal with its batch and its place in the request. */
export type NewBatchItem = NewWithdrawal & { readonly batch_id: string; readonly batch_index: number }

/** An approval of a withdrawal, as recorded (one per person; at most one that is not a console user's). */
export type NewApproval = {
  readonly withdrawal_id: string
  readonly approver_kind: "console_user" | "operator" | "policy"
  readonly user_id: string | null
  readonly approved_by: string
  readonly from_address: string
  readonly user_agent: string
}

/** A PENDING withdrawal as a tightened quorum re-reads it (an item of a batch with its batch: judged with it). */
const PendingRow = Schema.Struct({
  id: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  amount: Schema.String,
  required_approvals: Schema.Number,
  batch_id: Schema.NullOr(Schema.String)
})

// ---- the withdrawal policy's rows

/** A setting's value (stored, or of a change due), by its name; null = unset (the default). */
const SettingRow = Schema.Struct({ setting: Schema.String, value: Schema.NullOr(Schema.String) })

const ChangeRow = Schema.Struct({
  id: Schema.String,
  setting: Schema.String,
  previous_value: Schema.NullOr(Schema.String),
  value: Schema.NullOr(Schema.String),
  requested_by: Schema.String,
  requested_at: Schema.DateFromSelf,
  effective_at: Schema.DateFromSelf,
  status: Schema.Literal("PENDING", "APPLIED", "CANCELLED", "SUPERSEDED"),
  ended_by: Schema.NullOr(Schema.String)
})
export type PolicyChange = typeof ChangeRow.Type

/** A pending change whose time came, as it is applied. */
const AppliedRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  setting: Schema.String,
  value: Schema.NullOr(Schema.String),
  previous_value: Schema.NullOr(Schema.String),
  effective_at: Schema.DateFromSelf
})

/** A new row of `withdrawal_policy_changes`: applied at once (a tightening) or pending until `effective_at`. */
export type NewPolicyChange = {
  readonly id: string
  readonly merchant_id: string
  readonly setting: string
  readonly previous_value: string | null
  readonly value: string | null
  readonly requested_by: string
  readonly requested_at: Date
  readonly effective_at: Date
  readonly status: "PENDING" | "APPLIED"
  readonly ended_at: Date | null
  readonly ended_by: string | null
}

// ---- the address book's rows

const EntryRow = Schema.Struct({
  id: Schema.String,
  chain: Chain,
  address: Schema.String,
  label: Schema.String,
  created_by: Schema.String,
  created_at: Schema.DateFromSelf,
  usable_from: Schema.DateFromSelf
})

/** A new address book entry (its key: the address as compared, per chain). */
export type NewAddressEntry = {
  readonly id: string
  readonly merchant_id: string
  readonly chain: Chain
  readonly address: string
  readonly address_key: string
  readonly label: string
  readonly created_by: string
  readonly created_at: Date
  readonly usable_from: Date
}

const RemovedRow = Schema.Struct({ chain: Schema.String, address: Schema.String, usable_from: Schema.DateFromSelf })
const UsableRow = Schema.Struct({ usable_from: Schema.DateFromSelf })
const IdRow = Schema.Struct({ id: Schema.String })
const CountRow = Schema.Struct({ n: Schema.Number })
const TotalRow = Schema.Struct({ total: Schema.String })
const TakenRow = Schema.Struct({ id: Schema.String, out_withdrawal_no: Schema.String })

/**
 * Every statement on the withdrawals' tables: `withdrawals` (with their fee snapshot and decision),
 * `withdrawal_approvals`, the policy's `withdrawal_policy_settings` and `withdrawal_policy_changes`, and the
 * address book `withdrawal_addresses`. A statement runs in the caller's transaction when it has one.
 */
export class WithdrawalStore extends Effect.Service<WithdrawalStore>()("facet/WithdrawalStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // ---- withdrawals

    /** One withdrawal (of one merchant when given), locked for the caller's transaction when asked. */
    const find = (where: { readonly id: string; readonly merchantId?: string | undefined; readonly lock?: boolean }) =>
      sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawals WHERE id = ${where.id}
          ${where.merchantId === undefined ? sql`` : sql`AND merchant_id = ${where.merchantId}`} ${where.lock === true ? sql`FOR UPDATE` : sql``}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeFirst(WithdrawalRow))
      )

    /** A page of a merchant's withdrawals, newest first, with how many there are in all. */
    const page = Effect.fn("WithdrawalStore.page")(function* (
      merchantId: string,
      query: {
        readonly status?: WithdrawalStatus | undefined
        readonly limit: number
        readonly offset: number
        /** false: only withdrawals that are no batch's item (the console's list); absent: all. */
        readonly inBatch?: boolean | undefined
      }
    ) {
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
        ...(query.inBatch === false ? [sql`batch_id IS NULL`] : [])
      ])
      const total = yield* Effect.orDie(sql`SELECT count(*)::int AS n FROM withdrawals WHERE ${where}`).pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
      const rows =
        yield* Effect.orDie(sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawals WHERE ${where} ORDER BY created_at DESC, id DESC
                              LIMIT ${query.limit} OFFSET ${query.offset}`).pipe(
          Effect.flatMap(decodeAll(WithdrawalRow))
        )
      return { total, rows }
    })

    /** Every merchant's withdrawals, newest first, with the merchant and the decision (operators only). */
    const listAll = Effect.fn("WithdrawalStore.listAll")(function* (query: {
      readonly status?: WithdrawalStatus | undefined
      readonly limit: number
    }) {
      return yield* sql`
        SELECT id, merchant_id, status, chain, currency, amount::text AS amount, net_amount::text AS net_amount, to_address, tx_hash,
               decided_by, decided_at, decision_reason, failure_reason, created_at
        FROM withdrawals ${query.status === undefined ? sql`` : sql`WHERE status = ${query.status}`}
        ORDER BY created_at DESC LIMIT ${query.limit}`.pipe(Effect.flatMap(decodeAll(OperatorRow)))
    })

    /** A new withdrawal, unless its `out_withdrawal_no` is the merchant's already: true when this call stored it. */
    const insert = Effect.fn("WithdrawalStore.insert")(function* (row: NewWithdrawal) {
      const inserted = yield* sql`
          INSERT INTO withdrawals ${sql.insert(row)}
          ON CONFLICT (merchant_id, out_withdrawal_no) WHERE out_withdrawal_no IS NOT NULL DO NOTHING RETURNING id`
      return inserted.length > 0
    })

    /**
     * The total of a merchant's withdrawals of an asset the auto-approval policy (`approver`) approved in
     * the rolling 24 h, not since refused or failed.
     */
    const autoApprovedTotal = Effect.fn("WithdrawalStore.autoApprovedTotal")(function* (
      merchantId: string,
      asset: { readonly chain: Chain; readonly currency: string },
      approver: string
    ) {
      return yield* sql`
          SELECT coalesce(sum(amount), 0)::text AS total FROM withdrawals
          WHERE merchant_id = ${merchantId} AND chain = ${asset.chain} AND currency = ${asset.currency}
            AND decided_by = ${approver} AND created_at > clock_timestamp() - interval '24 hours'
            AND status NOT IN ('REJECTED', 'CANCELLED', 'FAILED')`.pipe(
        Effect.flatMap(decodeScalar(TotalRow, "total", () => "0"))
      )
    })

    /**
     * The total of a merchant's withdrawals of an asset admitted since `since`, not refused or failed,
     * `except` one (a pending withdrawal checked again at its approval).
     */
    const admittedTotal = Effect.fn("WithdrawalStore.admittedTotal")(function* (
      merchantId: string,
      asset: { readonly chain: Chain; readonly currency: string },
      since: Date,
      except: string
    ) {
      return yield* Effect.orDie(sql`
          SELECT coalesce(sum(amount), 0)::text AS total FROM withdrawals
          WHERE merchant_id = ${merchantId} AND chain = ${asset.chain} AND currency = ${asset.currency}
            AND status NOT IN ('REJECTED', 'CANCELLED', 'FAILED') AND admitted_at > ${since}
            AND id <> ${except}`).pipe(Effect.flatMap(decodeScalar(TotalRow, "total", () => "0")))
    })

    /** PENDING withdrawals created more than `hours` ago (the first 100): nobody decided them in time (a batch's items expire with their batch). */
    const undecidedFor = Effect.fn("WithdrawalStore.undecidedFor")(function* (hours: number) {
      const due = yield* Effect.orDie(sql`
        SELECT id FROM withdrawals WHERE status = 'PENDING' AND batch_id IS NULL
          AND created_at < clock_timestamp() - ${hours} * interval '1 hour' LIMIT 100`).pipe(
        Effect.flatMap(decodeAll(IdRow))
      )
      return due.map((row) => row.id)
    })

    /** A merchant's PENDING withdrawals, locked for the caller's transaction (a tightened quorum applies to them). */
    const lockPending = (merchantId: string) =>
      sql`
          SELECT id, chain, currency, amount::text AS amount, required_approvals, batch_id FROM withdrawals
          WHERE merchant_id = ${merchantId} AND status = 'PENDING' FOR UPDATE`.pipe(
        Effect.flatMap(decodeAll(PendingRow))
      )

    const raiseRequiredApprovals = (id: string, required: number) =>
      sql`UPDATE withdrawals SET required_approvals = ${required}, updated_at = clock_timestamp() WHERE id = ${id}`.pipe(
        Effect.asVoid
      )

    /** What a decision sets on a withdrawal (one, or a batch's items); a rejection or cancellation finishes it. */
    const decisionColumns = (
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      by: string,
      from: string,
      reason: string | null
    ) =>
      sql`status = ${decision}, decided_by = ${by}, decided_at = clock_timestamp(), decided_from = ${from},
          decision_reason = ${reason}, updated_at = clock_timestamp(),
          finished_at = ${decision === "APPROVED" ? null : sql`clock_timestamp()`}`

    /** The human (or policy, or expiry) decision. */
    const recordDecision = (
      id: string,
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      by: string,
      from: string,
      reason: string | null
    ) => sql`UPDATE withdrawals SET ${decisionColumns(decision, by, from, reason)} WHERE id = ${id}`.pipe(Effect.asVoid)

    /** The custody operation that sends an approved withdrawal. */
    const attachOperation = (id: string, operationId: string) =>
      sql`UPDATE withdrawals SET operation_id = ${operationId} WHERE id = ${id}`.pipe(Effect.asVoid)

    /** Its operation's transaction was accepted by a node (again: the hash of a replacement), in the caller's transaction. */
    const markBroadcast = (operationId: string, txHash: string) =>
      sql`UPDATE withdrawals SET status = 'BROADCAST', tx_hash = ${txHash}, updated_at = clock_timestamp()
                   WHERE operation_id = ${operationId} AND status IN ('APPROVED', 'BROADCAST')`.pipe(Effect.asVoid)

    const markFailed = (id: string, reason: string) =>
      sql`UPDATE withdrawals SET status = 'FAILED', failure_reason = ${reason}, updated_at = clock_timestamp(), finished_at = clock_timestamp() WHERE id = ${id}`.pipe(
        Effect.asVoid
      )

    const markCompleted = (id: string, txHash: string) =>
      sql`UPDATE withdrawals SET status = 'COMPLETED', tx_hash = ${txHash}, updated_at = clock_timestamp(), finished_at = clock_timestamp() WHERE id = ${id}`.pipe(
        Effect.asVoid
      )

    // ---- the items of withdrawal batches (WithdrawalBatches; the batches are WithdrawalBatchStore's)

    /**
     * A batch's items, in one statement, unless an `out_withdrawal_no` is the merchant's already (a
     * withdrawal stored since the batch was checked): the ids of the items this call stored.
     */
    const insertBatchItems = Effect.fn("WithdrawalStore.insertBatchItems")(function* (
      rows: ReadonlyArray<NewBatchItem>
    ) {
      const inserted = yield* sql`
          INSERT INTO withdrawals ${sql.insert(rows)}
          ON CONFLICT (merchant_id, out_withdrawal_no) WHERE out_withdrawal_no IS NOT NULL DO NOTHING RETURNING id`.pipe(
        Effect.flatMap(decodeAll(IdRow))
      )
      return new Set(inserted.map((row) => row.id))
    })

    /** Which of these references the merchant's withdrawals already use, with the withdrawal using each. */
    const takenOutWithdrawalNos = Effect.fn("WithdrawalStore.takenOutWithdrawalNos")(function* (
      merchantId: string,
      outWithdrawalNos: ReadonlyArray<string>
    ) {
      if (outWithdrawalNos.length === 0) return new Map<string, string>()
      const rows = yield* Effect.orDie(sql`
          SELECT id, out_withdrawal_no FROM withdrawals
          WHERE merchant_id = ${merchantId} AND out_withdrawal_no = ANY(${outWithdrawalNos}::text[])`).pipe(
        Effect.flatMap(decodeAll(TakenRow))
      )
      return new Map(rows.map((row) => [row.out_withdrawal_no, row.id]))
    })

    /** A batch's items in request order, locked for the caller's transaction when asked. */
    const batchItems = (batchId: string, lock = false) =>
      sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawals WHERE batch_id = ${batchId} ORDER BY batch_index
          ${lock ? sql`FOR UPDATE` : sql``}`.pipe(Effect.flatMap(decodeAll(WithdrawalRow)))

    /** A page of a batch's items in request order (of one status when given), with how many there are. */
    const batchItemPage = Effect.fn("WithdrawalStore.batchItemPage")(function* (
      merchantId: string,
      batchId: string,
      query: { readonly status?: WithdrawalStatus | undefined; readonly limit: number; readonly offset: number }
    ) {
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        sql`batch_id = ${batchId}`,
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`])
      ])
      const total = yield* Effect.orDie(sql`SELECT count(*)::int AS n FROM withdrawals WHERE ${where}`).pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
      const rows =
        yield* Effect.orDie(sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawals WHERE ${where} ORDER BY batch_index
                              LIMIT ${query.limit} OFFSET ${query.offset}`).pipe(
          Effect.flatMap(decodeAll(WithdrawalRow))
        )
      return { total, rows }
    })

    /** The batch's decision on its PENDING items, in one statement: how many it decided. */
    const decideBatchItems = (
      batchId: string,
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      by: string,
      from: string,
      reason: string | null
    ) =>
      sql`UPDATE withdrawals SET ${decisionColumns(decision, by, from, reason)}
          WHERE batch_id = ${batchId} AND status = 'PENDING' RETURNING id`.pipe(
        Effect.flatMap(decodeAll(IdRow)),
        Effect.map((rows) => rows.length)
      )

    /** An approval of a batch, recorded on each of its items too (so each shows who approved it). */
    const insertBatchItemApprovals = (batchId: string, approval: Omit<NewApproval, "withdrawal_id">) =>
      sql`INSERT INTO withdrawal_approvals (withdrawal_id, approver_kind, user_id, approved_by, from_address, user_agent)
          SELECT id, ${approval.approver_kind}, ${approval.user_id}, ${approval.approved_by}, ${approval.from_address}, ${approval.user_agent}
          FROM withdrawals WHERE batch_id = ${batchId}`.pipe(Effect.asVoid)

    /** A batch's items need at least what the batch needs. */
    const raiseBatchRequiredApprovals = (batchId: string, required: number) =>
      sql`UPDATE withdrawals SET required_approvals = ${required}, updated_at = clock_timestamp()
          WHERE batch_id = ${batchId} AND required_approvals < ${required}`.pipe(Effect.asVoid)

    /** The custody operations that send approved items, in one statement. */
    const attachOperations = (pairs: ReadonlyArray<{ readonly id: string; readonly operationId: string }>) =>
      sql`UPDATE withdrawals w SET operation_id = v.operation_id
          FROM unnest(${pairs.map((p) => p.id)}::text[], ${pairs.map((p) => p.operationId)}::text[]) AS v (id, operation_id)
          WHERE w.id = v.id`.pipe(Effect.asVoid)

    /**
     * As `admittedTotal`, leaving out every item of one batch (a pending batch checked again at an
     * approval: its items are added to the total as the batch's).
     */
    const admittedTotalOutsideBatch = Effect.fn("WithdrawalStore.admittedTotalOutsideBatch")(function* (
      merchantId: string,
      asset: { readonly chain: Chain; readonly currency: string },
      since: Date,
      batchId: string
    ) {
      return yield* Effect.orDie(sql`
          SELECT coalesce(sum(amount), 0)::text AS total FROM withdrawals
          WHERE merchant_id = ${merchantId} AND chain = ${asset.chain} AND currency = ${asset.currency}
            AND status NOT IN ('REJECTED', 'CANCELLED', 'FAILED') AND admitted_at > ${since}
            AND batch_id IS DISTINCT FROM ${batchId}`).pipe(Effect.flatMap(decodeScalar(TotalRow, "total", () => "0")))
    })

    /** A devnet reset: every withdrawal goes (they were paid from the chains' balances that go). */
    const forgetAll = Effect.zipRight(
      // their approvals first: the reference has no ON DELETE (migration 0015), so an approved withdrawal
      // would otherwise stop the reset
      sql`DELETE FROM withdrawal_approvals`,
      sql`DELETE FROM withdrawals`
    ).pipe(Effect.asVoid)

    // ---- approvals

    const insertApproval = (approval: NewApproval) =>
      sql`INSERT INTO withdrawal_approvals ${sql.insert(approval)}`.pipe(Effect.asVoid)

    /**
     * The approvals of a withdrawal that count: all but those of a user removed since (so it reads whether
     * their console user is still there).
     */
    const countedApprovals = Effect.fn("WithdrawalStore.countedApprovals")(function* (withdrawalId: string) {
      return yield* sql`
            SELECT count(*)::int AS n FROM withdrawal_approvals a LEFT JOIN console_users u ON u.id = a.user_id
            WHERE a.withdrawal_id = ${withdrawalId} AND (u.id IS NULL OR u.removed_at IS NULL)`.pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
    })

    // ---- the withdrawal policy

    /** A merchant's stored settings. */
    const policySettings = (merchantId: string) =>
      sql`SELECT setting, value FROM withdrawal_policy_settings WHERE merchant_id = ${merchantId}`.pipe(
        Effect.flatMap(decodeAll(SettingRow))
      )

    /** A merchant's pending changes already due at `at` (in force even before they are settled). */
    const dueChanges = (merchantId: string, at: Date) =>
      sql`
          SELECT setting, value FROM withdrawal_policy_changes
          WHERE merchant_id = ${merchantId} AND status = 'PENDING' AND effective_at <= ${at}`.pipe(
        Effect.flatMap(decodeAll(SettingRow))
      )

    const storeSetting = (merchantId: string, setting: string, value: string | null, at: Date) =>
      sql`INSERT INTO withdrawal_policy_settings ${sql.insert({ merchant_id: merchantId, setting, value, updated_at: at })}
          ON CONFLICT (merchant_id, setting) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`.pipe(
        Effect.asVoid
      )

    /** Pending changes due at `now` (of one merchant when given) marked APPLIED by `by`: the changes. */
    const applyDueChanges = (now: Date, by: string, merchantId?: string) =>
      sql`
          UPDATE withdrawal_policy_changes SET status = 'APPLIED', ended_at = effective_at, ended_by = ${by}
          WHERE status = 'PENDING' AND effective_at <= ${now} ${merchantId === undefined ? sql`` : sql`AND merchant_id = ${merchantId}`}
          RETURNING id, merchant_id, setting, value, previous_value, effective_at`.pipe(
        Effect.flatMap(decodeAll(AppliedRow))
      )

    /** A setting's pending change superseded (by a newer request): the ids superseded. */
    const supersedeChanges = (merchantId: string, setting: string, now: Date, by: string) =>
      sql`UPDATE withdrawal_policy_changes SET status = 'SUPERSEDED', ended_at = ${now}, ended_by = ${by}
                              WHERE merchant_id = ${merchantId} AND setting = ${setting} AND status = 'PENDING' RETURNING id`.pipe(
        Effect.flatMap(decodeAll(IdRow)),
        Effect.map((rows) => rows.map((row) => row.id))
      )

    const insertChange = (change: NewPolicyChange) =>
      sql`INSERT INTO withdrawal_policy_changes ${sql.insert(change)}`.pipe(Effect.asVoid)

    /** A pending change not yet in force cancelled: its setting and value, none when there is no such change. */
    const cancelChange = (merchantId: string, changeId: string, now: Date, by: string) =>
      sql`
          UPDATE withdrawal_policy_changes SET status = 'CANCELLED', ended_at = ${now}, ended_by = ${by}
          WHERE id = ${changeId} AND merchant_id = ${merchantId} AND status = 'PENDING' AND effective_at > ${now} RETURNING setting, value`.pipe(
        Effect.flatMap(decodeFirst(SettingRow))
      )

    /** Changes, newest first: the pending ones and the recent history. */
    const changes = Effect.fn("WithdrawalStore.changes")(function* (merchantId: string, limit: number) {
      return yield* sql`SELECT id, setting, previous_value, value, requested_by, requested_at, effective_at, status, ended_by
                        FROM withdrawal_policy_changes WHERE merchant_id = ${merchantId}
                        ORDER BY (status = 'PENDING') DESC, requested_at DESC LIMIT ${limit}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeAll(ChangeRow))
      )
    })

    // ---- the address book

    /** A new entry, unless the address is in the book already: true when this call stored it. */
    const insertAddress = (entry: NewAddressEntry) =>
      Effect.map(
        sql`
          INSERT INTO withdrawal_addresses ${sql.insert(entry)} ON CONFLICT (merchant_id, chain, address_key) WHERE removed_at IS NULL DO NOTHING RETURNING id`,
        (inserted) => inserted.length > 0
      )

    /** A live entry removed at `now` by `by`: what it was, none when there is no such entry. */
    const removeAddress = (merchantId: string, id: string, now: Date, by: string) =>
      sql`
          UPDATE withdrawal_addresses SET removed_at = ${now}, removed_by = ${by}
          WHERE id = ${id} AND merchant_id = ${merchantId} AND removed_at IS NULL RETURNING chain, address, usable_from`.pipe(
        Effect.flatMap(decodeFirst(RemovedRow))
      )

    /** A page of a merchant's live entries (of one chain when given), newest first, with how many there are. */
    const addressPage = Effect.fn("WithdrawalStore.addressPage")(function* (
      merchantId: string,
      query: { readonly chain?: Chain | undefined; readonly limit: number; readonly offset: number }
    ) {
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        sql`removed_at IS NULL`,
        ...(query.chain === undefined ? [] : [sql`chain = ${query.chain}`])
      ])
      const total = yield* Effect.orDie(sql`SELECT count(*)::int AS n FROM withdrawal_addresses WHERE ${where}`).pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
      const rows =
        yield* sql`SELECT id, chain, address, label, created_by, created_at, usable_from FROM withdrawal_addresses WHERE ${where}
                              ORDER BY created_at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeAll(EntryRow))
        )
      return { total, rows }
    })

    /** The live entry for an address key on a chain: its id, none when the address is not in the book. */
    const addressEntryId = Effect.fn("WithdrawalStore.addressEntryId")(function* (
      merchantId: string,
      chain: Chain,
      addressKey: string
    ) {
      const rows = yield* Effect.orDie(sql`
        SELECT id FROM withdrawal_addresses WHERE merchant_id = ${merchantId} AND chain = ${chain} AND address_key = ${addressKey} AND removed_at IS NULL`).pipe(
        Effect.flatMap(decodeFirst(IdRow))
      )
      return Option.map(rows, (row) => row.id)
    })

    /** When the live entry for an address key becomes usable; none when the address is not in the book. */
    const addressUsableFrom = Effect.fn("WithdrawalStore.addressUsableFrom")(function* (
      merchantId: string,
      chain: Chain,
      addressKey: string
    ) {
      const entry = yield* Effect.orDie(sql`
          SELECT usable_from FROM withdrawal_addresses
          WHERE merchant_id = ${merchantId} AND chain = ${chain} AND address_key = ${addressKey} AND removed_at IS NULL`).pipe(
        Effect.flatMap(decodeFirst(UsableRow))
      )
      return Option.map(entry, (row) => row.usable_from)
    })

    return {
      find,
      page,
      listAll,
      insert,
      autoApprovedTotal,
      admittedTotal,
      undecidedFor,
      lockPending,
      raiseRequiredApprovals,
      recordDecision,
      attachOperation,
      markBroadcast,
      markFailed,
      markCompleted,
      insertBatchItems,
      takenOutWithdrawalNos,
      batchItems,
      batchItemPage,
      decideBatchItems,
      insertBatchItemApprovals,
      raiseBatchRequiredApprovals,
      attachOperations,
      admittedTotalOutsideBatch,
      forgetAll,
      insertApproval,
      countedApprovals,
      policySettings,
      dueChanges,
      storeSetting,
      applyDueChanges,
      supersedeChanges,
      insertChange,
      cancelChange,
      changes,
      insertAddress,
      removeAddress,
      addressPage,
      addressEntryId,
      addressUsableFrom
    } as const
  })
}) {}
