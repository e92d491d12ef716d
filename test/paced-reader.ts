import { Effect } from "effect"
import * as http from "node:http"
import { TestClient } from "./http-harness.js"

export interface PacedReader {
  readonly status: number
  /** How the body ended once read: cleanly ("end") or cut ("cut"). Reading at full speed from here on. */
  readonly readToTheEnd: () => Promise<"end" | "cut">
}

/**
 * A client of the service under test that GETs `path` and reads `bytes` of the body every `everyMs` (less
 * when it holds less), as a slow or a steady client would: the service sees its pace through the sockets.
 * Its connection is closed with the caller's scope.
 */
export const readerAt = (path: string, apiKey: string, pace: { readonly everyMs: number; readonly bytes: number }) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    return yield* Effect.acquireRelease(
      Effect.async<{ reader: PacedReader; close: () => void }>((resume) => {
        const request = http.get(`${client.url}${path}`, { headers: { "x-api-key": apiKey } }, (response) => {
          response.pause()
          const ended = new Promise<"end" | "cut">((settle) => {
            response.once("end", () => settle("end"))
            response.once("aborted", () => settle("cut"))
            response.once("error", () => settle("cut"))
          })
          const timer = setInterval(() => {
            let read = 0
            while (read < pace.bytes) {
              const piece: unknown = response.read(Math.min(16_384, pace.bytes - read))
              if (!(piece instanceof Buffer)) return
              read += piece.byteLength
            }
          }, pace.everyMs)
          response.once("close", () => clearInterval(timer))
          resume(
            Effect.succeed({
              reader: {
                status: response.statusCode ?? 0,
                readToTheEnd: () => {
                  clearInterval(timer)
                  response.resume()
                  return ended
                }
              },
              close: () => {
                clearInterval(timer)
                request.destroy()
              }
            })
          )
        })
        request.on("error", () => undefined)
      }),
      ({ close }) => Effect.sync(close)
    ).pipe(Effect.map(({ reader }) => reader))
  })
