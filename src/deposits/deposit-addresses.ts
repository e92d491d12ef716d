import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Either, Option, ParseResult, Schema } from "effect"
import { AssetCatalog } from "../assets/asset-catalog.js"
import type { AssetPolicy } from "../domain/asset-policy.js"
import type { Chain } from "../domain/chain.js"
import {
  BATCH_LIMIT,
  type BatchCreateDepositAddressRequest,
  type BatchItemResult,
  CreateDepositAddressRequest,
  type DepositAddress
} from "../domain/deposit-address.js"

const decodeItem = Schema.decodeUnknownEither(CreateDepositAddressRequest, { errors: "all", onExcessProperty: "error" })
import { TransactionStore } from "../stores/transaction-store.js"
import { renderTransaction } from "../transactions/transaction-view.js"
import { newId } from "../ids.js"
import { normalizeDecimal } from "../money.js"
import { MerchantStore } from "../stores/merchant-store.js"
import { type DepositAddressRow, WalletStore } from "../stores/wallet-store.js"
import { Wallets } from "../wallets/wallets.js"
import { DepositAddressNotFound, InvalidDepositAddressRequest } from "./deposit-address-errors.js"

const iso = (date: Date) => DateTime.formatIso(DateTime.unsafeFromDate(date))

const render = (row: DepositAddressRow): DepositAddress => ({
  id: row.id,
  external_user_id: row.external_user_id,
  wallet_id: row.wallet_id,
  wallet_no: row.wallet_no,
  // the network account is the receive wallet: one on-chain address per user and network, shared by its assets
  network_account_id: row.wallet_id,
  shared_network_address: true,
  chain: row.chain,
  currency: row.currency,
  address: row.address,
  status: row.status,
  ...(row.label === null ? {} : { label: row.label }),
  balance: normalizeDecimal(row.balance),
  available_balance: normalizeDecimal(row.balance),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

/** Why an asset cannot get deposit addresses for this merchant, or undefined when it can. */
const refusal = (key: string, policy: AssetPolicy | undefined): string | undefined => {
  if (key.startsWith("POLYGON-")) return `${key}: POLYGON is sunset and unavailable for new deposit addresses`
  if (policy === undefined) return `${key} is not a supported asset (GET /v1/wallet-asset-policies lists them)`
  if (policy.status !== "live" && policy.status !== "deposit_live")
    return `${key} is ${policy.status} and takes no deposits`
  if (!policy.merchant_enabled)
    return `${key} is not enabled for this merchant: enroll it with POST /v1/wallet-asset-enrollments`
  if (!policy.actions.deposit) return `${key} does not allow deposits`
  return undefined
}

export interface AssignOutcome {
  readonly status: "created" | "existing" | "failed"
  readonly address?: DepositAddress
  readonly error?: string
}

const itemKey = (item: { external_user_id: string; chain: string; currency: string }) =>
  `${item.external_user_id}\u0000${item.chain}\u0000${item.currency}`

/**
 * Long-term deposit addresses: one per (merchant, external user, chain, currency), idempotent. All assets
 * of one network share the user's network wallet, so a user has one address per network.
 */
export class DepositAddresses extends Effect.Service<DepositAddresses>()("facet/DepositAddresses", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transactionStore = yield* TransactionStore
    const catalog = yield* AssetCatalog
    const wallets = yield* Wallets
    const merchants = yield* MerchantStore
    const store = yield* WalletStore

    /**
     * Assigns addresses to many requests in one transaction, in bulk (one counter update per key family,
     * one insert per table). Invalid items fail alone, unless `allOrNothing`: then nothing is written.
     */
    const assign = Effect.fn("DepositAddresses.assign")(function* (
      merchantId: string,
      requests: ReadonlyArray<CreateDepositAddressRequest>,
      allOrNothing: boolean
    ) {
      const policies = new Map((yield* catalog.policies(merchantId)).map((p) => [p.asset_key, p]))
      const items = requests.map((r) => ({ ...r, currency: r.currency.trim().toUpperCase() }))
      const outcomes: Array<AssignOutcome> = items.map((item) => {
        const key = `${item.chain}-${item.currency}`
        const reason = refusal(key, policies.get(key))
        return reason === undefined ? { status: "created" } : { status: "failed", error: reason }
      })
      const failures = outcomes.flatMap((o, i) => (o.status === "failed" ? [`items[${i}]: ${o.error}`] : []))
      if (allOrNothing && failures.length > 0) {
        return yield* new InvalidDepositAddressRequest({
          reason: `nothing was created: ${failures.slice(0, 5).join("; ")}${failures.length > 5 ? `; and ${failures.length - 5} more` : ""}`
        })
      }
      const valid = items.filter((_, i) => outcomes[i]?.status !== "failed")
      if (valid.length === 0) return outcomes

      const rows = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            // one assignment at a time per merchant: no two wallets for one user and network
            yield* store.lockDepositAssignments(merchantId)
            const users = [...new Set(valid.map((v) => v.external_user_id))]
            const existing = yield* store.depositAddressesOfUsers(merchantId, users)
            const known = new Map(existing.map((row) => [itemKey(row), row]))
            const missing = [
              ...new Map(valid.filter((v) => !known.has(itemKey(v))).map((v) => [itemKey(v), v])).values()
            ]
            if (missing.length === 0) return { known, created: new Set<string>() }

            const userWallets = yield* store.depositWalletsOf(merchantId, users)
            const walletOf = new Map(userWallets.map((w) => [`${w.external_user_id ?? ""}\u0000${w.network}`, w]))
            const needed = [
              ...new Map(
                missing
                  .filter((m) => !walletOf.has(`${m.external_user_id}\u0000${m.chain}`))
                  .map((m) => [`${m.external_user_id}\u0000${m.chain}`, m])
              ).values()
            ]
            if (needed.length > 0) {
              const keyAccount = yield* merchants.keyAccount(merchantId)
              if (Option.isNone(keyAccount)) return yield* Effect.die(new Error(`merchant ${merchantId} vanished`))
              const created = yield* wallets.createReceive(
                merchantId,
                keyAccount.value,
                needed.map((n) => ({ network: n.chain, purpose: "deposit", externalUserId: n.external_user_id }))
              )
              for (const w of created) walletOf.set(`${w.external_user_id ?? ""}\u0000${w.network}`, w)
            }
            const inserts = missing.map((m) => {
              const wallet = walletOf.get(`${m.external_user_id}\u0000${m.chain}`)
              if (wallet === undefined) throw new Error("no wallet for a deposit address")
              return {
                id: newId("dep"),
                merchant_id: merchantId,
                external_user_id: m.external_user_id,
                chain: m.chain,
                currency: m.currency,
                wallet_id: wallet.id,
                address: wallet.address,
                label: m.label ?? null
              }
            })
            const ids = inserts.map((i) => i.id)
            yield* store.insertDepositAddresses(inserts)
            const fresh = yield* store.depositAddressesByIds(ids)
            for (const row of fresh) known.set(itemKey(row), row)
            return { known, created: new Set(fresh.map((row) => itemKey(row))) }
          })
        )
        .pipe(Effect.orDie)

      const reported = new Set<string>()
      return outcomes.map((outcome, i): AssignOutcome => {
        const item = items[i]
        if (outcome.status === "failed" || item === undefined) return outcome
        const key = itemKey(item)
        const row = rows.known.get(key)
        if (row === undefined) return { status: "failed", error: "not assigned" }
        // a repeat of an item within the same batch reports the address as existing
        const status = rows.created.has(key) && !reported.has(key) ? "created" : "existing"
        reported.add(key)
        return { status, address: render(row) }
      })
    })

    const create = Effect.fn("DepositAddresses.create")(function* (
      merchantId: string,
      request: CreateDepositAddressRequest
    ) {
      const [outcome] = yield* assign(merchantId, [request], true)
      if (outcome?.address === undefined)
        return yield* new InvalidDepositAddressRequest({ reason: outcome?.error ?? "not assigned" })
      return outcome.address
    })

    const list = Effect.fn("DepositAddresses.list")(function* (
      merchantId: string,
      filter: {
        readonly external_user_id?: string | undefined
        readonly chain?: Chain | undefined
        readonly currency?: string | undefined
        readonly limit: number
        readonly offset: number
      }
    ) {
      const where = {
        merchantId,
        externalUserId: filter.external_user_id,
        chain: filter.chain,
        currency: filter.currency?.trim().toUpperCase()
      }
      const total = yield* Effect.orDie(store.countDepositAddresses(where))
      const rows = yield* Effect.orDie(store.listDepositAddresses(where, filter.limit, filter.offset))
      return { total, limit: filter.limit, offset: filter.offset, items: rows.map(render) }
    })

    const transactions = Effect.fn("DepositAddresses.transactions")(function* (
      merchantId: string,
      depositAddressId: string,
      limit: number
    ) {
      const owned = yield* Effect.orDie(store.ownsDepositAddress(merchantId, depositAddressId))
      if (!owned) return yield* new DepositAddressNotFound({ depositAddressId })
      const found = yield* transactionStore.forDepositAddress(depositAddressId, limit)
      return { total: found.total, limit, offset: 0, items: found.rows.map(renderTransaction) }
    })

    /**
     * POST /v1/deposit-addresses/batch. Valid shapes: `items` alone, or `external_user_ids` with `chain`
     * and `currency` (and no `items`); `label_prefix` labels items that carry no label of their own.
     */
    const batch = Effect.fn("DepositAddresses.batch")(function* (
      merchantId: string,
      request: BatchCreateDepositAddressRequest
    ) {
      const byUsers = request.external_user_ids !== undefined
      if (byUsers === (request.items !== undefined)) {
        return yield* new InvalidDepositAddressRequest({
          reason: "send either items, or external_user_ids with chain and currency (not both)"
        })
      }
      // each item checked on its own: a bad one is that item's failure (all or nothing without continue_on_error)
      let checked: Array<
        Either.Either<
          CreateDepositAddressRequest,
          {
            readonly raw: { readonly external_user_id: string; readonly chain: string; readonly currency: string }
            readonly error: string
          }
        >
      >
      if (request.external_user_ids !== undefined) {
        const { chain, currency } = request
        if (chain === undefined || currency === undefined) {
          return yield* new InvalidDepositAddressRequest({ reason: "external_user_ids needs chain and currency" })
        }
        checked = request.external_user_ids.map((external_user_id) =>
          Either.right({ external_user_id, chain, currency })
        )
      } else {
        if (request.chain !== undefined || request.currency !== undefined) {
          return yield* new InvalidDepositAddressRequest({
            reason: "chain and currency go inside each item when items is used"
          })
        }
        checked = (request.items ?? []).map((raw) =>
          Either.mapLeft(decodeItem(raw), (issue) => ({
            raw,
            error: ParseResult.ArrayFormatter.formatErrorSync(issue)
              .map((i) => `${i.path.join(".")}: ${i.message}`)
              .join("; ")
          }))
        )
      }
      if (checked.length === 0) return yield* new InvalidDepositAddressRequest({ reason: "the batch is empty" })
      if (checked.length > BATCH_LIMIT) {
        return yield* new InvalidDepositAddressRequest({
          reason: `a batch holds at most ${BATCH_LIMIT} items; this one has ${checked.length}`
        })
      }
      const invalid = checked.flatMap((c, i) => (Either.isLeft(c) ? [`items[${i}]: ${c.left.error}`] : []))
      if (!request.continue_on_error && invalid.length > 0) {
        return yield* new InvalidDepositAddressRequest({
          reason: `nothing was created: ${invalid.slice(0, 5).join("; ")}${invalid.length > 5 ? `; and ${invalid.length - 5} more` : ""}`
        })
      }
      const prefix = request.label_prefix
      const labelled = checked
        .flatMap((c) => (Either.isRight(c) ? [c.right] : []))
        .map((r) =>
          r.label === undefined && prefix !== undefined ? { ...r, label: `${prefix}${r.external_user_id}` } : r
        )
      const assigned = labelled.length === 0 ? [] : yield* assign(merchantId, labelled, !request.continue_on_error)
      let next = 0
      const items = checked.map((c, index): BatchItemResult => {
        if (Either.isLeft(c)) {
          return {
            index,
            external_user_id: c.left.raw.external_user_id,
            chain: c.left.raw.chain,
            currency: c.left.raw.currency.trim().toUpperCase(),
            status: "failed",
            error: c.left.error
          }
        }
        const outcome = assigned[next]
        const item = labelled[next]
        next += 1
        return {
          index,
          external_user_id: item?.external_user_id ?? "",
          chain: item?.chain ?? "",
          currency: (item?.currency ?? "").trim().toUpperCase(),
          status: outcome?.status ?? "failed",
          ...(outcome?.address === undefined ? {} : { deposit_address: outcome.address }),
          ...(outcome?.error === undefined ? {} : { error: outcome.error })
        }
      })
      const failed = items.filter((i) => i.status === "failed").length
      return { total: items.length, succeeded: items.length - failed, failed, items }
    })

    return { assign, create, batch, list, transactions } as const
  }),
  dependencies: [
    AssetCatalog.Default,
    TransactionStore.Default,
    MerchantStore.Default,
    WalletStore.Default,
    Wallets.Default
  ]
}) {}
