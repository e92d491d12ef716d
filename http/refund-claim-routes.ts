import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option, Schedule, Schema } from "effect"
import { Refunds } from "../custody/refunds.js"
import { formFields, remoteAddress } from "./console/route-kit.js"
import { categorized } from "./error-statuses.js"
import { pageHeaders } from "./html.js"
import { withRedactedAccessLog } from "./redacted-access-log.js"
import { makeRateLimiter } from "./rate-limiter.js"
import type { ClaimRow } from "../src/stores/refund-store.js"
import {
  CLAIM_CSP,
  CLAIM_CSS,
  renderClaimNotFoundPage,
  renderClaimPage,
  renderClaimRetryPage,
  renderClaimStatusPage
} from "./refund-claim-page.js"

const SECURE = pageHeaders(CLAIM_CSP)
const TokenPath = Schema.Struct({ token: Schema.String })

/** The claim form's own limit per client address: 10 at once, then one every 10 s (the page itself has the API's). */
export const CLAIM_RATE = { perSecond: 0.1, burst: 10, namespace: "refund-claim" } as const

const page = (text: string, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(text, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: { ...SECURE, ...headers }
  })

/**
 * The public refund claim page (docs/guides/refunds.md), outside the `/v1` contract like the checkout: GET
 * shows the refund and its form (or where it stands once claimed), POST claims it for the address given and
 * answers 303 back to the page, or the page again with why not: 400 (an address that cannot take it), 403 (the
 * merchant's withdrawal policy), 404 (no such link), 409 (claimed already, cancelled, expired), 429 (too many
 * tries from one address), 503 (the chain cannot quote the fees now). The link's token is the credential.
 */
export const RefundClaimRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const refunds = yield* Refunds
    const limiter = makeRateLimiter(yield* SqlClient.SqlClient, CLAIM_RATE)
    yield* limiter.prune.pipe(Effect.ignore, Effect.repeat(Schedule.spaced(Duration.minutes(1))), Effect.forkScoped)

    const token = HttpRouter.schemaPathParams(TokenPath).pipe(
      Effect.map((p) => p.token),
      Effect.orDie
    )

    /** The page for a token as it stands, with a notice (and what was typed) when a claim was refused. */
    const show = (
      claimToken: string,
      status = 200,
      notice?: string | ((refund: ClaimRow) => string),
      address?: string
    ) =>
      refunds.claimView(claimToken).pipe(
        Effect.map(({ refund, fees }) => {
          const said = typeof notice === "function" ? notice(refund) : notice
          return page(
            refund.status === "PENDING_CLAIM" && !refund.link_expired
              ? renderClaimPage({ refund, fees, notice: said, address })
              : renderClaimStatusPage(refund, said),
            status
          )
        }),
        Effect.catchTag("RefundClaimNotFound", () => Effect.succeed(page(renderClaimNotFoundPage(), 404)))
      )

    // the token is the claim link's credential: never in the access log
    const logged = withRedactedAccessLog("/refund-claims/{token}")
    yield* router.get("/refund-claims/:token", logged(Effect.flatMap(token, (t) => show(t))))
    yield* router.post(
      "/refund-claims/:token",
      logged(
        Effect.gen(function* () {
          const claimToken = yield* token
          const request = yield* HttpServerRequest.HttpServerRequest
          const from = remoteAddress(request)
          const wait = yield* limiter.take(`addr:${from}`)
          if (Option.isSome(wait))
            return page(renderClaimRetryPage(`Too many tries from your address: try again in ${wait.value} s.`), 429, {
              "retry-after": String(wait.value)
            })
          const field = yield* formFields
          const address = field("address").trim()
          if (field("own_address") !== "yes")
            return yield* show(
              claimToken,
              400,
              "Confirm that the address is your own and needs no memo or tag: nothing was sent.",
              address
            )
          return yield* refunds
            .claim(claimToken, address, { address: from, userAgent: request.headers["user-agent"] ?? "" })
            .pipe(
              Effect.as(
                HttpServerResponse.empty({
                  status: 303,
                  headers: { location: request.url, "cache-control": "no-store" }
                })
              ),
              categorized,
              Effect.catchTags({
                BadRequest: (e) => show(claimToken, 400, `${e.error}. Nothing was sent: correct the address.`, address),
                Forbidden: (e) =>
                  show(
                    claimToken,
                    403,
                    `The merchant's payout rules do not allow this refund to be sent to this address now (${e.error}). Nothing was sent: ask the merchant.`,
                    address
                  ),
                NotFound: () => Effect.succeed(page(renderClaimNotFoundPage(), 404)),
                Conflict: () =>
                  show(claimToken, 409, (refund) =>
                    refund.status === "CLAIMED" || refund.status === "COMPLETED" || refund.status === "FAILED"
                      ? "This refund was already claimed with this link: nothing more was sent."
                      : "This refund link can no longer be used: nothing was sent."
                  ),
                ServiceUnavailable: (e) =>
                  Effect.succeed(
                    page(renderClaimRetryPage(`${e.error}. Nothing was sent: try again in a minute.`), 503)
                  )
              })
            )
        })
      )
    )
    yield* router.get(
      "/refund-claim-assets/claim.css",
      Effect.succeed(HttpServerResponse.text(CLAIM_CSS, { contentType: "text/css; charset=utf-8", headers: SECURE }))
    )
  })
)
