import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Cause, DateTime, Duration, Effect, Layer, Random, Schedule, Stream } from "effect"
import { AppConfig } from "../config.js"
import { type ClaimedEvent, WebhookStore } from "../stores/webhook-store.js"
import { destinationProblem, guardedLookup } from "./destination-guard.js"
import { GIVE_UP_AFTER, retryDelay } from "./retry-schedule.js"
import { signBody } from "./signature.js"
import { SecretBox } from "../keys/secret-box.js"

interface AttemptResult {
  readonly statusCode: number | null
  readonly error: string | null
  readonly excerpt: string | null
}

// an attempt holds its event for the request timeout plus this margin; after a crash it is due again then
const LEASE_MARGIN = Duration.seconds(5)
const EXCERPT_BYTES = 2048

/** The HTTP client webhooks go out through: in production it refuses private addresses at connect time. */
export const WebhookHttpClientLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    NodeHttpClient.layerWithoutAgent.pipe(
      Layer.provide(
        NodeHttpClient.makeAgentLayer(
          config.network === "mainnet" ? { lookup: guardedLookup, keepAlive: true } : { keepAlive: true }
        )
      )
    )
  )
)

/**
 * Delivers the webhook outbox. Fibers claim due events (one per merchant per round, SKIP LOCKED, so
 * several processes share the work and never claim the same attempt), POST the stored bytes with their
 * signature, and record every attempt. Any 2xx accepts; everything else retries on the schedule until
 * 24 h have passed, then the event is dead until an operator replays it. A slow merchant holds at most
 * `perMerchant` of the `concurrency` slots.
 */
