import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option, Schedule } from "effect"
import { AppConfig } from "../src/config.js"

export interface RateLimitSettings {
  readonly perSecond: number
  readonly burst: number
  /**
   * A limiter of its own rate beside the per-key one (the refund claim form's): its buckets are named
   * `ns:<namespace>:<key>` and pruned by it alone, the default limiter leaving every `ns:` bucket alone.
   */
  readonly namespace?: string
}

/**
 * A token bucket per API key (per client address for unauthenticated calls) in PostgreSQL, so the limit
 * holds across every process of the service: `burst` requests at once, refilled at `perSecond`. One upsert
 * per request, serialized per bucket by its row lock. If the database cannot answer, the request is let
 * through (it will meet the same database and get its 503 there).
 */
export const makeRateLimiter = (sql: SqlClient.SqlClient, settings: RateLimitSettings) => {
  const prefix = settings.namespace === undefined ? "" : `ns:${settings.namespace}:`
  /** Takes one token; when none is left, says how many whole seconds until one is. */
  const take = (key: string) =>
    sql<{ granted: boolean; tokens: number }>`
      INSERT INTO rate_limit_buckets AS b (bucket, tokens, granted, updated_at)
      VALUES (${prefix + key}, ${settings.burst - 1}, true, clock_timestamp())
      ON CONFLICT (bucket) DO UPDATE SET
        granted = least(${settings.burst}, b.tokens + extract(epoch FROM clock_timestamp() - b.updated_at) * ${settings.perSecond}) >= 1,
        tokens = least(${settings.burst}, b.tokens + extract(epoch FROM clock_timestamp() - b.updated_at) * ${settings.perSecond})
                 - CASE WHEN least(${settings.burst}, b.tokens + extract(epoch FROM clock_timestamp() - b.updated_at) * ${settings.perSecond}) >= 1 THEN 1 ELSE 0 END,
        updated_at = clock_timestamp()
      RETURNING granted, tokens`.pipe(
      Effect.map(
        ([row]): Option.Option<number> =>
          row === undefined || row.granted
            ? Option.none()
            : Option.some(Math.max(1, Math.ceil((1 - Number(row.tokens)) / settings.perSecond)))
      ),
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning(`rate limit not checked (database): ${error.message}`), Option.none())
      )
    )

  /** Buckets idle long enough to be full again are dropped (they would be recreated full): this limiter's own. */
  const prune = sql`DELETE FROM rate_limit_buckets WHERE updated_at < clock_timestamp() - ${`${Math.ceil(settings.burst / settings.perSecond) + 1} seconds`}::interval
    AND ${prefix === "" ? sql`bucket NOT LIKE 'ns:%'` : sql`bucket LIKE ${`${prefix}%`}`}`

  return { take, prune } as const
}

export class RateLimiter extends Effect.Service<RateLimiter>()("facet/RateLimiter", {
  scoped: Effect.gen(function* () {
    const { rateLimit, paymentLinkVisitsPerMinute, paymentLinkVisitsPerClientPerMinute } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const limiter = makeRateLimiter(sql, rateLimit)
    // a payment link's page: its own bucket per link, `ns:link:{id}`, shared by all its visitors
    const links = makeRateLimiter(sql, {
      perSecond: paymentLinkVisitsPerMinute / 60,
      burst: paymentLinkVisitsPerMinute,
      namespace: "link"
    })
    // and one per client address on each link, `ns:link-client:{id}|{address}`, taken first: one address
    // alone cannot empty the link's bucket and leave every other customer a 429
    const linkClients = makeRateLimiter(sql, {
      perSecond: paymentLinkVisitsPerClientPerMinute / 60,
      burst: paymentLinkVisitsPerClientPerMinute,
      namespace: "link-client"
    })
    // each limiter drops only its own idle buckets, once they would be full again
    yield* Effect.all([limiter.prune, links.prune, linkClients.prune], { discard: true }).pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced(Duration.minutes(1))),
      Effect.forkScoped
    )
    return {
      take: limiter.take,
      /**
       * One submission of a payment link's form from a client address; when none is left (the address's
       * share of the link, then the link's), the seconds to wait. A refused address takes nothing from the link.
       */
      takeLinkVisit: (linkId: string, client: string) =>
        Effect.flatMap(linkClients.take(`${linkId}|${client}`), (wait) =>
          Option.isSome(wait) ? Effect.succeed(wait) : links.take(linkId)
        )
    } as const
  })
}) {}
