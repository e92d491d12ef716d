import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as net from "node:net"
import pg from "pg"
import { createTestDatabase } from "../test/database.js"
import { MAX_BODY_BYTES, startNodeHttpReceiver } from "./examples/node-http.js"
import { WEBHOOK_PATH } from "./examples/receive-once.js"

/**
 * The Node `http` example reads at most 1 MB of a body, like the Express and Fastify ones: a larger body, declared
 * or streamed, is answered 413 and the connection is closed, nothing more read, nothing stored.
 */

/** What a raw client gets: everything the server wrote until it closed the connection, and how much was sent. */
interface RawExchange {
  readonly answer: string
  readonly sentBytes: number
}

/**
 * Opens a connection, sends `head`, then `body` in 64 KB pieces, one every 10 ms (about 6 MB/s: a sender the
 * server has to cut off, not one done before it could), while the server keeps the connection open, and reads
 * until the server closes it (or `giveUpMs` passes).
 */
const rawExchange = (port: number, head: string, body: Buffer, giveUpMs = 20_000) =>
  Effect.async<RawExchange>((resume) => {
    const socket = net.connect(port, "127.0.0.1")
    const received: Array<Buffer> = []
    let sentBytes = 0
    let closed = false
    const done = () => {
      if (closed) return
      closed = true
      clearTimeout(timer)
      socket.destroy()
      resume(Effect.succeed({ answer: Buffer.concat(received).toString("latin1"), sentBytes }))
    }
    const timer = setTimeout(done, giveUpMs)
    socket.on("data", (chunk: Buffer) => received.push(chunk))
    socket.on("close", done)
    // the server closing while we still write is expected
    socket.on("error", () => undefined)
    socket.on("connect", () => {
      socket.write(head)
      const sendNext = () => {
        if (closed || socket.destroyed || sentBytes >= body.length) return
        const piece = body.subarray(sentBytes, sentBytes + 64 * 1024)
        sentBytes += piece.length
        socket.write(piece, () => setTimeout(sendNext, 10))
      }
      sendNext()
    })
  })

const headOf = (port: number, lines: ReadonlyArray<string>) =>
  [`POST ${WEBHOOK_PATH} HTTP/1.1`, `host: 127.0.0.1:${port}`, "content-type: application/json", ...lines, "", ""].join(
    "\r\n"
  )

/** `size` bytes as one HTTP/1.1 chunk each 64 KB, and the last chunk. */
const chunked = (size: number) => {
  const pieces: Array<Buffer> = []
  for (let left = size; left > 0; left -= 64 * 1024) {
    const n = Math.min(left, 64 * 1024)
    pieces.push(Buffer.from(`${n.toString(16)}\r\n`), Buffer.alloc(n, 0x20), Buffer.from("\r\n"))
  }
  pieces.push(Buffer.from("0\r\n\r\n"))
  return Buffer.concat(pieces)
}

describe("the node:http example receiver's body limit", () => {
  it.scoped(
    "a body over 1 MB, declared or streamed, is answered 413 and cut off; a small one is read and verified",
    () =>
      Effect.gen(function* () {
        const databaseUrl = Redacted.value(yield* createTestDatabase)
        const acted: Array<string> = []
        const receiver = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startNodeHttpReceiver({
              port: 0,
              secret: "whsec_test",
              databaseUrl,
              action: async (event) => {
                acted.push(event.idempotencyKey)
              }
            })
          ),
          (running) => Effect.promise(() => running.close())
        )
        const port = Number(new URL(receiver.url).port)
        // 16 MB: about 2.6 s to send at the pace above; the receiver cuts it off about 0.5 s after its 413
        const tooLarge = 16 * MAX_BODY_BYTES

        // declared: refused at the headers, before the body is read
        const declared = yield* rawExchange(
          port,
          headOf(port, [`content-length: ${tooLarge}`]),
          Buffer.alloc(tooLarge, 0x20)
        )
        expect(declared.answer).toMatch(/^HTTP\/1\.1 413 /)
        expect(declared.sentBytes).toBeLessThan(tooLarge / 2)

        // streamed without a length: read until it passes 1 MB, then refused and cut off
        const streamed = yield* rawExchange(port, headOf(port, ["transfer-encoding: chunked"]), chunked(tooLarge))
        expect(streamed.answer).toMatch(/^HTTP\/1\.1 413 /)
        expect(streamed.sentBytes).toBeGreaterThan(MAX_BODY_BYTES)
        expect(streamed.sentBytes).toBeLessThan(tooLarge / 2)

        // a body within the limit is read whole and checked: unsigned, 401
        const small = yield* rawExchange(
          port,
          headOf(port, ["content-length: 2", "connection: close"]),
          Buffer.from("{}")
        )
        expect(small.answer).toMatch(/^HTTP\/1\.1 401 /)

        // nothing was acted on or stored
        expect(acted).toEqual([])
        const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 })
        const stored = yield* Effect.promise(() =>
          pool.query("SELECT count(*)::int AS n FROM facet_webhook_events").finally(() => pool.end())
        )
        expect(stored.rows).toEqual([{ n: 0 }])
      }),
    30_000
  )
})
