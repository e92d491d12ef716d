import { Effect } from "effect"
import * as http from "node:http"

export interface ReceivedRequest {
  readonly headers: http.IncomingHttpHeaders
  readonly rawBody: Buffer
  readonly at: number
}

/**
 * A real HTTP receiver on a free loopback port. `respond` picks each response's status (by the number
 * of requests seen so far); it records everything it receives. Closed with its scope.
 */
export const startReceiver = (respond: (seen: number, request: ReceivedRequest) => number = () => 200, port = 0) =>
  Effect.acquireRelease(
    Effect.async<{
      readonly url: string
      readonly port: number
      readonly received: Array<ReceivedRequest>
      readonly server: http.Server
    }>((resume) => {
      const received: Array<ReceivedRequest> = []
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const request = { headers: req.headers, rawBody: Buffer.concat(chunks), at: Date.now() }
          received.push(request)
          res.statusCode = respond(received.length, request)
          res.end("ok")
        })
      })
      server.listen(port, "127.0.0.1", () => {
        const address = server.address()
        const bound = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ url: `http://127.0.0.1:${bound}/hook`, port: bound, received, server }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** Waits (polling) until `predicate` holds, up to `timeoutMs`. */
export const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, predicate: (a: A) => boolean, timeoutMs = 10_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = yield* check
      if (predicate(value) || Date.now() > deadline) return value
      yield* Effect.sleep("50 millis")
    }
  })