export const WebhookDispatcherLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const store = yield* WebhookStore
    const config = yield* AppConfig
    const client = yield* HttpClient.HttpClient
    // webhook secrets are stored sealed; opened only to sign a delivery
    const box = yield* SecretBox
    const settings = config.webhooks
    const production = config.network === "mainnet"
    const lease = Duration.sum(settings.timeout, LEASE_MARGIN)
    const inFlight = new Map<string, number>()
    let total = 0
    let stopping = false

    const claim = (limit: number, saturated: ReadonlyArray<string>) => store.claimDue(limit, saturated, lease)

    const post = (event: ClaimedEvent): Effect.Effect<AttemptResult> => {
      const problem = destinationProblem(event.destination, production)
      if (problem !== undefined)
        return Effect.succeed({ statusCode: null, error: `refused: ${problem}`, excerpt: null })
      const body = Buffer.from(event.body, "utf8")
      const request = HttpClientRequest.post(event.destination).pipe(
        HttpClientRequest.setHeaders({
          "content-type": "application/json",
          "user-agent": "facet-webhooks/1",
          "x-facet-event": event.event,
          "x-facet-idempotency-key": event.idempotency_key,
          "x-facet-signature": signBody(box.open(event.webhook_secret), body),
          "x-facet-delivery-id": event.id,
          "x-facet-attempt": String(event.attempts)
        }),
        HttpClientRequest.bodyUint8Array(body, "application/json")
      )
      return client.execute(request).pipe(
        Effect.flatMap((response) =>
          response.stream.pipe(
            Stream.runFoldWhile(
              Buffer.alloc(0),
              (acc) => acc.length < EXCERPT_BYTES,
              (acc, chunk) => Buffer.concat([acc, chunk])
            ),
            Effect.map(
              (bytes): AttemptResult => ({
                statusCode: response.status,
                error: response.status >= 200 && response.status < 300 ? null : `HTTP ${response.status}`,
                excerpt: bytes.subarray(0, EXCERPT_BYTES).toString("utf8")
              })
            ),
            Effect.catchAll(() =>
              Effect.succeed<AttemptResult>({
                statusCode: response.status,
                error: response.status >= 300 || response.status < 200 ? `HTTP ${response.status}` : null,
                excerpt: null
              })
            )
          )
        ),
        Effect.scoped,
        Effect.timeoutFail({
          duration: settings.timeout,
          onTimeout: () => `timed out after ${Duration.format(settings.timeout)}`
        }),
        Effect.catchAll((error) =>
          Effect.succeed<AttemptResult>({
            statusCode: null,
            error: typeof error === "string" ? error : describeTransportError(error),
            excerpt: null
          })
        )
      )
    }

    const record = (event: ClaimedEvent, startedAt: DateTime.Utc, result: AttemptResult) =>
      Effect.gen(function* () {
        const finishedAt = yield* DateTime.now
        const delivered = result.error === null
        const delay = retryDelay(event.attempts, settings.retryScale, yield* Random.next)
        const nextAt = DateTime.addDuration(finishedAt, delay)
        const giveUpAt = DateTime.addDuration(DateTime.unsafeFromDate(event.created_at), GIVE_UP_AFTER)
        const dead = !delivered && DateTime.greaterThan(nextAt, giveUpAt)
        yield* store.recordAttempt(
          {
            eventId: event.id,
            attempt: event.attempts,
            destination: event.destination,
            startedAt: DateTime.toDate(startedAt),
            finishedAt: DateTime.toDate(finishedAt),
            statusCode: result.statusCode,
            latencyMs: Math.max(0, DateTime.toEpochMillis(finishedAt) - DateTime.toEpochMillis(startedAt)),
            error: result.error,
            excerpt: result.excerpt
          },
          {
            status: delivered ? "delivered" : dead ? "dead" : "pending",
            nextAttemptAt: DateTime.toDate(nextAt),
            deliveredAt: delivered ? DateTime.toDate(finishedAt) : null,
            deadAt: dead ? DateTime.toDate(finishedAt) : null
          }
        )
        const annotations = { event_id: event.id, merchant_id: event.merchant_id, attempt: event.attempts }
        if (dead)
          yield* Effect.logWarning(`webhook dead after ${event.attempts} attempts: ${result.error}`).pipe(
            Effect.annotateLogs(annotations)
          )
        else if (!delivered)
          yield* Effect.logDebug(`webhook attempt failed: ${result.error}`).pipe(Effect.annotateLogs(annotations))
      })

    // forked while uninterruptible, so the hand-back below is in place before any interruption can land
    const deliver = (event: ClaimedEvent) =>
      Effect.interruptible(
        Effect.gen(function* () {
          const startedAt = yield* DateTime.now
          const result = yield* post(event)
          yield* record(event, startedAt, result)
        })
      ).pipe(
        // a graceful stop hands the attempt back at once; only a crash leaves it to its lease
        Effect.onInterrupt(() => store.handBack(event.id, event.attempts).pipe(Effect.ignore)),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : Effect.logWarning(
                "recording a webhook attempt failed; the lease will expire and it retries",
                Cause.pretty(cause)
              )
        ),
        Effect.ensuring(
          Effect.sync(() => {
            total -= 1
            const n = (inFlight.get(event.merchant_id) ?? 1) - 1
            if (n <= 0) inFlight.delete(event.merchant_id)
            else inFlight.set(event.merchant_id, n)
          })
        )
      )

    const tick = Effect.gen(function* () {
      for (;;) {
        const free = settings.concurrency - total
        if (free <= 0 || stopping) return
        const saturated = [...inFlight].filter(([, n]) => n >= settings.perMerchant).map(([m]) => m)
        // claiming and handing each claimed event to its fiber is one step: no claim is lost in between
        const claimed = yield* Effect.uninterruptible(
          Effect.tap(claim(free, saturated), (events) =>
            Effect.forEach(events, (event) => {
              total += 1
              inFlight.set(event.merchant_id, (inFlight.get(event.merchant_id) ?? 0) + 1)
              return Effect.forkScoped(deliver(event))
            })
          )
        )
        if (claimed.length === 0) return
      }
    }).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("claiming webhooks failed; retrying", Cause.pretty(cause)))
    )

    yield* Effect.forkScoped(Effect.repeat(tick, Schedule.spaced(settings.pollInterval)))
    // runs before the loop above is interrupted (finalizers run in reverse): no new claims while stopping
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopping = true
      })
    )
  })
).pipe(Layer.provide(WebhookStore.Default))

const describeTransportError = (error: unknown): string => {
  let current: unknown = error
  const parts: Array<string> = []
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    parts.push(current.message)
    current = "cause" in current ? current.cause : undefined
  }
  return parts.filter((p) => p !== "").join(": ") || "transport error"
}
