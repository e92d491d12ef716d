import { HttpMiddleware, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

/**
 * The access-log line of a route whose URL carries a credential (a refund's claim link, the console's
 * one-time setup token): the server's logger would write the URL as it came, so it is switched off for the
 * request and this line says the same with `shown` in place of the URL. Whoever reads the logs must not be
 * able to claim a refund or bind a console.
 */
export const withRedactedAccessLog =
  (shown: string) =>
  <E, R>(
    handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      HttpMiddleware.withLoggerDisabled(
        handler.pipe(
          Effect.tap((response) =>
            Effect.annotateLogs(Effect.log("Sent HTTP Response"), {
              "http.method": request.method,
              "http.url": shown,
              "http.status": response.status
            })
          ),
          Effect.tapErrorCause((cause) =>
            Effect.annotateLogs(Effect.logWarning("HTTP request failed", cause), {
              "http.method": request.method,
              "http.url": shown
            })
          )
        )
      )
    )
