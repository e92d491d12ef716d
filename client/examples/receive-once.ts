import * as path from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
// in your project: from "@facet-pay/client/webhooks"
import {
  type FacetWebhookEvent,
  FacetWebhookError,
  orderToFulfil,
  streamOf,
  verifyFacetWebhook,
  type WebhookHeaders
} from "../src/webhooks.js"

/**
 * What every example receiver does with a delivery, whatever the framework: verify it over the raw bytes,
 * then, in one PostgreSQL transaction, record its idempotency key and act. A key already recorded is a
 * duplicate (a retry whose 2xx was lost, an operator's replay): answered 200, nothing done again. An action
 * that throws rolls the key back with it and answers 500, so the service delivers the event again later.
 */

/**
 * What your code does with an event, inside the transaction that records its key (use `db` for your writes).
 * `latest` is false for an event older than one already applied for the same order (withdrawal, refund): a
 * replay, or a dead event sent again. Keep the status you show from `latest` events only.
 */
export type WebhookAction = (
  event: FacetWebhookEvent,
  db: pg.PoolClient,
  context: { readonly latest: boolean }
) => Promise<void>

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

/** The orders fulfilled, one row per order id: what makes fulfilment once per order, whatever arrives. */
export const CREATE_FULFILLED = `CREATE TABLE IF NOT EXISTS facet_fulfilled_orders (
  order_id text PRIMARY KEY,
  idempotency_key text NOT NULL,
  fulfilled_at timestamptz NOT NULL DEFAULT now()
)`

/** The highest `sequence` applied per order (withdrawal, refund): an older event is not applied over it. */
export const CREATE_STREAMS = `CREATE TABLE IF NOT EXISTS facet_streams (
  stream text PRIMARY KEY,
  sequence integer NOT NULL
)`

export const openPool = async (databaseUrl: string): Promise<pg.Pool> => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 })
  for (const table of [CREATE_TABLE, CREATE_FULFILLED, CREATE_STREAMS]) await pool.query(table)
  return pool
}

/**
 * Whether the event is the latest of its order (withdrawal, refund) applied so far, recorded in `db`'s
 * transaction: its `sequence` above the highest one applied. Events without a stream or a sequence are.
 */
const isLatest = async (db: pg.PoolClient, event: FacetWebhookEvent): Promise<boolean> => {
  const stream = streamOf(event.body)
  const sequence = event.body.event === "wallet.deposit.confirmed" ? undefined : event.body.sequence
  if (stream === undefined || sequence === undefined) return true
  const newer = await db.query(
    `INSERT INTO facet_streams (stream, sequence) VALUES ($1, $2)
     ON CONFLICT (stream) DO UPDATE SET sequence = excluded.sequence WHERE facet_streams.sequence < excluded.sequence`,
    [stream, sequence]
  )
  return newer.rowCount === 1
}

/**
 * Fulfils an order once per order id: only for the event that is its transition to PAID (`orderToFulfil`,
 * `order.paid`), and only if no row for that order id exists yet (recorded in the same transaction). `fulfil`
 * is your shipment, licence or voucher. True when it ran.
 */
export const fulfilOnce = async (
  db: pg.PoolClient,
  event: FacetWebhookEvent,
  fulfil: (order: NonNullable<ReturnType<typeof orderToFulfil>>) => Promise<void>
): Promise<boolean> => {
  const order = orderToFulfil(event)
  if (order === undefined) return false
  const fresh = await db.query(
    "INSERT INTO facet_fulfilled_orders (order_id, idempotency_key) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    [order.order_id, event.idempotencyKey]
  )
  if (fresh.rowCount === 0) return false
  await fulfil(order)
  return true
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
    await action(event, db, { latest: await isLatest(db, event) })
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

/**
 * `main`'s action: it logs each event and fulfils each paid order once (put your fulfilment and crediting here,
 * writing through `db`). A payment after PAID (`payment.overpaid`) is logged as what it is: money beyond the
 * order, to refund or keep (`order.overpaid_amount`), never a second sale.
 */
export const logEvent: WebhookAction = async (event, db, { latest }) => {
  console.log(
    `${event.type} ${event.idempotencyKey}${latest ? "" : " (older than one applied)"}`,
    JSON.stringify(event.body)
  )
  await fulfilOnce(db, event, async (order) => {
    console.log(`fulfil order ${order.order_id} (${order.amount} ${order.currency})`)
  })
  if (event.type === "order.updated" && event.body.event === "payment.overpaid")
    console.log(
      `order ${event.body.order.order_id} overpaid by ${event.body.order.overpaid_amount ?? "0"} ${event.body.order.currency}`
    )
}

/** True when the module is the script node was started with. */
export const isMain = (moduleUrl: string) =>
  process.argv[1] !== undefined && fileURLToPath(moduleUrl) === path.resolve(process.argv[1])
