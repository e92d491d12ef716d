import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { NodeStream } from "@effect/platform-node"
import { Effect, Redacted, Stream } from "effect"
import pg from "pg"
import { to as copyTo } from "pg-copy-streams"

/**
 * `COPY (query) TO STDOUT` in text format on a connection of its own, each chunk of bytes handed to
 * `onChunk` as it arrives: millions of rows without a JS object per row (the pool's clients parse every
 * row into one). The query takes no parameters — COPY has none — so it must be built from values that
 * are already checked (numbers, schema-checked literals).
 */
export const copyOut = Effect.fn("copyOut")(function* (query: string, onChunk: (chunk: Buffer) => void) {
  const client = yield* PgClient.PgClient
  const url = client.config.url
  if (url === undefined) return yield* new SqlError({ message: "COPY needs the database URL the pool was made with" })
  const connection = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const connection = new pg.Client({ connectionString: Redacted.value(url), application_name: "facet-copy" })
        await connection.connect()
        return connection
      },
      catch: (cause) => new SqlError({ cause, message: "could not connect for COPY" })
    }),
    (connection) => Effect.promise(() => connection.end().catch(() => undefined))
  )
  yield* Effect.tryPromise({
    try: (signal) =>
      new Promise<void>((resolve, reject) => {
        const stream = connection.query(copyTo(`COPY (${query}) TO STDOUT`))
        const abort = () => stream.destroy(new Error("interrupted"))
        signal.addEventListener("abort", abort, { once: true })
        stream.on("data", (chunk: Buffer) => {
          try {
            onChunk(chunk)
          } catch (error) {
            stream.destroy(error instanceof Error ? error : new Error(String(error)))
          }
        })
        stream.on("error", reject)
        stream.on("end", () => resolve())
      }),
    catch: (cause) =>
      new SqlError({ cause, message: `COPY failed: ${cause instanceof Error ? cause.message : String(cause)}` })
  })
}, Effect.scoped)

/**
 * `COPY (query) TO STDOUT WITH (options)` as a stream of bytes pulled at its reader's pace: the bytes are
 * read from the socket only as fast as they are consumed (an HTTP response waits for its client's drain),
 * so a large export never piles up in this process's memory. A connection of its own, with `settings`
 * (`SET …`) applied first, closed when the stream ends, fails or is interrupted. The query takes no
 * parameters (see `copyOut`).
 */
export const copyOutStream = (
  query: string,
  options: string,
  settings: ReadonlyArray<string> = []
): Stream.Stream<Uint8Array, SqlError, PgClient.PgClient> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const client = yield* PgClient.PgClient
      const url = client.config.url
      if (url === undefined) {
        return yield* new SqlError({ message: "COPY needs the database URL the pool was made with" })
      }
      const connection = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: async () => {
            const connection = new pg.Client({
              connectionString: Redacted.value(url),
              application_name: "facet-export"
            })
            // a connection lost under a stream is that stream's error (below), never an unhandled one
            connection.on("error", () => undefined)
            try {
              await connection.connect()
              for (const setting of settings) await connection.query(setting)
            } catch (cause) {
              // not acquired, so never released: closed here
              await connection.end().catch(() => undefined)
              throw cause
            }
            return connection
          },
          catch: (cause) => new SqlError({ cause, message: "could not connect for COPY" })
        }),
        // ending the connection mid-COPY (a client gone) makes the server stop sending
        (connection) => Effect.promise(() => connection.end().catch(() => undefined))
      )
      const copy = connection.query(copyTo(`COPY (${query}) TO STDOUT WITH (${options})`))
      // the stream's own listener hears an error while it reads; one that comes after it stopped listening (an
      // abandoned export's connection ended under its COPY: "Connection terminated") would crash the process
      copy.on("error", () => undefined)
      return NodeStream.fromReadable<SqlError, Uint8Array>(
        () => copy,
        (cause) =>
          new SqlError({ cause, message: `COPY failed: ${cause instanceof Error ? cause.message : String(cause)}` })
      )
    })
  )
