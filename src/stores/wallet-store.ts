import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { copyOut } from "../database/copy-out.js"
import { Chain } from "../domain/chain.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

const KeyFamily = Schema.Literal("TRON", "EVM", "SOLANA")

/** A receive wallet as its insert returns it. */
const ReceiveWalletRow = Schema.Struct({
  id: Schema.String,
  wallet_no: Schema.String,
  network: Chain,
  address: Schema.String,
  external_user_id: Schema.NullOr(Schema.String)
})
export type ReceiveWalletRow = typeof ReceiveWalletRow.Type

/** A wallet with what derives its key. */
const OwnedWalletRow = Schema.Struct({
  id: Schema.String,
  address: Schema.String,
  family: KeyFamily,
  key_account: Schema.Number,
  address_index: Schema.Number
})
export type OwnedWalletRow = typeof OwnedWalletRow.Type

/** Any wallet by id: its key, owner, kind and network. */
const WalletRow = Schema.Struct({
  ...OwnedWalletRow.fields,
  merchant_id: Schema.NullOr(Schema.String),
  kind: Schema.String,
  purpose: Schema.Literal("order", "deposit", "main", "gas"),
  network: Chain
})
export type WalletRow = typeof WalletRow.Type

/** A merchant's deposit wallet (one per external user and network). */
const DepositWalletRow = Schema.Struct({
  id: Schema.String,
  external_user_id: Schema.NullOr(Schema.String),
  network: Schema.String,
  address: Schema.String
})

