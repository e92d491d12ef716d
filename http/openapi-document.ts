import { OpenApi, OpenApiJsonSchema } from "@effect/platform"
import type { Schema } from "effect"
import { OrderWebhook, RefundWebhook, WalletDepositWebhook, WithdrawalWebhook } from "../src/domain/webhook-events.js"
import { FacetApi } from "./api.js"

const FRAMEWORK_SCHEMAS = ["HttpApiDecodeError", "Issue", "PropertyKey"]

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Drops references to the framework's own decode error: the error boundary answers every schema
 * failure as BadRequest `{error}`, so that is all the document may promise.
 */
const withoutFrameworkErrors = (node: unknown): unknown => {
  if (Array.isArray(node)) {
    return node
      .filter(
        (item) =>
          !(
            isRecord(item) &&
            typeof item.$ref === "string" &&
            FRAMEWORK_SCHEMAS.some((s) => item.$ref === `#/components/schemas/${s}`)
          )
      )
      .map(withoutFrameworkErrors)
  }
  if (!isRecord(node)) return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) out[key] = withoutFrameworkErrors(value)
  if (Array.isArray(out.anyOf) && out.anyOf.length === 1) {
    const [only] = out.anyOf
    delete out.anyOf
    return { ...out, ...(isRecord(only) ? only : {}) }
  }
  if (out.description === "The request did not match the expected schema") {
    out.description = "Invalid request: fix it before retrying"
  }
  return out
}

const WEBHOOK_HEADERS = [
  { name: "X-FACET-EVENT", description: "The transport event name" },
  {
    name: "X-FACET-IDEMPOTENCY-KEY",
    description: "Stable across retries: persist it and deduplicate before any balance change"
  },
  {
    name: "X-FACET-SIGNATURE",
    description: "Lowercase hex HMAC-SHA256 of the exact raw body, keyed with the webhook secret",
    schema: { type: "string", pattern: "^[a-f0-9]{64}$" }
  }
]

/** The webhooks the service sends (OpenAPI 3.1 `webhooks`), from the receiver's own body schemas. */
const webhooks = <A, I>(
  defs: Record<string, unknown>,
  entries: ReadonlyArray<readonly [string, string, Schema.Schema<A, I>]>
) =>
  Object.fromEntries(
    entries.map(([event, summary, body]) => [
      event,
      {
        post: {
          summary,
          parameters: WEBHOOK_HEADERS.map((h) => ({ in: "header", required: true, schema: { type: "string" }, ...h })),
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: OpenApiJsonSchema.makeWithDefs(body, { defs, defsPath: "#/components/schemas/" })
              }
            }
          },
          responses: {
            "200": { description: "Any 2xx accepts the delivery; anything else is retried with backoff for 24 h" }
          }
        }
      }
    ])
  )

/** The OpenAPI 3.1 document of the `/v1` API, generated from its `HttpApi` declaration. */
export const openApiDocument = (serverUrl: string): Record<string, unknown> => {
  const generated = withoutFrameworkErrors(OpenApi.fromApi(FacetApi, { additionalPropertiesStrategy: "allow" }))
  const document = isRecord(generated) ? generated : {}
  const components = isRecord(document.components) ? document.components : {}
  const schemas: Record<string, unknown> = isRecord(components.schemas) ? { ...components.schemas } : {}
  for (const name of FRAMEWORK_SCHEMAS) delete schemas[name]
  const hooks = {
    ...webhooks(schemas, [
      [
        "order.updated",
        "A checkout order's payment was detected, confirmed, reversed by a reorg or restored, or the order expired (body `event`)",
        OrderWebhook
      ]
    ]),
    ...webhooks(schemas, [
      ["wallet.deposit.confirmed", "A deposit to a long-term address is final", WalletDepositWebhook]
    ]),
    ...webhooks(schemas, [
      ["wallet.withdrawal.completed", "A withdrawal completed", WithdrawalWebhook],
      ["wallet.withdrawal.failed", "A withdrawal failed", WithdrawalWebhook]
    ]),
    ...webhooks(schemas, [
      [
        "refund.updated",
        "A refund reached a status (key refund.updated:{refund_id}:{STATUS}); never carries the claim link",
        RefundWebhook
      ]
    ])
  }
  return { ...document, components: { ...components, schemas }, webhooks: hooks, servers: [{ url: serverUrl }] }
}
