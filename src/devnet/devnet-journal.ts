import { Effect, Either, Schema } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { DevnetError } from "./devnet-error.js"

/** The first line of a journal: which devnet wrote it, in which format, and the chain's own identity. */
export const JournalHeader = Schema.Struct({
  kind: Schema.String,
  version: Schema.Number,
  /** Random per chain: salts its genesis so two devnets never share one. */
  id: Schema.String,
  /** When the chain was made (ms): its genesis time. */
  createdAt: Schema.Number
})
export type JournalHeader = typeof JournalHeader.Type

export interface Journal<A> {
  readonly header: JournalHeader
  /** What the devnet did before, in order (empty for a new chain). */
  readonly entries: ReadonlyArray<A>
  /** Appends one operation (written, not yet flushed to disk). */
  readonly append: (entry: A) => void
  /** Flushes what was appended to disk: a devnet calls it before it shows a new block. */
  readonly sync: () => void
}

/**
 * An append-only file of JSON lines, one operation of a devnet per line, replayed at start so the
 * devnet comes back with the same blocks, hashes and balances. A line cut short by a crash is dropped
 * (that operation never completed); a journal of another kind or version refuses the start.
 */
export const openJournal = <A, I>(file: string, kind: string, version: number, entry: Schema.Schema<A, I>) =>
  Effect.gen(function* () {
    const decodeHeader = Schema.decodeUnknownEither(Schema.parseJson(JournalHeader))
    const decodeEntry = Schema.decodeUnknownEither(Schema.parseJson(entry))
    const encodeEntry = Schema.encodeSync(Schema.parseJson(entry))
    const fail = (message: string) => new DevnetError({ message: `${file}: ${message}` })

    const existing = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined
    let header: JournalHeader
    const entries: Array<A> = []
    if (existing === undefined || existing === "") {
      header = { kind, version, id: randomBytes(16).toString("hex"), createdAt: Date.now() }
      yield* Effect.try({
        try: () => {
          fs.mkdirSync(path.dirname(file), { recursive: true })
          fs.writeFileSync(file, `${JSON.stringify(header)}\n`)
        },
        catch: (cause) => new DevnetError({ message: `cannot create ${file}`, cause })
      })
    } else {
      const lines = existing.split("\n")
      const first = decodeHeader(lines[0] ?? "")
      if (Either.isLeft(first) || first.right.kind !== kind) return yield* fail(`not a ${kind} journal`)
      if (first.right.version !== version) {
        return yield* fail(`written by format ${first.right.version} of the ${kind}, this is format ${version}`)
      }
      header = first.right
      // every complete line ends with "\n": only text after the last one can have been cut short by a crash
      let goodLength = Buffer.byteLength(lines[0] ?? "") + 1
      for (const [index, line] of lines.slice(1, -1).entries()) {
        const decoded = decodeEntry(line)
        if (Either.isLeft(decoded)) return yield* fail(`line ${index + 2} is unreadable; the devnet cannot be resumed`)
        entries.push(decoded.right)
        goodLength += Buffer.byteLength(line) + 1
      }
      if (goodLength < Buffer.byteLength(existing)) {
        yield* Effect.logWarning(
          `${file}: dropping ${Buffer.byteLength(existing) - goodLength} bytes of an operation cut short by a crash`
        )
        fs.truncateSync(file, goodLength)
      }
    }
    const fd = yield* Effect.acquireRelease(
      Effect.try({
        try: () => fs.openSync(file, "a"),
        catch: (cause) => new DevnetError({ message: `cannot open ${file}`, cause })
      }),
      (fd) =>
        Effect.sync(() => {
          fs.fsyncSync(fd)
          fs.closeSync(fd)
        })
    )
    return {
      header,
      entries,
      append: (value: A) => {
        fs.writeSync(fd, `${encodeEntry(value)}\n`)
      },
      sync: () => fs.fsyncSync(fd)
    } satisfies Journal<A>
  })

/** A devnet whose state is the replay of its operations. */
export interface Replayable<A> {
  readonly replay: (ops: ReadonlyArray<A>) => void
  readonly recordTo: (record: (op: A) => void) => void
}

/**
 * A devnet rebuilt from its journal (a new one when the journal is new), recording every operation it
 * makes from now on; `flushesAfter` names the operations that show a new block, which reach the disk
 * before anyone can see that block.
 */
export const resumeFromJournal = <A, I, D extends Replayable<A>>(options: {
  readonly file: string
  readonly kind: string
  readonly version: number
  readonly op: Schema.Schema<A, I>
  readonly make: (header: JournalHeader) => D
  readonly flushesAfter: (op: A) => boolean
}) =>
  Effect.gen(function* () {
    const journal = yield* openJournal(options.file, options.kind, options.version, options.op)
    const devnet = options.make(journal.header)
    const started = Date.now()
    yield* Effect.try({
      try: () => devnet.replay(journal.entries),
      catch: (cause) =>
        new DevnetError({
          message: `${options.file}: the ${options.kind} cannot be replayed: ${cause instanceof Error ? cause.message : String(cause)}`,
          cause
        })
    })
    devnet.recordTo((op) => {
      journal.append(op)
      if (options.flushesAfter(op)) journal.sync()
    })
    return { devnet, replayed: journal.entries.length, replayMs: Date.now() - started }
  })
