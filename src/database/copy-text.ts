/**
 * PostgreSQL's COPY text format, read back: rows end with a newline, fields are separated by tabs, `\N`
 * is NULL, and a backslash escapes the rest (`\t`, `\n`, `\\`, …). Chunks from the server split rows
 * anywhere; the part of a row at a chunk's end waits for the next chunk. A row is handed over as byte
 * ranges, so a reader of millions of rows makes strings only of the fields it needs as strings.
 */
export class CopyTextRow {
  data: Buffer = Buffer.alloc(0)
  readonly starts: Int32Array
  readonly ends: Int32Array

  constructor(readonly columns: number) {
    this.starts = new Int32Array(columns)
    this.ends = new Int32Array(columns)
  }

  start(field: number) {
    return this.starts[field] ?? 0
  }

  end(field: number) {
    return this.ends[field] ?? 0
  }

  isNull(field: number) {
    const start = this.start(field)
    return this.end(field) - start === 2 && this.data[start] === 92 && this.data[start + 1] === 78
  }

  /** The field's bytes are its value as they stand: no backslash escape in them, not NULL. */
  isPlain(field: number) {
    // a loop over the field alone: indexOf would scan on past the field to the chunk's end on every row
    const end = this.end(field)
    for (let i = this.start(field); i < end; i++) if (this.data[i] === 92) return false
    return true
  }

  text(field: number): string | null {
    if (this.isNull(field)) return null
    const raw = this.data.toString("utf8", this.start(field), this.end(field))
    return raw.includes("\\") ? raw.replace(/\\(.)/g, (_, c: string) => ESCAPES[c] ?? c) : raw
  }
}

const ESCAPES: Record<string, string> = { b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\" }

export class CopyTextRows {
  private pending: Buffer = Buffer.alloc(0)
  private readonly row: CopyTextRow

  constructor(
    columns: number,
    private readonly onRow: (row: CopyTextRow) => void
  ) {
    this.row = new CopyTextRow(columns)
  }

  push(chunk: Buffer) {
    const data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    this.row.data = data
    let start = 0
    for (let end = data.indexOf(10, start); end >= 0; end = data.indexOf(10, start)) {
      this.split(data, start, end)
      this.onRow(this.row)
      start = end + 1
    }
    this.pending = start === data.length ? Buffer.alloc(0) : Buffer.from(data.subarray(start))
  }

  /** Throws if a row was cut off: the stream ended in the middle of one. */
  end() {
    if (this.pending.length > 0) throw new Error(`COPY ended inside a row (${this.pending.length} bytes left)`)
  }

  private split(data: Buffer, start: number, end: number) {
    const columns = this.row.columns
    let from = start
    for (let field = 0; field < columns; field++) {
      const tab = data.indexOf(9, from)
      const last = field === columns - 1
      const to = tab < 0 || tab > end ? end : tab
      if (!last && to === end) throw new Error(`a COPY row has ${field + 1} fields, not ${columns}`)
      if (last && to !== end) throw new Error(`a COPY row has more than ${columns} fields`)
      this.row.starts[field] = from
      this.row.ends[field] = to
      from = to + 1
    }
  }
}
