import { Effect } from "effect"
import type * as http from "node:http"
import { DevnetError } from "./devnet-error.js"

const listen = (server: http.Server, name: string, port: number) =>
  Effect.async<number, DevnetError>((resume) => {
    server.once("error", (cause) =>
      resume(Effect.fail(new DevnetError({ message: `cannot start the ${name}`, cause })))
    )
    server.listen(port, "127.0.0.1", () => {
      const address = server.address()
      resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

const close = (server: http.Server) =>
  Effect.async<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })

/**
 * Serves `server` on 127.0.0.1 until the scope closes; returns its URL. Without a port, the system's free
 * one, taken as it is bound, and never one of `avoidPorts` (the service's HTTP port, bound later: a test
 * picks it free, so the system may hand it out again before then).
 */
export const serveOnLoopback = (
  server: http.Server,
  name: string,
  port?: number,
  avoidPorts: ReadonlyArray<number> = []
) =>
  Effect.gen(function* () {
    const chosen = yield* Effect.acquireRelease(
      Effect.gen(function* () {
        if (port !== undefined && port > 0) return yield* listen(server, name, port)
        for (;;) {
          const bound = yield* listen(server, name, 0)
          if (!avoidPorts.includes(bound)) return bound
          yield* close(server)
        }
      }),
      () => close(server)
    )
    return `http://127.0.0.1:${chosen}`
  })