/** A deposit address with its wallet's number and its confirmed deposits' total. */
const DepositAddressRow = Schema.Struct({
  id: Schema.String,
  external_user_id: Schema.String,
  chain: Chain,
  currency: Schema.String,
  wallet_id: Schema.String,
  wallet_no: Schema.String,
  address: Schema.String,
  label: Schema.NullOr(Schema.String),
  status: Schema.String,
  balance: Schema.String,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type DepositAddressRow = typeof DepositAddressRow.Type

/** A watched wallet as the indexer's watch list pages through them. */
const WatchedWalletRow = Schema.Struct({
  seq: Schema.NumberFromString,
  id: Schema.String,
  merchant_id: Schema.String,
  purpose: Schema.Literal("order", "deposit"),
  address: Schema.String
})
export type WatchedWalletRow = typeof WatchedWalletRow.Type

/** A receive wallet of an asset with its uncollected balance (base units), last payment and sweep in flight. */
const AssetWalletRow = Schema.Struct({
  id: Schema.String,
  wallet_no: Schema.String,
  address: Schema.String,
  purpose: Schema.String,
  external_user_id: Schema.NullOr(Schema.String),
  units: Schema.String,
  last_tx_hash: Schema.NullOr(Schema.String),
  sweep: Schema.NullOr(Schema.String),
  total: Schema.Number
})
export type AssetWalletRow = typeof AssetWalletRow.Type

const SeqAddressRow = Schema.Struct({ seq: Schema.String, address: Schema.String })
const EarliestRow = Schema.Struct({ earliest: Schema.NullOr(Schema.DateFromSelf) })
const FirstIndexRow = Schema.Struct({ first: Schema.Number })
const SettledRow = Schema.Struct({ settled: Schema.String })
const CountRow = Schema.Struct({ n: Schema.Number })
const CountTextRow = Schema.Struct({ n: Schema.String })
const TotalRow = Schema.Struct({ total: Schema.String })
const KindRow = Schema.Struct({ kind: Schema.String })
const NetworkCountRow = Schema.Struct({ network: Schema.String, n: Schema.Number })

/**
 * The addresses watched: receive wallets (deposit addresses, order addresses) and the merchants' main
 * wallets, so coins sent to a main address from outside are credited as deposits there (never lost);
 * custody's own transfers into them are told apart by their hashes, as everywhere.
 */
const WATCHED_KINDS_TEXT = "w.kind IN ('receive', 'main')"
const WATCHED_PURPOSE_TEXT = "CASE WHEN w.purpose = 'main' THEN 'deposit' ELSE w.purpose END"

/** Which deposit addresses a list or count covers. */
export interface DepositAddressFilter {
  readonly merchantId: string
  readonly externalUserId?: string | undefined
  readonly chain?: Chain | undefined
  /** Already normalised (trimmed, upper case). */
  readonly currency?: string | undefined
}

/**
 * Every statement on the wallets' tables: `wallets` (every address the service controls), `key_index_counters`
 * (the next HD index per account and key family) and `deposit_addresses` (a merchant's user's address per
 * asset). A statement runs in the caller's transaction when it has one. Other owners' statements that join
 * these tables compose the fragments marked so (one statement, no round trip more).
 */
export class WalletStore extends Effect.Service<WalletStore>()("facet/WalletStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // ---- key indexes and wallets

    /** Reserves `count` indexes of an account's key family in one atomic update: the first of them. */
    const reserveIndexes = (keyAccount: number, family: typeof KeyFamily.Type, count: number) =>
      sql`
          INSERT INTO key_index_counters (key_account, family, next_index) VALUES (${keyAccount}, ${family}, ${count})
          ON CONFLICT (key_account, family) DO UPDATE SET next_index = key_index_counters.next_index + ${count}
          RETURNING next_index - ${count} AS first`.pipe(Effect.flatMap(decodeScalar(FirstIndexRow, "first", () => 0)))

    /** New receive wallets (rows of the `wallets` columns), as stored. */
    const insertReceive = (rows: ReadonlyArray<Record<string, string | number | null>>) =>
      sql`
          INSERT INTO wallets ${sql.insert(rows)} RETURNING id, wallet_no, network, address, external_user_id`.pipe(
        Effect.flatMap(decodeAll(ReceiveWalletRow))
      )

    /** A main, gas or staking wallet (gas and staking: the platform's, no merchant). */
    const findOwned = (where: {
      readonly kind: "main" | "gas" | "staking"
      readonly network: Chain
      readonly merchantId: string | null
    }) =>
      sql`
          SELECT id, address, family, key_account, address_index FROM wallets
          WHERE kind = ${where.kind} AND network = ${where.network}
            AND ${where.merchantId === null ? sql`merchant_id IS NULL` : sql`merchant_id = ${where.merchantId}`}`.pipe(
        Effect.flatMap(decodeFirst(OwnedWalletRow))
      )

    /** A main, gas or staking wallet stored unless one is: a racing process may have made it first (its row wins). */
    const insertOwned = (row: Record<string, string | number | null>) =>
      sql`
          INSERT INTO wallets ${sql.insert(row)}
          ON CONFLICT DO NOTHING`.pipe(Effect.asVoid)

    const byId = (walletId: string) =>
      sql`
        SELECT id, address, family, key_account, address_index, merchant_id, kind, purpose, network FROM wallets WHERE id = ${walletId}`.pipe(
        Effect.flatMap(decodeFirst(WalletRow))
      )

    /** The merchant's deposit wallets of these external users, every network. */
    const depositWalletsOf = (merchantId: string, externalUserIds: ReadonlyArray<string>) =>
      sql`
            SELECT id, external_user_id, network, address FROM wallets
            WHERE merchant_id = ${merchantId} AND purpose = 'deposit' AND ${sql.in("external_user_id", externalUserIds)}`.pipe(
        Effect.flatMap(decodeAll(DepositWalletRow))
      )

    /** Which of the service's own wallets an address is, on a chain (`lowered`: compared lower-cased, EVM). */
    const ownWalletKind = (chain: Chain, address: string, lowered: boolean) =>
      sql`
    SELECT kind FROM wallets WHERE network = ${chain}
      AND ${lowered ? sql`lower(address) = ${address}` : sql`address = ${address}`} LIMIT 1`.pipe(
        Effect.flatMap(decodeFirst(KindRow)),
        Effect.map(Option.map((row) => row.kind))
      )

    // ---- what the indexer watches

    /**
     * When the oldest watched address of a chain (receive and main wallets) was made, if any: one issued
     * before its chain's indexer first ran may have been paid before the head it would start at.
     */
    const earliestWatched = (chain: string) =>
      sql`SELECT min(created_at) AS earliest FROM wallets WHERE network = ${chain} AND kind IN ('receive', 'main')`.pipe(
        Effect.flatMap(decodeFirst(EarliestRow)),
        Effect.map(Option.flatMap((row) => Option.fromNullable(row.earliest)))
      )

    /** The number below which every wallet's transaction has ended (migration 0007). */
    const settledSeq = sql`SELECT wallets_settled_seq()::text AS settled`.pipe(
      Effect.flatMap(decodeFirst(SettledRow)),
      Effect.map(Option.match({ onNone: () => 0, onSome: (row) => Number(row.settled) }))
    )

    /** A page of a chain's watched wallets numbered in (after, upTo], in sequence order. */
    const watchedPage = (chain: Chain, after: number, upTo: number, limit: number) =>
      sql`
        SELECT w.seq::text AS seq, w.id, w.merchant_id, ${sql.literal(WATCHED_PURPOSE_TEXT)} AS purpose, w.address FROM wallets w
        WHERE w.network = ${chain} AND ${sql.literal(WATCHED_KINDS_TEXT)} AND w.seq > ${after} AND w.seq <= ${upTo}
        ORDER BY w.seq LIMIT ${limit}`.pipe(Effect.flatMap(decodeAll(WatchedWalletRow)))

    /** How many of a chain's watched wallets are numbered in (after, upTo]. */
    const watchedCount = (chain: Chain, after: number, upTo: number) =>
      sql`
        SELECT count(*)::text AS n FROM wallets w WHERE w.network = ${chain} AND ${sql.literal(WATCHED_KINDS_TEXT)} AND w.seq > ${after} AND w.seq <= ${upTo}`.pipe(
        Effect.flatMap(decodeFirst(CountTextRow)),
        Effect.map(Option.match({ onNone: () => 0, onSome: (row) => Number(row.n) }))
      )

    /**
     * The watched wallets numbered in (after, upTo] as COPY text (address, id, merchant, purpose), each chunk
     * of bytes handed to `onChunk`: no JS object per row.
     */
    const copyWatched = (chain: Chain, after: number, upTo: number, onChunk: (chunk: Buffer) => void) => {
      // COPY takes no parameters: the chain is one of the Chain literals, the numbers are integers
      const from = Math.trunc(after)
      const to = Math.trunc(upTo)
      return copyOut(
        `SELECT w.address, w.id, w.merchant_id, ${WATCHED_PURPOSE_TEXT} AS purpose FROM wallets w
         WHERE w.network = '${chain}' AND ${WATCHED_KINDS_TEXT} AND w.seq > ${from} AND w.seq <= ${to}`,
        onChunk
      )
    }

    /**
     * A page of a chain's receive and main wallets after `afterSeq` (keyset on seq). `w.seq`, qualified: a
     * bare `seq` in ORDER BY is the text output column, and "10" sorts before "9" (pages skipped addresses).
     */
    const watchedAddressesAfter = (chain: Chain, afterSeq: string, limit: number) =>
      sql`
          SELECT w.seq::text AS seq, w.address FROM wallets w
          WHERE w.network = ${chain} AND w.kind IN ('receive', 'main') AND w.seq > ${afterSeq}::bigint ORDER BY w.seq LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeAll(SeqAddressRow))
      )

    // ---- what the portfolio shows

    /** How many wallets the merchant has on these networks. */
    const countOnNetworks = (merchantId: string, chains: ReadonlyArray<string>) =>
      sql`
        SELECT count(*)::int AS n FROM wallets WHERE merchant_id = ${merchantId} AND ${sql.in("network", chains.length === 0 ? [""] : chains)}`.pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )

    /** How many receive wallets the merchant has per network. */
    const receiveCounts = (merchantId: string) =>
      sql`
        SELECT network, count(*)::int AS n FROM wallets WHERE merchant_id = ${merchantId} AND kind = 'receive' GROUP BY network`.pipe(
        Effect.flatMap(decodeAll(NetworkCountRow))
      )

    /**
     * The merchant's receive wallets of an asset's network holding its uncollected balance (or, with `q`,
     * the ones matching it by address, number, id or a payment's hash), largest first.
     */
    const receiveWalletsOfAsset = (asset: {
      readonly merchantId: string
      readonly chain: Chain
      readonly currency: string
      readonly q: string
      readonly limit: number
    }) => {
      const q = asset.q
      const filter =
        q === ""
          ? sql`coalesce(lb.credits_posted - lb.debits_posted, 0) > 0`
          : sql`(w.address = ${q} OR w.wallet_no = ${q} OR w.id = ${q} OR EXISTS (
            SELECT 1 FROM transactions t WHERE t.wallet_id = w.id AND t.tx_hash = ${q}))`
      return sql`
        SELECT w.id, w.wallet_no, w.address, w.purpose, w.external_user_id,
               trim_scale(coalesce(lb.credits_posted - lb.debits_posted, 0))::text AS units,
               (SELECT t.tx_hash FROM transactions t WHERE t.wallet_id = w.id AND t.currency = ${asset.currency}
                 ORDER BY t.created_at DESC LIMIT 1) AS last_tx_hash,
               (SELECT o.id FROM custody_operations o WHERE o.wallet_id = w.id AND o.type = 'collection'
                 AND o.status NOT IN ('COMPLETED', 'FAILED')) AS sweep,
               count(*) OVER ()::int AS total
        FROM wallets w
        LEFT JOIN ledger_balances lb ON lb.account = 'uncollected:' || w.id AND lb.chain = ${asset.chain} AND lb.currency = ${asset.currency}
        WHERE w.merchant_id = ${asset.merchantId} AND w.kind = 'receive' AND w.network = ${asset.chain} AND ${filter}
        ORDER BY coalesce(lb.credits_posted - lb.debits_posted, 0) DESC, w.seq DESC
        LIMIT ${asset.limit}`.pipe(Effect.flatMap(decodeAll(AssetWalletRow)))
    }

    // ---- deposit addresses

    const SELECT_DEPOSITS = sql`SELECT d.id, d.external_user_id, d.chain, d.currency, d.wallet_id, w.wallet_no, d.address, d.label, d.status,
             d.created_at, d.updated_at,
             coalesce((SELECT sum(t.amount) FROM transactions t
                        WHERE t.deposit_address_id = d.id AND t.type = 'deposit' AND t.status = 'confirmed'), 0)::text AS balance
      FROM deposit_addresses d JOIN wallets w ON w.id = d.wallet_id`

    const depositWhere = (filter: DepositAddressFilter) =>
      sql.and([
        sql`d.merchant_id = ${filter.merchantId}`,
        ...(filter.externalUserId === undefined ? [] : [sql`d.external_user_id = ${filter.externalUserId}`]),
        ...(filter.chain === undefined ? [] : [sql`d.chain = ${filter.chain}`]),
        ...(filter.currency === undefined ? [] : [sql`d.currency = ${filter.currency}`])
      ])

    /** One assignment at a time per merchant (until the caller's transaction ends): no two wallets for one user and network. */
    const lockDepositAssignments = (merchantId: string) =>
      sql`SELECT pg_advisory_xact_lock(hashtext(${`deposit-addresses:${merchantId}`}))`.pipe(Effect.asVoid)

    /** The merchant's deposit addresses of these external users. */
    const depositAddressesOfUsers = (merchantId: string, externalUserIds: ReadonlyArray<string>) =>
      sql`${SELECT_DEPOSITS} WHERE d.merchant_id = ${merchantId} AND ${sql.in("d.external_user_id", externalUserIds)}`.pipe(
        Effect.flatMap(decodeAll(DepositAddressRow))
      )

    const depositAddressesByIds = (ids: ReadonlyArray<string>) =>
      sql`${SELECT_DEPOSITS} WHERE ${sql.in("d.id", ids)}`.pipe(Effect.flatMap(decodeAll(DepositAddressRow)))

    const insertDepositAddresses = (rows: ReadonlyArray<Record<string, string | null>>) =>
      sql`INSERT INTO deposit_addresses ${sql.insert(rows)}`.pipe(Effect.asVoid)

    const countDepositAddresses = (filter: DepositAddressFilter) =>
      sql`SELECT count(*) AS total FROM deposit_addresses d WHERE ${depositWhere(filter)}`.pipe(
        Effect.flatMap(decodeFirst(TotalRow)),
        Effect.map(Option.match({ onNone: () => 0, onSome: (row) => Number(row.total) }))
      )

    /** A page of the filter's deposit addresses, newest first. */
    const listDepositAddresses = (filter: DepositAddressFilter, limit: number, offset: number) =>
      sql`${SELECT_DEPOSITS} WHERE ${depositWhere(filter)} ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit} OFFSET ${offset}`.pipe(
        Effect.flatMap(decodeAll(DepositAddressRow))
      )

    /** Whether the deposit address is the merchant's. */
    const ownsDepositAddress = (merchantId: string, depositAddressId: string) =>
      Effect.map(
        sql`
        SELECT id FROM deposit_addresses WHERE id = ${depositAddressId} AND merchant_id = ${merchantId}`,
        (rows) => rows.length > 0
      )

    // ---- fragments other owners compose into their statements (the caller's row or CTE name as a parameter)

    /**
     * Fragment (the attribution store's confirmation): the deposit address a payment row `tx` belongs to when
     * it has no order, by its wallet, chain and currency; a parenthesised scalar subquery.
     */
    const depositAddressOfPayment = (tx: string) => {
      const t = sql.literal(tx)
      return sql`(SELECT d.id FROM deposit_addresses d
                  WHERE ${t}.order_id IS NULL AND d.wallet_id = ${t}.wallet_id AND d.chain = ${t}.chain AND d.currency = ${t}.currency)`
    }

    /** Fragment (the attribution store's confirmation): the deposit address (as `d`) the rows of `from` name, if any. */
    const depositAddressJoin = (from: string) =>
      sql`LEFT JOIN deposit_addresses d ON d.id = ${sql.literal(from)}.deposit_address_id`

    /**
     * Fragment (the attribution store's set-based insert): the deposit address (as `d`) of each transfer of
     * `from` paid to a deposit wallet on `chain`, by its wallet and currency, if any.
     */
    const depositAddressOfTransfer = (from: string, chain: Chain) => {
      const i = sql.literal(from)
      return sql`LEFT JOIN deposit_addresses d
                  ON ${i}.purpose = 'deposit' AND d.wallet_id = ${i}.wallet_id AND d.chain = ${chain} AND d.currency = ${i}.currency`
    }

    return {
      reserveIndexes,
      insertReceive,
      findOwned,
      insertOwned,
      byId,
      depositWalletsOf,
      ownWalletKind,
      earliestWatched,
      settledSeq,
      watchedPage,
      watchedCount,
      copyWatched,
      watchedAddressesAfter,
      countOnNetworks,
      receiveCounts,
      receiveWalletsOfAsset,
      lockDepositAssignments,
      depositAddressesOfUsers,
      depositAddressesByIds,
      insertDepositAddresses,
      countDepositAddresses,
      listDepositAddresses,
      ownsDepositAddress,
      depositAddressOfPayment,
      depositAddressJoin,
      depositAddressOfTransfer
    } as const
  })
}) {}
