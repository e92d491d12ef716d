import Fastify from "fastify"
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
 * A Facet webhook receiver on Fastify 5. The trap: Fastify parses `application/json` bodies itself, and the
 * signature is over the raw bytes, which its parser does not keep. The webhook route lives in a plugin of its
 * own whose `application/json` parser hands the body over as the Buffer it arrived as; the rest of the app
 * keeps Fastify's JSON parsing.
 *
 *   FACET_WEBHOOK_SECRET=whsec_… DATABASE_URL=postgres://… PORT=3000 node --import tsx client/examples/fastify.ts
 */
export const startFastifyReceiver = async (options: ReceiverOptions): Promise<RunningReceiver> => {
  const pool = await openPool(options.databaseUrl)
  const app = Fastify({ bodyLimit: 1024 * 1024 })
  // a callback plugin (nothing in it to await): its routes are registered before `done`
  await app.register((webhooks, _options, done) => {
    // in this plugin only: the raw bytes, unparsed
    webhooks.removeContentTypeParser("application/json")
    webhooks.addContentTypeParser("application/json", { parseAs: "buffer" }, (_request, body, done) => {
      done(null, body)
    })
    webhooks.post(WEBHOOK_PATH, async (request, reply) => {
      const rawBody: unknown = request.body
      const answer = await receiveOnce(
        pool,
        options.secret,
        Buffer.isBuffer(rawBody) ? rawBody : Buffer.alloc(0),
        request.headers,
        options.action
      )
      return reply.code(answer.status).type("text/plain").send(answer.body)
    })
    done()
  })
  await app.listen({ port: options.port, host: "127.0.0.1" })
  const address = app.server.address()
  const port = typeof address === "object" && address !== null ? address.port : options.port
  return {
    url: `http://127.0.0.1:${port}${WEBHOOK_PATH}`,
    close: async () => {
      await app.close()
      await pool.end()
    }
  }
}

export const main = async () => {
  const receiver = await startFastifyReceiver(optionsFromEnv(logEvent))
  console.log(`receiving Facet webhooks at ${receiver.url}`)
}

if (isMain(import.meta.url)) await main()
