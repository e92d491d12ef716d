import { Effect, Option } from "effect"
import type { Chain } from "../domain/chain.js"
import { newId } from "../ids.js"
import { type KeyFamily, keyFamilyOf } from "../keys/derivation.js"
import { type KeyRef, Signer } from "../keys/signer.js"
import { MerchantStore } from "../stores/merchant-store.js"
import { type OwnedWalletRow, type ReceiveWalletRow, WalletStore } from "../stores/wallet-store.js"

export type ReceiveWallet = ReceiveWalletRow

/** A wallet with the key that signs for it (custody's view). */
export interface OwnedWallet {
  readonly id: string
  readonly address: string
  readonly key: KeyRef
}

export interface ReceiveWalletRequest {
  readonly network: Chain
  readonly purpose: "order" | "deposit"
  /** For deposit wallets: the merchant's user the address belongs to. */
  readonly externalUserId?: string
}

/**
 * Receive wallets: fresh HD addresses for a merchant. Indexes come from one atomic counter update per
 * key family, inside the caller's transaction, so no two wallets ever share an index or an address.
 */
export class Wallets extends Effect.Service<Wallets>()("facet/Wallets", {
  effect: Effect.gen(function* () {
    const signer = yield* Signer
    const merchants = yield* MerchantStore
    const store = yield* WalletStore

    /** Creates one receive wallet per request, in order; call inside a transaction. */
    const createReceive = Effect.fn("Wallets.createReceive")(function* (
      merchantId: string,
      keyAccount: number,
      requests: ReadonlyArray<ReceiveWalletRequest>
    ) {
      const out: Array<ReceiveWallet | undefined> = requests.map(() => undefined)
      const byFamily = new Map<KeyFamily, Array<number>>()
      requests.forEach((request, position) => {
        const family = keyFamilyOf(request.network)
        byFamily.set(family, [...(byFamily.get(family) ?? []), position])
      })
      for (const [family, positions] of byFamily) {
        const first = yield* store.reserveIndexes(keyAccount, family, positions.length)
        const derived = yield* signer.deriveAddresses(
          family,
          keyAccount,
          positions.map((_, i) => first + i)
        )
        const rows = positions.map((position, i) => {
          const request = requests[position]
          const key = derived[i]
          if (request === undefined || key === undefined) throw new Error("derivation returned fewer keys than asked")
          return {
            id: newId("wal"),
            merchant_id: merchantId,
            kind: "receive",
            purpose: request.purpose,
            network: request.network,
            family,
            address: key.address,
            derivation_path: key.path,
            key_account: keyAccount,
            address_index: key.index,
            external_user_id: request.externalUserId ?? null
          }
        })
        const inserted = yield* store.insertReceive(rows)
        const byId = new Map(inserted.map((w) => [w.id, w]))
        positions.forEach((position, i) => {
          out[position] = byId.get(rows[i]?.id ?? "")
        })
      }
      return out.filter((w): w is ReceiveWallet => w !== undefined)
    })

    /** A wallet custody sends from or to, with the key that signs for it. */
    const findOwned = (where: {
      readonly kind: "main" | "gas" | "staking"
      readonly network: Chain
      readonly merchantId: string | null
    }) => Effect.map(store.findOwned(where), Option.getOrUndefined)

    const insertOwned = (row: {
      kind: "main" | "gas" | "staking"
      merchantId: string | null
      network: Chain
      keyAccount: number
      index: number
    }) =>
      Effect.gen(function* () {
        const family = keyFamilyOf(row.network)
        const [key] = yield* signer.deriveAddresses(family, row.keyAccount, [row.index])
        if (key === undefined) return yield* Effect.die(new Error("derivation returned no key"))
        // a racing process may have made it first: its row wins, this one is dropped
        yield* store.insertOwned({
          id: newId("wal"),
          merchant_id: row.merchantId,
          kind: row.kind,
          // a staking wallet holds the platform's gas, staked
          purpose: row.kind === "staking" ? "gas" : row.kind,
          network: row.network,
          family,
          address: key.address,
          derivation_path: key.path,
          key_account: row.keyAccount,
          address_index: key.index
        })
      })

    const ownedWallet = (row: OwnedWalletRow | undefined): OwnedWallet => {
      if (row === undefined) throw new Error("the wallet was not stored")
      return {
        id: row.id,
        address: row.address,
        key: { family: row.family, account: row.key_account, index: row.address_index }
      }
    }

    /** The merchant's main wallet on a network (collections go there), made on first use. */
    const mainWallet = Effect.fn("Wallets.mainWallet")(function* (merchantId: string, network: Chain) {
      const found = yield* findOwned({ kind: "main", network, merchantId })
      if (found !== undefined) return ownedWallet(found)
      const keyAccount = yield* merchants.keyAccount(merchantId)
      if (Option.isNone(keyAccount)) return yield* Effect.die(new Error(`no merchant ${merchantId}`))
      const index = yield* store.reserveIndexes(keyAccount.value, keyFamilyOf(network), 1)
      yield* insertOwned({ kind: "main", merchantId, network, keyAccount: keyAccount.value, index })
      return ownedWallet(yield* findOwned({ kind: "main", network, merchantId }))
    })

    /** The platform's gas wallet on a network: account 0, index 0 (the devnets fund it). */
    const gasWallet = Effect.fn("Wallets.gasWallet")(function* (network: Chain) {
      const found = yield* findOwned({ kind: "gas", network, merchantId: null })
      if (found !== undefined) return ownedWallet(found)
      yield* insertOwned({ kind: "gas", merchantId: null, network, keyAccount: 0, index: 0 })
      return ownedWallet(yield* findOwned({ kind: "gas", network, merchantId: null }))
    })

    /**
     * The platform's TRON staking wallet, whose frozen TRX lends custody's transfers their energy: the gas
     * wallet itself (index 0, the default), or account 0 at FACET_TRON_STAKING_INDEX, made on first use.
     */
    const stakingWallet = Effect.fn("Wallets.stakingWallet")(function* (index: number) {
      if (index === 0) return yield* gasWallet("TRC20")
      const found = yield* findOwned({ kind: "staking", network: "TRC20", merchantId: null })
      if (found !== undefined) return ownedWallet(found)
      yield* insertOwned({ kind: "staking", merchantId: null, network: "TRC20", keyAccount: 0, index })
      return ownedWallet(yield* findOwned({ kind: "staking", network: "TRC20", merchantId: null }))
    })

    /** Any wallet by id, with its key (custody signs for it). */
    const byId = Effect.fn("Wallets.byId")(function* (walletId: string) {
      const found = yield* store.byId(walletId)
      if (Option.isNone(found)) return undefined
      const row = found.value
      return { ...ownedWallet(row), merchantId: row.merchant_id, kind: row.kind, network: row.network }
    })

    return { createReceive, mainWallet, gasWallet, stakingWallet, byId } as const
  }),
  dependencies: [MerchantStore.Default, WalletStore.Default]
}) {}
