import { Effect, Redacted, Runtime } from "effect"
import * as http from "node:http"
import { fulfilOnce, openPool, receiveOnce, type WebhookAction } from "../../client/examples/receive-once.js"
import type { OrderStatus } from "../../src/domain/order.js"
import { createTestDatabase } from "../database.js"
import type { ReceivedRequest } from "../webhook-receiver.js"
import type { Random } from "./seeded-random.js"

/** How a delivery the receiver fails goes wrong: its database is down (500), or the connection is cut. */
export type ReceiverFault = "answered 500" | "dropped before processing" | "dropped after processing"

/** A status the receiver applied to an order (from an event that was the latest of its order). */
export interface AppliedStatus {
  readonly sequence: number | undefined
  readonly event: string
  readonly status: OrderStatus
}

/** A `payment.overpaid` the receiver processed: the payment it names and the order's overpayment it shows. */
export interface OverpaidSeen {
  readonly orderId: string
  readonly txHash: string
  readonly toAddress: string
  readonly amount: string
  readonly overpaidAmount: string | undefined
}

/** What the merchant's receiver did, for the invariants. */
export interface ReceiverRecord {
  /** Order id → how many times its fulfilment ran (the merchant's shipment, licence, voucher). */
  readonly fulfilments: Map<string, number>
  /** Order id → the idempotency keys of the events `orderToFulfil` named it in (processed, not duplicates). */
  readonly fulfilEvents: Map<string, Set<string>>
  /** Order id → the statuses applied from its latest events, in the order they were applied. */
  readonly applied: Map<string, Array<AppliedStatus>>
  /** Events processed (new keys) that were older than one already applied for their order: out of order. */
  readonly older: Array<string>
  readonly overpaid: Array<OverpaidSeen>
  /** Order id → events processed whose body said PAID: what a receiver fulfilling on "status PAID" would act on. */
  readonly paidBodies: Map<string, number>
  /** What the kit refused (every delivery here is genuine: each is a failure). */
  readonly refused: Array<string>
  readonly faults: Map<ReceiverFault, number>
  counts: { deliveries: number; processed: number; duplicates: number }
}

const FAULTS: ReadonlyArray<ReceiverFault> = ["answered 500", "dropped before processing", "dropped after processing"]

/**
 * The merchant's receiver as the guides teach it (docs/guides/webhooks.md, docs/guides/client.md): the
 * examples' own `receiveOnce` (client/examples/receive-once.ts) on a PostgreSQL database of its own — verified
 * with the kit over the raw bytes, the idempotency key stored in the transaction of the action, an event older
 * than one applied for its order not applied (`latest`: `streamOf` and the sequence), fulfilment by `fulfilOnce`
 * (`orderToFulfil`: `order.paid`, once per order id). It fails intermittently, by the dice of `random`: for a
 * share `rate` of deliveries it answers 500 without processing, or cuts the connection before processing, or
 * processes and then cuts the connection (the answer lost: the service sends it again, a duplicate) — never
 * more than `maxFailures` times for one event, so every event gets through. It lives in the test process, so
 * it outlives the service it receives from (killed and restarted). `setSecret` once onboarding gave it;
 * before, it answers 503.
 */
