import { Effect } from "effect"
import type * as http from "node:http"
import { freePort } from "../database/embedded-postgres.js"
import { DevnetError } from "./devnet-error.js"

/** Serves `server` on 127.0.0.1 (a free port unless one is given) until the scope closes; returns its URL. */
export const serveOnLoopback = (server: http.Server, name: string, port?: number) =>
  Effect.gen(function*() {
    const chosen = port !== undefined && port > 0 ? port : yield* freePort
    yield* Effect.acquireRelease(
      Effect.async<void, DevnetError>((resume) => {
        server.once("error", (cause) => resume(Effect.fail(new DevnetError({ message: `cannot start the ${name}`, cause }))))
        server.listen(chosen, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    return `http://127.0.0.1:${chosen}`
  })
