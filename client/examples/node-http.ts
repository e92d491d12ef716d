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

/**
 * A Facet webhook receiver on Node's own `http`, no framework: the body is read as the raw chunks it arrived
 * in, verified, and processed once (./receive-once.ts).
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
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
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
