import * as http from "node:http"
import {
  isMain,
  logEvent,
  openPool,
  optionsFromEnv,
  type ReceiverOptions,
  type RunningReceiver,
  receiveOnce,
  WEBHOOK_PATH
} from "./receive-once.js"

/** The largest body read (Facet's are a few KB): the Express and Fastify examples take the same 1 MB. */
export const MAX_BODY_BYTES = 1024 * 1024

/** How long a refused sender has to read the 413 before its connection is cut. */
const LINGER_MS = 500

/**
 * Refuses a body over `MAX_BODY_BYTES`: 413, nothing of the body kept, and the connection destroyed
 * `LINGER_MS` after the answer is out, so a sender that keeps streaming is cut off rather than read to its end.
 * Not at once, and not by `connection: close` (with which Node closes the socket right after the answer):
 * closing a socket that still has unread bytes resets it, and the reset can make the sender lose the 413 it
 * has not read yet; in the meantime Node reads and drops what comes in.
 */
const refuseTooLarge = (req: http.IncomingMessage, res: http.ServerResponse) => {
  res.writeHead(413, { "content-type": "text/plain" }).end(`body larger than ${MAX_BODY_BYTES} bytes`, () => {
    setTimeout(() => req.destroy(), LINGER_MS).unref()
  })
}

/**
 * A Facet webhook receiver on Node's own `http`, no framework: the body is read as the raw chunks it arrived
 * in (at most 1 MB: a larger one is answered 413 and not read further), verified, and processed once
 * (./receive-once.ts).
 *
 *   FACET_WEBHOOK_SECRET=whsec_… DATABASE_URL=postgres://… PORT=3000 node --import tsx client/examples/node-http.ts
 *
 * then set http://<this host>:3000/facet/webhooks as the merchant's webhook_url.
 */
export const startNodeHttpReceiver = async (options: ReceiverOptions): Promise<RunningReceiver> => {
  const pool = await openPool(options.databaseUrl)
  const server = http.createServer((req, res) => {
    if (req.method !== "POST" || req.url !== WEBHOOK_PATH) {
      res.writeHead(404).end()
      return
    }
    // a declared length over the cap is refused before a byte of the body is read
    if (Number(req.headers["content-length"] ?? 0) > MAX_BODY_BYTES) {
      refuseTooLarge(req, res)
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    let refused = false
    req.on("data", (chunk: Buffer) => {
      if (refused) return
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        // a streamed (chunked) body that passes the cap: stop here, drop what was kept
        refused = true
        chunks.length = 0
        refuseTooLarge(req, res)
        return
      }
      chunks.push(chunk)
    })
    req.on("end", () => {
      if (refused) return
      // the exact bytes as they came: never JSON.parse and JSON.stringify them again before verifying
      const rawBody = Buffer.concat(chunks)
      receiveOnce(pool, options.secret, rawBody, req.headers, options.action).then(
        (answer) => res.writeHead(answer.status, { "content-type": "text/plain" }).end(answer.body),
        () => res.writeHead(500).end()
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(options.port, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : options.port
  return {
    url: `http://127.0.0.1:${port}${WEBHOOK_PATH}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await pool.end()
    }
  }
}

export const main = async () => {
  const receiver = await startNodeHttpReceiver(optionsFromEnv(logEvent))
  console.log(`receiving Facet webhooks at ${receiver.url}`)
}

if (isMain(import.meta.url)) await main()
