import { Effect } from "effect"
import * as http from "node:http"

/**
 * An HTTP server on a free port of 127.0.0.1 for the scope (a scripted node, a proxy in front of one): its
 * URL. Closed with the scope, open connections cut, so a held request never keeps a test waiting.
 */
export const serveLocally = (handler: http.RequestListener) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly server: http.Server }>((resume) => {
      const server = http.createServer(handler)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, server }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
