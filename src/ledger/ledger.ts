import { Effect } from "effect"
import { LedgerStore } from "../stores/ledger-store.js"

/** An account of the transfer ledger (migration 0011): its name, kind and owner. */
export interface LedgerAccount {
  readonly name: string
  readonly kind: "chain" | "fees" | "gas" | "uncollected" | "available" | "locked"
  readonly merchantId: string | null
  readonly walletId: string | null
}

const platform = (name: string, kind: LedgerAccount["kind"]): LedgerAccount => ({
  name,
  kind,
  merchantId: null,
  walletId: null
})

/**
 * The accounts by their role (docs/reference/decisions.md, "Wallets and the ledger"). The platform's gas is `gas` while
 * it sits in the gas wallet and `gas:<wallet id>` once sent to a receive wallet for a sweep: still the
 * platform's, whatever else that address holds.
 */
export const Accounts = {
  chain: platform("chain", "chain"),
  fees: platform("fees", "fees"),
  gas: platform("gas", "gas"),
  gasAt: (walletId: string) => platform(`gas:${walletId}`, "gas"),
  uncollected: (merchantId: string, walletId: string): LedgerAccount => ({
    name: `uncollected:${walletId}`,
    kind: "uncollected",
    merchantId,
    walletId
  }),
  available: (merchantId: string): LedgerAccount => ({
    name: `available:${merchantId}`,
    kind: "available",
    merchantId,
    walletId: null
  }),
  locked: (merchantId: string): LedgerAccount => ({
    name: `locked:${merchantId}`,
    kind: "locked",
    merchantId,
    walletId: null
  })
} as const

/** One movement: `amount` base units of one asset from the debit account to the credit account. */
export interface LedgerTransfer {
  readonly debit: LedgerAccount
  readonly credit: LedgerAccount
  readonly chain: string
  readonly currency: string
  readonly amount: bigint
  readonly kind: string
  /** What caused it (a transaction, an operation); the legs of one movement share it. */
  readonly reference: string
}

/**
 * Posts transfers and their accounts' totals, in the caller's database transaction (the state change that
 * causes a movement and its transfers commit together). Zero amounts are skipped: a transfer moves something.
 */
export class Ledger extends Effect.Service<Ledger>()("facet/Ledger", {
  effect: Effect.gen(function* () {
    const store = yield* LedgerStore

    const post = Effect.fn("Ledger.post")(function* (transfers: ReadonlyArray<LedgerTransfer>) {
      const moving = transfers.filter((t) => t.amount > 0n)
      if (moving.length === 0) return
      const legs = moving.flatMap((t) => [
        { account: t.debit, chain: t.chain, currency: t.currency, debit: t.amount, credit: 0n },
        { account: t.credit, chain: t.chain, currency: t.currency, debit: 0n, credit: t.amount }
      ])
      // one row per account: an upsert may not touch the same row twice in one statement
      const totals = new Map<
        string,
        { account: LedgerAccount; chain: string; currency: string; debit: bigint; credit: bigint }
      >()
      for (const leg of legs) {
        const key = `${leg.account.name}|${leg.chain}|${leg.currency}`
        const seen = totals.get(key)
        totals.set(
          key,
          seen === undefined ? leg : { ...seen, debit: seen.debit + leg.debit, credit: seen.credit + leg.credit }
        )
      }
      yield* store.append(
        moving.map((t) => ({
          debit_account: t.debit.name,
          credit_account: t.credit.name,
          chain: t.chain,
          currency: t.currency,
          amount: t.amount.toString(),
          kind: t.kind,
          reference: t.reference
        })),
        // in one order for every caller: transactions posting to the same accounts (a gas wallet's fundings
        // finishing together) lock their balance rows in that order, and so never wait on each other in a cycle
        [...totals.entries()]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, t]) => ({
            account: t.account.name,
            chain: t.chain,
            currency: t.currency,
            kind: t.account.kind,
            merchant_id: t.account.merchantId,
            wallet_id: t.account.walletId,
            debits_posted: t.debit.toString(),
            credits_posted: t.credit.toString()
          }))
      )
    })

    /** Credits minus debits posted to an account, in base units (what a merchant account holds). */
    const balance = Effect.fn("Ledger.balance")(function* (account: LedgerAccount, chain: string, currency: string) {
      return yield* store.balance(account.name, chain, currency)
    })

    return { post, balance } as const
  }),
  dependencies: [LedgerStore.Default]
}) {}
