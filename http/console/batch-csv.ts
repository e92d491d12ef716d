import { Either, ParseResult, Schema } from "effect"
import { CreateWithdrawalRequest } from "../../src/domain/withdrawal.js"
import { MAX_BATCH_ITEMS } from "../../src/domain/withdrawal-batch.js"

/**
 * A withdrawal batch as a CSV file (the console's upload): a header row naming the columns (in any order),
 * then one withdrawal per row. Quoted fields as RFC 4180 writes them; blank lines are skipped; a UTF-8 byte
 * order mark is ignored.
 */

export const CSV_COLUMNS = ["chain", "currency", "amount", "to_address", "out_withdrawal_no"] as const
/** The largest file accepted: 500 rows of long addresses and references fit in a fraction of it. */
export const MAX_CSV_BYTES = 256 * 1024

/** A refused row: its line in the file (the header is line 1) and why. */
export interface CsvRowProblem {
  readonly line: number
  readonly outWithdrawalNo?: string | undefined
  readonly error: string
}

export type CsvBatch =
  | {
      readonly _tag: "Items"
      readonly items: ReadonlyArray<CreateWithdrawalRequest>
      /** The file's line of each item (the service names items by their place in `items`). */
      readonly lines: ReadonlyArray<number>
    }
  | { readonly _tag: "Refused"; readonly reason: string; readonly rows: ReadonlyArray<CsvRowProblem> }

/** The records of a CSV text, each with the line it starts on; a quote left open is an error. */
const records = (text: string): Either.Either<ReadonlyArray<{ line: number; fields: Array<string> }>, string> => {
  const out: Array<{ line: number; fields: Array<string> }> = []
  let fields: Array<string> = []
  let field = ""
  let quoted = false
  let line = 1
  let start = 1
  let touched = false
  const endRecord = () => {
    fields.push(field)
    if (touched || fields.length > 1 || field.trim() !== "") out.push({ line: start, fields })
    fields = []
    field = ""
    touched = false
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"'
        i += 1
      } else if (c === '"') quoted = false
      else {
        if (c === "\n") line += 1
        field += c
      }
    } else if (c === '"' && field.trim() === "") {
      quoted = true
      field = ""
      touched = true
    } else if (c === ",") {
      fields.push(field)
      field = ""
      touched = true
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i += 1
      endRecord()
      line += 1
      start = line
    } else field += c
  }
  if (quoted) return Either.left(`a quoted field opened on line ${start} is never closed`)
  endRecord()
  return Either.right(out)
}

const describe = (error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .filter((issue) => !issue.message.startsWith("Expected undefined, actual"))
    .map((issue) => (issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ${issue.message}` : issue.message))
    .join("; ")

const decodeItem = Schema.decodeUnknownEither(CreateWithdrawalRequest)

/** The batch a CSV file asks for, or why it cannot be read (the whole file, or each bad row). */
export const parseBatchCsv = (text: string): CsvBatch => {
  const parsed = records(text.replace(/^\uFEFF/, ""))
  if (Either.isLeft(parsed)) return { _tag: "Refused", reason: parsed.left, rows: [] }
  const [header, ...rows] = parsed.right
  if (header === undefined)
    return {
      _tag: "Refused",
      reason: `the file is empty: a header row (${CSV_COLUMNS.join(",")}) comes first`,
      rows: []
    }
  const names = header.fields.map((name) => name.trim().toLowerCase())
  const missing = CSV_COLUMNS.filter((column) => !names.includes(column))
  const unknown = names.filter((name) => !CSV_COLUMNS.some((column) => column === name))
  const repeated = names.filter((name, i) => names.indexOf(name) !== i)
  if (missing.length > 0 || unknown.length > 0 || repeated.length > 0) {
    return {
      _tag: "Refused",
      reason: `the first row must name the columns ${CSV_COLUMNS.join(",")} (in any order)${missing.length > 0 ? `; missing: ${missing.join(", ")}` : ""}${unknown.length > 0 ? `; unknown: ${unknown.join(", ")}` : ""}${repeated.length > 0 ? `; repeated: ${repeated.join(", ")}` : ""}`,
      rows: []
    }
  }
  if (rows.length === 0) return { _tag: "Refused", reason: "the file has a header but no withdrawal rows", rows: [] }
  if (rows.length > MAX_BATCH_ITEMS)
    return {
      _tag: "Refused",
      reason: `the file has ${rows.length} withdrawal rows: a batch holds at most ${MAX_BATCH_ITEMS}`,
      rows: []
    }
  const problems: Array<CsvRowProblem> = []
  const items: Array<CreateWithdrawalRequest> = []
  for (const row of rows) {
    const value = (column: string) => row.fields[names.indexOf(column)]?.trim() ?? ""
    const ref = value("out_withdrawal_no")
    if (row.fields.length !== names.length) {
      problems.push({
        line: row.line,
        outWithdrawalNo: ref === "" ? undefined : ref,
        error: `${row.fields.length} fields where the header names ${names.length}`
      })
      continue
    }
    const decoded = decodeItem(
      Object.fromEntries(
        CSV_COLUMNS.flatMap((column) =>
          column === "out_withdrawal_no" && value(column) === ""
            ? []
            : [[column, column === "chain" || column === "currency" ? value(column).toUpperCase() : value(column)]]
        )
      ),
      { errors: "all", onExcessProperty: "error" }
    )
    if (Either.isLeft(decoded))
      problems.push({ line: row.line, outWithdrawalNo: ref === "" ? undefined : ref, error: describe(decoded.left) })
    else items.push(decoded.right)
  }
  if (problems.length > 0)
    return {
      _tag: "Refused",
      reason: `${problems.length} row${problems.length === 1 ? "" : "s"} cannot be read: nothing was created`,
      rows: problems
    }
  return { _tag: "Items", items, lines: rows.map((row) => row.line) }
}
