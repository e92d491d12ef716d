import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeAll, decodeFirst } from "./rows.js"

const ChainIdentityRow = Schema.Struct({ chain: Schema.String, network: Schema.String, genesis_hash: Schema.String })
export type ChainIdentityRow = typeof ChainIdentityRow.Type

/** Every statement on `chain_identities`: the genesis and network each chain's node had when first indexed. */
export class ChainIdentityStore extends Effect.Service<ChainIdentityStore>()("facet/ChainIdentityStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The first identity recorded for a chain stays; a later one is not stored. */
    const recordFirst = (chain: string, network: string, genesis: string) =>
      sql`INSERT INTO chain_identities (chain, network, genesis_hash) VALUES (${chain}, ${network}, ${genesis})
          ON CONFLICT (chain) DO NOTHING`.pipe(Effect.asVoid)

    const find = (chain: string) =>
      sql`SELECT chain, network, genesis_hash FROM chain_identities WHERE chain = ${chain}`.pipe(
        Effect.flatMap(decodeFirst(ChainIdentityRow))
      )

    const all = sql`SELECT chain, network, genesis_hash FROM chain_identities ORDER BY chain`.pipe(
      Effect.flatMap(decodeAll(ChainIdentityRow))
    )

    /** A devnet reset: every identity goes (the next start records the new chains'); how many went. */
    const forgetAll = Effect.map(
      sql<{ n: number }>`WITH d AS (DELETE FROM chain_identities RETURNING 1) SELECT count(*)::int AS n FROM d`,
      (rows) => rows[0]?.n ?? 0
    )

    return { recordFirst, find, all, forgetAll } as const
  })
}) {}
