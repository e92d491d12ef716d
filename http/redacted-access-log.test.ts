import { HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Logger } from "effect"
import { withRedactedAccessLog } from "./redacted-access-log.js"

/** Every log line the server's access logger and the handler write, with their annotations, as text. */
const loggedWhile = (
  url: string,
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const capture = Logger.make(({ message, annotations }) => {
      lines.push(`${String(message)} ${JSON.stringify([...HashMap.toEntries(annotations)])}`)
    })
    yield* HttpMiddleware.logger(handler).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(new Request(url))),
      Effect.provide(Logger.replace(Logger.defaultLogger, capture))
    )
    return lines
  })

describe("the access log of a route whose URL carries a credential", () => {
  it.effect("writes the route's shape in place of the URL: the claim token never reaches the log", () =>
    Effect.gen(function* () {
      const secret = "frc_Zq3secretTokenThatClaimsMoney0123456789abcd"
      const plain = yield* loggedWhile(
        `http://facet.test/refund-claims/${secret}`,
        Effect.succeed(HttpServerResponse.empty())
      )
      // what the server's logger alone does: the URL as it came (why the claim routes switch it off)
      expect(plain.join("\n")).toContain(secret)
      const redacted = yield* loggedWhile(
        `http://facet.test/refund-claims/${secret}`,
        withRedactedAccessLog("/refund-claims/{token}")(Effect.succeed(HttpServerResponse.empty({ status: 303 })))
      )
      expect(redacted.join("\n")).not.toContain(secret)
      expect(redacted).toHaveLength(1)
      expect(redacted[0]).toContain("/refund-claims/{token}")
      expect(redacted[0]).toContain("303")
    })
  )
})
