import * as path from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
// in your project: from "@facet-pay/client/webhooks"
import { type FacetWebhookEvent, FacetWebhookError, verifyFacetWebhook, type WebhookHeaders } from "../src/webhooks.js"

/**
 * What every example receiver does with a delivery, whatever the framework: verify it over the raw bytes,
 * then, in one PostgreSQL transaction, record its idempotency key and act. A key already recorded is a
 * duplicate (a retry whose 2xx was lost, an operator's replay): answered 200, nothing done again. An action
 * that throws rolls the key back with it and answers 500, so the service delivers the event again later.
 */

/** What your code does with an event, inside the transaction that records its key (use `db` for your writes). */
export type WebhookAction = (event: FacetWebhookEvent, db: pg.PoolClient) => Promise<void>

export interface ReceiverOptions {
  /** The port to listen on (0: any free one). */
  readonly port: number
  /** FACET_WEBHOOK_SECRET from onboarding (the `whsec_…` string itself). */
  readonly secret: string
  /** Your PostgreSQL, where the keys are kept (DATABASE_URL). */
  readonly databaseUrl: string
  readonly action: WebhookAction
}

export interface RunningReceiver {
  /** Where the service should deliver: set it as the merchant's webhook_url (or an order's notify_url). */
  readonly url: string
  readonly close: () => Promise<void>
}

/** The path the examples listen on. */
export const WEBHOOK_PATH = "/facet/webhooks"

export const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS facet_webhook_events (
  idempotency_key text PRIMARY KEY,
  event_type text,
  received_at timestamptz
)`

export const openPool = async (databaseUrl: string): Promise<pg.Pool> => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 })
  await pool.query(CREATE_TABLE)
  return pool
}

export interface Answer {
  readonly status: number
  readonly body: string
}

/** One delivery, start to end: the status and text to answer. */
export const receiveOnce = async (
  pool: pg.Pool,
  secret: string,
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  action: WebhookAction
): Promise<Answer> => {
  let event: FacetWebhookEvent
  try {
    // the signature over the exact bytes first; nothing is parsed before it holds
    event = verifyFacetWebhook(rawBody, headers, secret)
  } catch (error) {
    if (error instanceof FacetWebhookError) return { status: error.status, body: error.message }
    throw error
  }
  const db = await pool.connect()
  try {
    await db.query("BEGIN")
    // the key first, in the transaction of the action: a duplicate waits here for the first to end
    const fresh = await db.query(
      "INSERT INTO facet_webhook_events (idempotency_key, event_type, received_at) VALUES ($1, $2, now()) ON CONFLICT DO NOTHING",
      [event.idempotencyKey, event.type]
    )
    if (fresh.rowCount === 0) {
      await db.query("ROLLBACK")
      return { status: 200, body: "duplicate: already processed" }
    }
    await action(event, db)
    await db.query("COMMIT")
    // 2xx only now: the key and what the action wrote are durable together
    return { status: 200, body: "processed" }
  } catch (error) {
    await db.query("ROLLBACK").catch(() => undefined)
    console.error(`facet webhook ${event.idempotencyKey} not processed:`, error)
    return { status: 500, body: "not processed; deliver it again" }
  } finally {
    db.release()
  }
}

/** `main`'s settings from the environment: PORT (default 3000), FACET_WEBHOOK_SECRET, DATABASE_URL. */
export const optionsFromEnv = (action: WebhookAction): ReceiverOptions => {
  const secret = process.env.FACET_WEBHOOK_SECRET
  const databaseUrl = process.env.DATABASE_URL
  if (secret === undefined || databaseUrl === undefined)
    throw new Error("set FACET_WEBHOOK_SECRET and DATABASE_URL (and PORT, default 3000)")
  return { port: Number(process.env.PORT ?? "3000"), secret, databaseUrl, action }
}

/** `main`'s action: it logs each event (put your fulfilment or crediting here, writing through `db`). */
export const logEvent: WebhookAction = async (event) => {
  console.log(`${event.type} ${event.idempotencyKey}`, JSON.stringify(event.body))
}

/** True when the module is the script node was started with. */
export const isMain = (moduleUrl: string) =>
  process.argv[1] !== undefined && fileURLToPath(moduleUrl) === path.resolve(process.argv[1])
