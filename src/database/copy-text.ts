/**
 * PostgreSQL's COPY text format, read back: rows end with a newline, fields are separated by tabs, `\N`
 * is NULL, and a backslash escapes the rest (`\t`, `\n`, `\\`, …). Chunks from the server split rows
 * anywhere; the part of a row at a chunk's end waits for the next chunk.
 */
export class CopyTextRows {
  private pending: Buffer = Buffer.alloc(0)
  private readonly fields: Array<string | null>

  constructor(private readonly columns: number, private readonly onRow: (fields: ReadonlyArray<string | null>) => void) {
    this.fields = new Array<string | null>(columns).fill(null)
  }

  push(chunk: Buffer) {
    const data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    let start = 0
    for (let end = data.indexOf(10, start); end >= 0; end = data.indexOf(10, start)) {
      this.row(data, start, end)
      start = end + 1
    }
    this.pending = start === data.length ? Buffer.alloc(0) : Buffer.from(data.subarray(start))
  }

  /** Throws if a row was cut off: the stream ended in the middle of one. */
  end() {
    if (this.pending.length > 0) throw new Error(`COPY ended inside a row (${this.pending.length} bytes left)`)
  }

  private row(data: Buffer, start: number, end: number) {
    let field = 0
    let from = start
    for (let i = start; i <= end; i++) {
      if (i < end && data[i] !== 9) continue
      if (field >= this.columns) throw new Error(`a COPY row has more than ${this.columns} fields`)
      this.fields[field++] = decodeField(data, from, i)
      from = i + 1
    }
    if (field !== this.columns) throw new Error(`a COPY row has ${field} fields, not ${this.columns}`)
    this.onRow(this.fields)
  }
}

const ESCAPES: Record<string, string> = { b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\" }

const decodeField = (data: Buffer, from: number, to: number): string | null => {
  if (to - from === 2 && data[from] === 92 && data[from + 1] === 78) return null
  const raw = data.toString("utf8", from, to)
  return raw.includes("\\") ? raw.replace(/\\(.)/g, (_, c: string) => ESCAPES[c] ?? c) : raw
}
