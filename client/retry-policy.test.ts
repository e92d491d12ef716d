import { HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Clock, type Duration, Effect, Fiber, TestClock } from "effect"
import { defaultRetryPolicy, IDEMPOTENCY_KEY_HEADER, type RetryPolicy, withRetries } from "./src/retry-policy.js"

interface Scripted {
  readonly status: number
  readonly headers?: Record<string, string>
}

/**
 * A service that answers each attempt from a script (the last answer again once it runs out), instantly, and
 * notes when each attempt was sent (test clock milliseconds after the first) and with which idempotency key.
 */
const scriptedService = (script: ReadonlyArray<Scripted>) => {
  const sent: Array<{ readonly at: number; readonly key: string | undefined }> = []
  let origin: number | undefined
  const client = HttpClient.make((request) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      origin ??= now
      sent.push({ at: now - origin, key: request.headers[IDEMPOTENCY_KEY_HEADER] })
      const answer = script[Math.min(sent.length, script.length) - 1] ?? { status: 500 }
      return HttpClientResponse.fromWeb(
        request,
        new Response(JSON.stringify({ error: `answer ${sent.length}` }), {
          status: answer.status,
          headers: { "content-type": "application/json", ...answer.headers }
        })
      )
    })
  )
  return { client, sent }
}

const createOrder = HttpClientRequest.post("http://facet.test/v1/orders").pipe(
  HttpClientRequest.setHeader(IDEMPOTENCY_KEY_HEADER, "INV-7")
)

/** Sends `request` through the retry policy, letting the test clock run `span` ahead; the final answer. */
const sendWith = (policy: Partial<RetryPolicy>, client: HttpClient.HttpClient, span: Duration.DurationInput) =>
  Effect.gen(function* () {
    const call = yield* Effect.fork(withRetries({ ...defaultRetryPolicy, ...policy })(client).execute(createOrder))
    yield* TestClock.adjust(span)
    return yield* Fiber.join(call)
  })

const limited: Scripted = { status: 429, headers: { "retry-after": "0.95" } }

describe("the retry policy near its deadline", () => {
  it.effect(
    "a 429 whose Retry-After leaves less than a second of a 1 s deadline is the answer: no attempt is cut short",
    () =>
      Effect.gen(function* () {
        const service = scriptedService([limited, { status: 201 }])
        const response = yield* sendWith({ deadline: "1 second" }, service.client, "5 seconds")
        // before: resent at 950 ms with 50 ms to answer; a slower service completed the write unheard
        expect(response.status).toBe(429)
        expect(service.sent).toEqual([{ at: 0, key: "INV-7" }])
      }),
    10_000
  )

  it.effect(
    "with a second left after the wait the write is sent again, with its key, and gets the answer",
    () =>
      Effect.gen(function* () {
        const service = scriptedService([limited, { status: 201 }])
        const response = yield* sendWith({ deadline: "1950 millis" }, service.client, "5 seconds")
        expect(response.status).toBe(201)
        expect(service.sent).toEqual([
          { at: 0, key: "INV-7" },
          { at: 950, key: "INV-7" }
        ])
      }),
    10_000
  )

  it.effect(
    "the least time left for a retry is at most the attempt timeout, and minAttemptTime moves it",
    () =>
      Effect.gen(function* () {
        // attempts of 300 ms at most: 950 + 300 fits in 1.5 s
        const short = scriptedService([limited, { status: 201 }])
        const retried = yield* sendWith(
          { deadline: "1500 millis", attemptTimeout: "300 millis" },
          short.client,
          "5 seconds"
        )
        expect(retried.status).toBe(201)
        expect(short.sent.map((s) => s.at)).toEqual([0, 950])
        // 3 s asked for, a 4.5 s deadline: a retry at 0.95 s (3.95 s ≤ 4.5 s), none at 1.9 s (4.9 s > 4.5 s)
        const strict = scriptedService([limited])
        const answer = yield* sendWith(
          { deadline: "4500 millis", minAttemptTime: "3 seconds" },
          strict.client,
          "10 seconds"
        )
        expect(answer.status).toBe(429)
        expect(strict.sent.map((s) => s.at)).toEqual([0, 950])
      }),
    10_000
  )
})
