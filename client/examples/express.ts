import express from "express"
import type { Server } from "node:http"
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
 * A Facet webhook receiver on Express 5. The trap: `express.json()` (often app-wide) parses the body, and
 * the signature is over the raw bytes, which are then gone. This route takes `express.raw(...)` instead, so
 * `req.body` is the Buffer as it arrived; mount it before any app-wide JSON parser, or keep that parser off
 * this path.
 *
 *   FACET_WEBHOOK_SECRET=whsec_… DATABASE_URL=postgres://… PORT=3000 node --import tsx client/examples/express.ts
 */
export const startExpressReceiver = async (options: ReceiverOptions): Promise<RunningReceiver> => {
  const pool = await openPool(options.databaseUrl)
  const app = express()
  app.post(WEBHOOK_PATH, express.raw({ type: "application/json", limit: "1mb" }), async (req, res) => {
    // a Buffer when the content type matched; anything else is no Facet delivery (and fails the signature)
    const rawBody: unknown = req.body
    const answer = await receiveOnce(
      pool,
      options.secret,
      Buffer.isBuffer(rawBody) ? rawBody : Buffer.alloc(0),
      req.headers,
      options.action
    )
    res.status(answer.status).type("text/plain").send(answer.body)
  })
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(options.port, "127.0.0.1", () => resolve(listening))
  })
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
  const receiver = await startExpressReceiver(optionsFromEnv(logEvent))
  console.log(`receiving Facet webhooks at ${receiver.url}`)
}

if (isMain(import.meta.url)) await main()
