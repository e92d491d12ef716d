import type { ReadResourceResult, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js"
import type { HttpClient } from "@effect/platform"
import { Effect, Either, Option, Schema } from "effect"
import { type ApiTarget, callApi } from "./mcp-api-client.js"
import { type ApiAnswer, parseJson } from "./mcp-tools.js"

/**
 * The MCP resources: what an agent reads rather than does, each one (or a few) GETs of the API with the
 * caller's key: the contract's version, `/llms.txt`, the OpenAPI document, the asset policy table, the
 * merchant's open orders, and one order by id.
 */

/** A resource read the API refused (its status and message), or an unknown URI. */
export class ResourceRefused extends Schema.TaggedError<ResourceRefused>()("ResourceRefused", {
  uri: Schema.String,
  status: Schema.Number,
  error: Schema.String
}) {}

export const CONTRACT_VERSION_URI = "facet://contract/version"
export const LLMS_TXT_URI = "facet://llms.txt"
export const OPENAPI_URI = "facet://openapi.json"
export const ASSET_POLICIES_URI = "facet://asset-policies"
export const OPEN_ORDERS_URI = "facet://orders/open"
const ORDER_PREFIX = "facet://orders/"

/** Order statuses that are not final: waiting for a payment, or a payment seen and not yet final. */
export const OPEN_STATUSES = ["CONFIRMING", "PENDING"] as const
/** Pages of 100 read per status: at most 500 open orders of each. */
export const OPEN_ORDER_PAGES = 5
const PAGE_SIZE = 100

export const RESOURCES: ReadonlyArray<Resource> = [
  {
    uri: CONTRACT_VERSION_URI,
    name: "contract-version",
    title: "API contract version",
    description:
      "The /v1 contract's current version and its latest change-log entry (GET /v1/api-changelog); no key needed",
    mimeType: "application/json"
  },
  {
    uri: LLMS_TXT_URI,
    name: "llms.txt",
    title: "Guidance for AI agents",
    description: "What the service is, how to onboard, the safety rules (GET /llms.txt); no key needed",
    mimeType: "text/plain"
  },
  {
    uri: OPENAPI_URI,
    name: "openapi",
    title: "OpenAPI document",
    description: "The whole /v1 contract as OpenAPI 3.1 (GET /v1/openapi.json); no key needed",
    mimeType: "application/json"
  },
  {
    uri: ASSET_POLICIES_URI,
    name: "asset-policies",
    title: "Asset policies",
    description:
      "The platform's assets with this merchant's enrollment: which can be ordered in, deposited, withdrawn (GET /v1/wallet-asset-policies)",
    mimeType: "application/json"
  },
  {
    uri: OPEN_ORDERS_URI,
    name: "open-orders",
    title: "Open orders",
    description: `This merchant's orders not in a final state: CONFIRMING (a payment seen, not yet final) then PENDING (waiting for payment), newest first in each, at most ${OPEN_ORDER_PAGES * PAGE_SIZE} of each (GET /v1/orders?status=…)`,
    mimeType: "application/json"
  }
]

export const RESOURCE_TEMPLATES: ReadonlyArray<ResourceTemplate> = [
  {
    uriTemplate: `${ORDER_PREFIX}{order_id}`,
    name: "order",
    title: "One order",
    description: "One of this merchant's orders by its order_id, as it stands now (GET /v1/orders/{order_id})",
    mimeType: "application/json"
  }
]

const refused = (uri: string, answer: ApiAnswer) => {
  const error = Option.getOrElse(
    Option.flatMap(parseJson(answer.text), (body) =>
      typeof body === "object" && body !== null && "error" in body && typeof body.error === "string"
        ? Option.some(body.error)
        : Option.none()
    ),
    () => answer.text.slice(0, 2000)
  )
  return new ResourceRefused({ uri, status: answer.status, error })
}

/** One GET; its body when 2xx, the API's refusal otherwise. */
const get = (target: ApiTarget, uri: string, url: string) =>
  callApi(target, { method: "GET", url, headers: {}, body: Option.none(), generatedKey: Option.none() }).pipe(
    Effect.catchTag("ApiUnreachable", (e) =>
      Effect.fail(
        new ResourceRefused({ uri, status: 503, error: `could not reach the Facet API at ${e.url}: ${e.reason}` })
      )
    ),
    Effect.flatMap((answer) =>
      answer.status >= 200 && answer.status < 300 ? Effect.succeed(answer.text) : Effect.fail(refused(uri, answer))
    )
  )

const json = (uri: string, value: unknown): ReadResourceResult => ({
  contents: [{ uri, mimeType: "application/json", text: typeof value === "string" ? value : JSON.stringify(value) }]
})

const Changelog = Schema.parseJson(
  Schema.Struct({ api: Schema.String, current_version: Schema.String, entries: Schema.Array(Schema.Unknown) })
)
const OrderPage = Schema.parseJson(Schema.Struct({ total: Schema.Number, items: Schema.Array(Schema.Unknown) }))

const decoded = <A, I>(uri: string, schema: Schema.Schema<A, I>, text: string) =>
  Schema.decodeUnknown(schema)(text).pipe(
    Effect.mapError(
      () => new ResourceRefused({ uri, status: 502, error: "the API's answer was not what its contract says" })
    )
  )

/** One status's open orders, page after page up to the bound; its total as the API counts it. */
const openOfStatus = (target: ApiTarget, status: string) =>
  Effect.gen(function* () {
    const orders: Array<unknown> = []
    let total = 0
    for (let page = 1; page <= OPEN_ORDER_PAGES; page++) {
      const text = yield* get(target, OPEN_ORDERS_URI, `/v1/orders?status=${status}&size=${PAGE_SIZE}&page=${page}`)
      const list = yield* decoded(OPEN_ORDERS_URI, OrderPage, text)
      total = list.total
      orders.push(...list.items)
      if (list.items.length < PAGE_SIZE || page * PAGE_SIZE >= list.total) break
    }
    return { status, total, orders }
  })

/** A resource's contents, read from the API with the caller's key. */
export const readResource = (
  target: ApiTarget,
  uri: string
): Effect.Effect<ReadResourceResult, ResourceRefused, HttpClient.HttpClient> => {
  switch (uri) {
    case CONTRACT_VERSION_URI:
      return Effect.gen(function* () {
        const changelog = yield* decoded(uri, Changelog, yield* get(target, uri, "/v1/api-changelog"))
        return json(uri, {
          api: changelog.api,
          current_version: changelog.current_version,
          latest: changelog.entries[0] ?? null
        })
      })
    case LLMS_TXT_URI:
      return Effect.map(get(target, uri, "/llms.txt"), (text) => ({
        contents: [{ uri, mimeType: "text/plain", text }]
      }))
    case OPENAPI_URI:
      return Effect.map(get(target, uri, "/v1/openapi.json"), (text) => json(uri, text))
    case ASSET_POLICIES_URI:
      return Effect.map(get(target, uri, "/v1/wallet-asset-policies"), (text) => json(uri, text))
    case OPEN_ORDERS_URI:
      return Effect.gen(function* () {
        const lists = yield* Effect.forEach(OPEN_STATUSES, (status) => openOfStatus(target, status))
        const orders = lists.flatMap((l) => l.orders)
        const total = lists.reduce((sum, l) => sum + l.total, 0)
        return json(uri, {
          statuses: OPEN_STATUSES,
          totals: Object.fromEntries(lists.map((l) => [l.status, l.total])),
          truncated: orders.length < total,
          orders
        })
      })
  }
  const orderId = uri.startsWith(ORDER_PREFIX)
    ? Either.getOrElse(
        Either.try(() => decodeURIComponent(uri.slice(ORDER_PREFIX.length))),
        () => ""
      )
    : ""
  if (orderId === "" || orderId.includes("/"))
    return Effect.fail(new ResourceRefused({ uri, status: 404, error: `no such resource: ${uri}` }))
  return Effect.map(get(target, uri, `/v1/orders/${encodeURIComponent(orderId)}`), (text) => json(uri, text))
}
