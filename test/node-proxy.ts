import type * as http from "node:http"
import { serveLocally } from "./local-server.js"

export interface ProxiedCall {
  /** The request path (TRON's HTTP API: `/wallet/...`). */
  readonly path: string
  /** The JSON body, or one element of a JSON-RPC batch. */
  readonly body: unknown
}

/** A JSON-RPC request's method, if `body` is one. */
export const rpcMethod = (body: unknown): string | undefined =>
  typeof body === "object" && body !== null && "method" in body && typeof body.method === "string"
    ? body.method
    : undefined

/** A JSON-RPC request's params, if `body` is one. */
export const rpcParams = (body: unknown): ReadonlyArray<unknown> =>
  typeof body === "object" && body !== null && "params" in body && Array.isArray(body.params) ? body.params : []

/** A JSON-RPC request's id, to answer it in kind. */
export const rpcId = (body: unknown): unknown =>
  typeof body === "object" && body !== null && "id" in body ? body.id : null

/** Reads a request to a test node whole: its path and its JSON body (`{}` when empty or not JSON). */
export const onJsonRequest = (req: http.IncomingMessage, use: (path: string, body: unknown) => void) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const text = Buffer.concat(chunks).toString("utf8")
    let body: unknown = {}
    try {
      body = text === "" ? {} : JSON.parse(text)
    } catch {
      body = {}
    }
    use(req.url ?? "/", body)
  })
}

/**
 * A node in front of a real one, for fault tests: every call is forwarded to `target` unless `fault`
 * answers it itself (what a lagging or broken backend would say). JSON-RPC batches are split, so one
 * call of a batch can be faulted. `target` may be asked anew for each call (a node whose address is
 * known only once a service has started it); when it names none, the call fails as an unreachable node
 * does. Closed with its scope.
 */
export const startNodeProxy = (
  target: string | (() => string | undefined),
  fault: (call: ProxiedCall) => unknown,
  /** Changes what the real node answered (a node that leaves things out). */
  rewrite: (call: ProxiedCall, answer: unknown) => unknown = (_, answer) => answer
) => {
  const forward = async (path: string, body: unknown) => {
    const base = typeof target === "string" ? target : target()
    if (base === undefined) throw new Error("no node behind this address yet")
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    const parsed: unknown = await response.json()
    return parsed
  }
  const answer = (path: string, body: unknown) => {
    const faulted = fault({ path, body })
    return faulted === undefined
      ? forward(path, body).then((answer) => rewrite({ path, body }, answer))
      : Promise.resolve(faulted)
  }
  return serveLocally((req, res) => {
    onJsonRequest(req, (path, body) => {
      const reply = Array.isArray(body) ? Promise.all(body.map((one) => answer(path, one))) : answer(path, body)
      reply.then(
        (result) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result)),
        (error: unknown) => res.writeHead(502).end(String(error))
      )
    })
  })
}
