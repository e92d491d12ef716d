import type { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect } from "effect"

/** How a NULL travels in a delimited column (COPY's spelling; no value sent this way holds a backslash). */
const NULL_MARK = "\\N"

/** The element types a delimited column is cast to. */
export type DelimitedType = "text" | "numeric" | "int" | "bigint" | "boolean" | "timestamptz"

/**
 * A column of many values sent as one text parameter and split in SQL (`string_to_array`), cast to
 * `type[]`. node-postgres quotes and escapes every element of an array parameter (two regex passes each):
 * for a 1,000-deposit block that was most of the indexer's own time per write. Only for values that hold
 * no comma or backslash — ids, hashes, addresses, decimal amounts, integers; a value that breaks this is a
 * defect, never a shifted column.
 */
export const delimitedColumn = (
  sql: SqlClient.SqlClient,
  type: DelimitedType,
  values: ReadonlyArray<string | number | boolean | null>
): Effect.Effect<Fragment> =>
  Effect.suspend(() => {
    // one element alone could be the empty string, which `string_to_array` reads as no element at all
    if (values.length <= 1)
      return Effect.succeed(
        sql`${values.map((value) => (value === null ? null : String(value)))}::${sql.literal(type)}[]`
      )
    const texts: Array<string> = []
    for (const value of values) {
      if (value === null) {
        texts.push(NULL_MARK)
        continue
      }
      const text = String(value)
      if (text.includes(",") || text.includes("\\")) {
        return Effect.dieMessage(`a ${type} column value cannot travel delimited: ${JSON.stringify(text)}`)
      }
      texts.push(text)
    }
    return Effect.succeed(sql`string_to_array(${texts.join(",")}, ',', ${NULL_MARK})::${sql.literal(type)}[]`)
  })
