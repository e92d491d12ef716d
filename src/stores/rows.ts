import { Array as Arr, Effect, Option, Schema } from "effect"
import type { LazyArg } from "effect/Function"

/**
 * The rows a store's statement returns, decoded by a schema of the store's. A row that does not decode means
 * the schema and the migrations disagree: a defect, not a caller's error, so a decode here dies on it. Only
 * the decode: the statement's own errors stay wherever the store leaves them.
 */

/** Every row, decoded. */
export const decodeAll = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.Array(schema))
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>> => Effect.orDie(decode(rows))
}

/** The first row, decoded (every row is: one that does not decode dies); none when there is no row. */
export const decodeFirst = <A, I>(schema: Schema.Schema<A, I>) => {
  const all = decodeAll(schema)
  return (rows: ReadonlyArray<unknown>): Effect.Effect<Option.Option<A>> => Effect.map(all(rows), Arr.head)
}

/** One column of the first row (a count, a sum, what a RETURNING gave back); `orElse` when there is no row. */
export const decodeScalar = <A, I, K extends keyof A>(
  schema: Schema.Schema<A, I>,
  column: K,
  orElse: LazyArg<A[K]>
) => {
  const first = decodeFirst(schema)
  return (rows: ReadonlyArray<unknown>): Effect.Effect<A[K]> =>
    Effect.map(first(rows), Option.match({ onNone: orElse, onSome: (row) => row[column] }))
}