export const startDocumentedReceiver = (options: {
  readonly random: Random
  readonly rate: number
  readonly maxFailures: number
}) =>
  Effect.gen(function* () {
    const databaseUrl = Redacted.value(yield* createTestDatabase)
    const pool = yield* Effect.acquireRelease(
      Effect.promise(() => openPool(databaseUrl)),
      (opened) => Effect.promise(() => opened.end())
    )
    const record: ReceiverRecord = {
      fulfilments: new Map(),
      fulfilEvents: new Map(),
      applied: new Map(),
      older: [],
      overpaid: [],
      paidBodies: new Map(),
      refused: [],
      faults: new Map(),
      counts: { deliveries: 0, processed: 0, duplicates: 0 }
    }
    const received: Array<ReceivedRequest> = []
    const failuresOf = new Map<string, number>()
    let secret: string | undefined

    // what the merchant's code does with each new event, inside the transaction that stores its key
    const action: WebhookAction = async (event, db, { latest }) => {
      record.counts.processed += 1
      if (!latest) record.older.push(event.idempotencyKey)
      if (event.type !== "order.updated") return
      const body = event.body
      const orderId = body.order.order_id
      if (latest)
        record.applied.set(orderId, [
          ...(record.applied.get(orderId) ?? []),
          { sequence: body.sequence, event: body.event, status: body.order.status }
        ])
      if (body.order.status === "PAID") record.paidBodies.set(orderId, (record.paidBodies.get(orderId) ?? 0) + 1)
      if (body.event === "payment.overpaid" && body.payment !== undefined)
        record.overpaid.push({
          orderId,
          txHash: body.payment.tx_hash,
          toAddress: body.payment.to_address,
          amount: body.payment.amount,
          overpaidAmount: body.order.overpaid_amount
        })
      await fulfilOnce(db, event, async (order) => {
        record.fulfilEvents.set(
          order.order_id,
          (record.fulfilEvents.get(order.order_id) ?? new Set()).add(event.idempotencyKey)
        )
        record.fulfilments.set(order.order_id, (record.fulfilments.get(order.order_id) ?? 0) + 1)
      })
    }

    const fault = (request: ReceivedRequest): ReceiverFault | undefined => {
      const delivery = String(request.headers["x-facet-delivery-id"] ?? "")
      const failures = failuresOf.get(delivery) ?? 0
      if (failures >= options.maxFailures || options.random.next() >= options.rate) return undefined
      failuresOf.set(delivery, failures + 1)
      const kind = options.random.pick(FAULTS)
      record.faults.set(kind, (record.faults.get(kind) ?? 0) + 1)
      return kind
    }

    const handle = (request: ReceivedRequest, req: http.IncomingMessage, res: http.ServerResponse) =>
      Effect.gen(function* () {
        record.counts.deliveries += 1
        const given = secret
        if (given === undefined) {
          res.writeHead(503).end()
          return
        }
        const kind = fault(request)
        if (kind === "answered 500") {
          res.writeHead(500).end("database unavailable")
          return
        }
        if (kind === "dropped before processing") {
          req.socket.destroy()
          return
        }
        const answer = yield* Effect.tryPromise(() => receiveOnce(pool, given, request.rawBody, req.headers, action))
        if (answer.status === 401 || answer.status === 400) record.refused.push(answer.body)
        if (answer.status === 200 && answer.body.startsWith("duplicate")) record.counts.duplicates += 1
        // processed, and the answer never reaches the service: it delivers the event again
        if (kind === "dropped after processing") req.socket.destroy()
        else res.writeHead(answer.status, { "content-type": "text/plain" }).end(answer.body)
      }).pipe(Effect.catchAll(() => Effect.sync(() => res.writeHead(500).end())))

    const runtime = yield* Effect.runtime<never>()
    const server = yield* Effect.acquireRelease(
      Effect.async<http.Server>((resume) => {
        const created = http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (chunk: Buffer) => chunks.push(chunk))
          req.on("end", () => {
            const request: ReceivedRequest = { headers: req.headers, rawBody: Buffer.concat(chunks), at: Date.now() }
            received.push(request)
            Runtime.runFork(runtime)(handle(request, req, res))
          })
        })
        created.listen(0, "127.0.0.1", () => resume(Effect.succeed(created)))
      }),
      (running) =>
        Effect.async<void>((resume) => {
          running.closeAllConnections()
          running.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return {
      url: `http://127.0.0.1:${port}/facet/webhooks`,
      received,
      record,
      setSecret: (given: string) => {
        secret = given
      }
    }
  })
