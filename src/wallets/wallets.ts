import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Chain } from "../domain/chain.js"
import { newId } from "../ids.js"
import { type KeyFamily, keyFamilyOf } from "../keys/derivation.js"
import { Signer } from "../keys/signer.js"

export interface ReceiveWallet {
  readonly id: string
  readonly wallet_no: string
  readonly network: Chain
  readonly address: string
  readonly external_user_id: string | null
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
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const signer = yield* Signer

    const reserveIndexes = (keyAccount: number, family: KeyFamily, count: number) =>
      Effect.map(
        sql<{ first: number }>`
          INSERT INTO key_index_counters (key_account, family, next_index) VALUES (${keyAccount}, ${family}, ${count})
          ON CONFLICT (key_account, family) DO UPDATE SET next_index = key_index_counters.next_index + ${count}
          RETURNING next_index - ${count} AS first`,
        (rows) => rows[0]?.first ?? 0
      )

    /** Creates one receive wallet per request, in order; call inside a transaction. */
    const createReceive = Effect.fn("Wallets.createReceive")(function*(
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
        const first = yield* reserveIndexes(keyAccount, family, positions.length)
        const derived = yield* signer.deriveAddresses(family, keyAccount, positions.map((_, i) => first + i))
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
        const inserted = yield* sql<{ id: string; wallet_no: string; network: Chain; address: string; external_user_id: string | null }>`
          INSERT INTO wallets ${sql.insert(rows)} RETURNING id, wallet_no, network, address, external_user_id`
        const byId = new Map(inserted.map((w) => [w.id, w]))
        positions.forEach((position, i) => {
          out[position] = byId.get(rows[i]?.id ?? "")
        })
      }
      return out.filter((w): w is ReceiveWallet => w !== undefined)
    })

    return { createReceive } as const
  })
}) {}
