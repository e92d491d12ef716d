import { Effect } from "effect"
import * as http from "node:http"

/** A request the proxy saw. */
export interface SeenRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** What the service answered a forwarded request. */
export interface ServiceAnswer {
  readonly status: number
  readonly body: string
}

/**
 * What the proxy does with a request: pass it on; pass it on and then answer something else (the service did
 * the work, its answer was lost on the way back); answer without passing it on; or drop the connection.
 */
export type ProxyAction =
  | { readonly _tag: "forward" }
  | {
      readonly _tag: "forwardThenAnswer"
      readonly status: number
      readonly headers?: Record<string, string>
      readonly body: string
    }
  | {
      readonly _tag: "answer"
      readonly status: number
      readonly headers?: Record<string, string>
      readonly body: string
    }
  | { readonly _tag: "hangUp" }

export const forward: ProxyAction = { _tag: "forward" }

/** The service's 503 `{error}`, as the contract shapes it. */
export const unavailable = (then: "forwardThenAnswer" | "answer"): ProxyAction => ({
  _tag: then,
  status: 503,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ error: "the database is temporarily unavailable; retry with backoff" })
})

/**
 * An HTTP proxy in front of the service for the client's retry tests: `decide` picks what happens to each
 * request (by its number, 1-based, among the requests seen so far, and the request); every request and every
 * answer the service gave is kept. Closed with its scope.
 */
export const startFaultProxy = (target: string, decide: (n: number, request: SeenRequest) => ProxyAction) =>
  Effect.acquireRelease(
    Effect.async<{
      readonly url: string
      readonly seen: Array<SeenRequest>
      readonly answers: Array<ServiceAnswer>
      readonly server: http.Server
    }>((resume) => {
      const seen: Array<SeenRequest> = []
      const answers: Array<ServiceAnswer> = []
      const passOn = async (request: SeenRequest): Promise<{ status: number; headers: Headers; body: string }> => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(request.headers)) {
          if (name === "host" || name === "connection" || name === "content-length" || value === undefined) continue
          headers.set(name, Array.isArray(value) ? value.join(", ") : value)
        }
        const response = await fetch(`${target}${request.path}`, {
          method: request.method,
          headers,
          body: request.method === "GET" || request.method === "HEAD" ? undefined : request.body
        })
        const body = await response.text()
        answers.push({ status: response.status, body })
        return { status: response.status, headers: response.headers, body }
      }
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const request: SeenRequest = {
            method: req.method ?? "GET",
            path: req.url ?? "/",
            headers: req.headers,
            body: Buffer.concat(chunks).toString("utf8")
          }
          seen.push(request)
          const action = decide(seen.length, request)
          const send = (status: number, headers: Record<string, string> | undefined, body: string) =>
            res.writeHead(status, headers).end(body)
          switch (action._tag) {
            case "hangUp":
              req.socket.destroy()
              return
            case "answer":
              send(action.status, action.headers, action.body)
              return
            case "forward":
            case "forwardThenAnswer":
              passOn(request).then(
                (answer) =>
                  action._tag === "forward"
                    ? send(
                        answer.status,
                        { "content-type": answer.headers.get("content-type") ?? "application/json" },
                        answer.body
                      )
                    : send(action.status, action.headers, action.body),
                (error: unknown) => send(502, undefined, String(error))
              )
          }
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, seen, answers, server }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
