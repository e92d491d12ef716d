import { HttpApi } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Either, Option, Redacted } from "effect"
import * as http from "node:http"
import { ApiKeys } from "../../src/merchants/api-keys.js"
import { TestAppLive, TestClient } from "../../test/http-harness.js"
import { asRecord } from "../../test/json.js"
import { type McpOutcome, mcpCall, mcpOutcomeOf, mcpOverHttp, mcpOverStdio, mcpRead } from "../../test/mcp-client.js"
import { FacetApi } from "../api.js"
import { openApiDocument } from "../openapi-document.js"
import { AGENT_NEVER_APPROVES } from "./agent-annotations.js"
import { rateLimitAddress } from "./mcp-caller.js"
import { callTool } from "./mcp-server.js"
import { CATALOGUE_PROBLEMS, EXCLUDED, HTTP_META, TOOLS, listedTool, toolNamed, toolRequest } from "./mcp-tools.js"
import {
  ASSET_POLICIES_URI,
  CONTRACT_VERSION_URI,
  LLMS_TXT_URI,
  OPENAPI_URI,
  OPEN_ORDERS_URI,
  RESOURCES
} from "./mcp-resources.js"

const TEST_ACTOR = { kind: "operator", name: "test" } as const
const TRON_ADDRESS = "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"

/** The names the docs and the agent test are written against. */
const PINNED_NAMES = [
  "orders_create",
  "orders_get",
  "orders_list",
  "onboarding_merchant_apply",
  "onboarding_onboarding_status",
  "wallet_assets_policies",
  "wallet_assets_enroll",
  "wallet_assets_portfolio",
  "wallet_assets_sweep",
  "withdrawals_quote",
  "withdrawals_create",
  "withdrawals_get",
  "withdrawal_batches_create",
  "refunds_create",
  "payment_links_create",
  "deposit_addresses_create",
  "transactions_search"
]

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const recordsOf = (value: unknown): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(value) ? value.filter(isRecord) : []

const APPLICATION = {
  project_name: "Agent Shop",
  business_type: "shop",
  use_case: "payments",
  agree_terms: true,
  contact_email: "agent@shop.example",
  webhook_url: "https://shop.example/hooks"
}

/** What a tool call must come to: a 2xx ("ok") or one of these error statuses. */
type Expected = ReadonlyArray<"ok" | number>

const expectOutcome = (name: string, outcome: McpOutcome, expected: Expected) => {
  const status = outcome.isError ? outcome.structured.status : "ok"
  expect(expected, `${name}: ${outcome.text.slice(0, 300)}`).toContain(status)
  if (outcome.isError) {
    expect(typeof outcome.structured.error, name).toBe("string")
    expect(JSON.parse(outcome.text), name).toEqual(outcome.structured)
  } else if (outcome.text.startsWith("{")) {
    expect(JSON.parse(outcome.text), name).toEqual(outcome.structured)
  }
}

/** POST /mcp from another loopback address (127.0.0.2), with a raw JSON-RPC request. */
const postFrom127002 = (url: string, message: unknown) =>
  Effect.async<{ readonly status: number; readonly body: string }>((resume) => {
    const target = new URL(`${url}/mcp`)
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        localAddress: "127.0.0.2",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }
      },
      (response) => {
        let body = ""
        response.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
        response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, body })))
      }
    )
    request.on("error", (error) => resume(Effect.die(error)))
    request.end(JSON.stringify(message))
  })

describe("the MCP tool catalogue", () => {
  const document = openApiDocument("http://facet.test")
  const paths = isRecord(document.paths) ? document.paths : {}
  const operations = Object.entries(paths).flatMap(([path, item]) =>
    Object.entries(isRecord(item) ? item : {}).flatMap(([method, op]) =>
      isRecord(op) ? [{ key: `${method.toUpperCase()} ${path}`, path, op }] : []
    )
  )
  const listed = TOOLS.map(listedTool)
  const httpOf = (tool: (typeof listed)[number]) => {
    const meta = asRecord(asRecord(tool._meta)[HTTP_META])
    return `${String(meta.method)} ${String(meta.path)}`
  }
  const excludedOperation = (operationId: unknown) => {
    const [group, endpoint] = String(operationId).split(".")
    return EXCLUDED.some((e) => e.group === group && (e.endpoint === undefined || e.endpoint === endpoint))
  }

  it("every OpenAPI operation has a tool or an exclusion with its reason", () => {
    const tools = new Set(listed.map(httpOf))
    const withoutTool = operations.filter((o) => !tools.has(o.key) && !excludedOperation(o.op.operationId))
    expect(withoutTool.map((o) => `${o.key} (${String(o.op.operationId)})`)).toEqual([])
    expect(CATALOGUE_PROBLEMS).toEqual([])
    // no stale exclusion: each names a group, or an endpoint, that the API declares
    const declared: Array<readonly [string, string]> = []
    HttpApi.reflect(FacetApi, {
      onGroup: () => undefined,
      onEndpoint: ({ group, endpoint }) => declared.push([group.identifier, endpoint.name])
    })
    for (const e of EXCLUDED) {
      expect(e.reason.length).toBeGreaterThan(20)
      expect(
        declared.some(([group, endpoint]) => group === e.group && (e.endpoint ?? endpoint) === endpoint),
        `${e.group}.${e.endpoint ?? "*"} is declared`
      ).toBe(true)
    }
  })

  it("every tool is an OpenAPI operation, with its parameters, body and idempotency header as its inputs", () => {
    const byKey = new Map(operations.map((o) => [o.key, o.op]))
    for (const tool of listed) {
      const op = byKey.get(httpOf(tool))
      expect(op, `${tool.name} is ${httpOf(tool)}, not an OpenAPI operation`).toBeDefined()
      const parameters = recordsOf(op?.parameters)
      const expected = [
        ...parameters.filter((p) => p.in === "path" || p.in === "query").map((p) => String(p.name)),
        ...(op?.requestBody === undefined ? [] : ["body"]),
        ...(parameters.some((p) => p.in === "header" && p.name === "x-service-idempotency-key")
          ? ["idempotency_key"]
          : [])
      ]
      expect(Object.keys(tool.inputSchema.properties ?? {}).sort(), tool.name).toEqual(expected.sort())
      // money out: the caller's own idempotency key is required (a key the server made could be lost with the answer)
      const moneyOut = tool.annotations?.destructiveHint === true && expected.includes("idempotency_key")
      const required = [
        ...parameters.filter((p) => (p.in === "path" || p.in === "query") && p.required === true).map((p) => p.name),
        ...(op?.requestBody === undefined ? [] : ["body"]),
        ...(moneyOut ? ["idempotency_key"] : [])
      ]
      expect([...(tool.inputSchema.required ?? [])].sort(), tool.name).toEqual(required.map(String).sort())
      expect(tool.description ?? "", tool.name).toContain(String(op?.summary))
    }
  })

  it("names as the docs give them; self-contained schemas; money out says an agent never approves", () => {
    const names = listed.map((t) => t.name)
    expect(new Set(names).size).toBe(names.length)
    expect(PINNED_NAMES.filter((n) => !names.includes(n))).toEqual([])
    for (const tool of listed) {
      // every $ref resolves inside the tool's own schema
      const defs = asRecord(tool.inputSchema.$defs ?? {})
      const refs = [...JSON.stringify(tool.inputSchema).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] ?? "")
      for (const ref of refs) expect(defs[ref.replace("#/$defs/", "")], `${tool.name}: ${ref}`).toBeDefined()
      expect(JSON.stringify(tool.inputSchema)).not.toContain('"$id"')
      const get = httpOf(tool).startsWith("GET ")
      if (get) expect(tool.annotations?.readOnlyHint, tool.name).toBe(true)
    }
    for (const name of ["withdrawals_create", "withdrawal_batches_create", "refunds_create"]) {
      const tool = listed.find((t) => t.name === name)
      expect(tool?.description).toContain(AGENT_NEVER_APPROVES)
      expect(tool?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true })
    }
    expect(listed.find((t) => t.name === "withdrawals_quote")?.annotations?.readOnlyHint).toBe(true)
    // the quote's optional destination and what its figures are reach agents as the API declares them
    const quote = listed.find((t) => t.name === "withdrawals_quote")
    expect(JSON.stringify(quote?.inputSchema)).toContain('"to_address"')
    expect(quote?.description).toContain("upper bound")
    expect(listed.find((t) => t.name === "wallet_assets_sweep")?.description).toContain("network gas is spent")
  })

  it("arguments are checked for their shape before any request", () => {
    const refund = Option.getOrThrow(toolNamed("refunds_create"))
    expect(toolRequest(refund, { body: {}, idempotency_key: "k-1" })).toEqual(
      Either.left("missing required argument(s) order_id for refunds_create: it takes: order_id, body, idempotency_key")
    )
    // money out takes no key of the server's making
    expect(toolRequest(refund, { order_id: "o", body: {} })).toEqual(
      Either.left(
        "missing required argument(s) idempotency_key for refunds_create: it takes: order_id, body, idempotency_key"
      )
    )
    expect(Either.isLeft(toolRequest(refund, { order_id: "o", body: {}, amount: "1", idempotency_key: "k" }))).toBe(
      true
    )
    expect(Either.isLeft(toolRequest(refund, { order_id: "", body: {}, idempotency_key: "k" }))).toBe(true)
    // "." and ".." would resolve into another endpoint's path; a key that is no header value never makes a request
    for (const dots of [".", ".."])
      expect(toolRequest(refund, { order_id: dots, body: {}, idempotency_key: "k" })).toEqual(
        Either.left(`order_id cannot be "${dots}" (a path parameter of refunds_create)`)
      )
    for (const key of ["a\r\nX-Evil: 1", "a€", "", "k".repeat(129)])
      expect(toolRequest(refund, { order_id: "o", body: {}, idempotency_key: key })).toEqual(
        Either.left("idempotency_key must be 1 to 128 visible ASCII characters without whitespace")
      )
    const made = Either.getOrThrow(
      toolRequest(refund, { order_id: "ord 1/2", body: { amount: "1" }, idempotency_key: "k-0" })
    )
    expect(made.url).toBe("/v1/orders/ord%201%2F2/refunds")
    const given = Either.getOrThrow(toolRequest(refund, { order_id: "o", body: {}, idempotency_key: "k-1" }))
    expect(given.headers["x-service-idempotency-key"]).toBe("k-1")
    expect(Option.isNone(given.generatedKey)).toBe(true)
    // an order is not money out: without a key the server makes one per call
    const order = Option.getOrThrow(toolNamed("orders_create"))
    const generated = Either.getOrThrow(toolRequest(order, { body: { amount: "1" } }))
    expect(generated.headers["x-service-idempotency-key"]).toMatch(/^mcp-[0-9a-f-]{36}$/)
    const list = Option.getOrThrow(toolNamed("orders_list"))
    expect(Either.getOrThrow(toolRequest(list, { page: 2, status: "PENDING" })).url).toBe(
      "/v1/orders?page=2&status=PENDING"
    )
    expect(Either.getOrThrow(toolRequest(list, undefined)).url).toBe("/v1/orders")
  })
})

describe("a tool call the API does not answer", () => {
  it.effect(
    "is a 503 tool error that gives the idempotency key to retry with",
    () =>
      Effect.gen(function* () {
        const target = { baseUrl: "http://127.0.0.1:1", apiKey: Option.none(), headers: {} }
        const create = mcpOutcomeOf(yield* callTool(target, "orders_create", { body: { amount: "1" } }))
        expect(create).toMatchObject({ isError: true, structured: { status: 503 } })
        expect(create.structured.idempotency_key).toMatch(/^mcp-/)
        expect(String(create.structured.error)).toContain("retry with this idempotency_key")
        const list = mcpOutcomeOf(yield* callTool(target, "orders_list", {}))
        expect(list.structured.idempotency_key).toBeUndefined()
        expect(yield* Effect.flip(callTool(target, "orders_delete", {}))).toMatchObject({ code: -32602 })
      }).pipe(Effect.provide(NodeHttpClient.layer)),
    20_000
  )
})

describe("the rate limit of /mcp's own calls", () => {
  it("counts them against the forwarded caller only from loopback with this process's secret", () => {
    const loopback = { secret: Redacted.make("s3cret") }
    const forwarded = { "x-facet-mcp-loopback": "s3cret", "x-facet-mcp-client": "203.0.113.9" }
    expect(rateLimitAddress(loopback, forwarded, Option.some("127.0.0.1"))).toBe("203.0.113.9")
    expect(rateLimitAddress(loopback, forwarded, Option.some("198.51.100.1"))).toBe("198.51.100.1")
    expect(
      rateLimitAddress(loopback, { ...forwarded, "x-facet-mcp-loopback": "guess!" }, Option.some("127.0.0.1"))
    ).toBe("127.0.0.1")
  })
})

describe("the MCP server", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.scoped(
      "over streamable HTTP: lists the catalogue; every tool called once gives the API's answer; the key's scopes and the API's 400s apply",
      () =>
        Effect.gen(function* () {
          const api = yield* TestClient
          const anonymous = yield* mcpOverHttp(api.url)
          const { tools } = yield* Effect.promise(() => anonymous.listTools())
          expect(JSON.parse(JSON.stringify(tools))).toEqual(JSON.parse(JSON.stringify(TOOLS.map(listedTool))))

          // without a key: the public tool works, the others are the API's 401
          const applied = yield* mcpCall(anonymous, "onboarding_merchant_apply", { body: APPLICATION })
          expectOutcome("onboarding_merchant_apply", applied, ["ok"])
          const env = asRecord(applied.structured.env)
          const apiKey = String(env.FACET_API_KEY)
          const merchantId = String(env.FACET_MERCHANT_ID)
          const unauthenticated = yield* mcpCall(anonymous, "orders_list")
          expect(unauthenticated.structured).toEqual({
            status: 401,
            error: "merchant authentication is required: send the X-API-Key header"
          })

          const agent = yield* mcpOverHttp(api.url, { "x-api-key": apiKey })
          const called = new Set(["onboarding_merchant_apply"])
          const run = (name: string, args: Record<string, unknown>, expected: Expected) =>
            Effect.gen(function* () {
              const outcome = yield* mcpCall(agent, name, args)
              expectOutcome(name, outcome, expected)
              called.add(name)
              return outcome.structured
            })
          const order = yield* run(
            "orders_create",
            { body: { amount: "5", currency: "USDT", chain: "TRC20" }, idempotency_key: "order-1" },
            ["ok"]
          )
          const orderId = String(order.order_id)
          // the same idempotency key: the same order; none given: a new one each call
          const again = yield* mcpCall(agent, "orders_create", {
            body: { amount: "5", currency: "USDT", chain: "TRC20" },
            idempotency_key: "order-1"
          })
          expect(again.structured.order_id).toBe(orderId)
          const deposit = yield* run(
            "deposit_addresses_create",
            { body: { external_user_id: "u-1", chain: "TRC20", currency: "USDT" } },
            ["ok"]
          )
          const link = yield* run(
            "payment_links_create",
            { body: { product_name: "Mug", amount: "5", currency: "USDT" } },
            ["ok"]
          )
          const linkId = String(link.payment_link_id)
          const withdrawal = { chain: "TRC20", currency: "USDT", amount: "1", to_address: TRON_ADDRESS }
          const rows: ReadonlyArray<readonly [string, Record<string, unknown>, Expected]> = [
            ["onboarding_onboarding_status", { merchant_id: merchantId }, ["ok"]],
            ["wallet_assets_policies", {}, ["ok"]],
            ["wallet_assets_enroll", { body: { chain: "TRC20", currency: "USDT" } }, ["ok"]],
            ["wallet_assets_portfolio", {}, ["ok"]],
            ["wallet_assets_asset", { asset_key: "TRC20-USDT" }, ["ok"]],
            ["wallet_assets_sweep", { asset_key: "TRC20-USDT", body: { from_wallet_id: "wal_none" } }, [400, 404]],
            ["wallet_assets_sweep_status", { asset_key: "TRC20-USDT", operation_id: "op_none" }, [404]],
            ["orders_list", { status: "PENDING", size: 10 }, ["ok"]],
            ["orders_get", { order_id: orderId }, ["ok"]],
            ["deposit_addresses_list", {}, ["ok"]],
            [
              "deposit_addresses_batch",
              { body: { external_user_ids: ["u-2"], chain: "TRC20", currency: "USDT" } },
              ["ok"]
            ],
            ["deposit_addresses_transactions", { deposit_address_id: String(deposit.id) }, ["ok"]],
            ["transactions_search", { limit: "5" }, ["ok"]],
            // no chain is running here: the network fee cannot be quoted (503), and there is no balance (400)
            ["withdrawals_quote", { body: { chain: "TRC20", currency: "USDT", amount: "1" } }, ["ok", 503]],
            ["withdrawals_list", {}, ["ok"]],
            ["withdrawals_create", { body: withdrawal, idempotency_key: "w-1" }, [400, 503]],
            ["withdrawals_get", { withdrawal_id: "wdr_none" }, [404]],
            ["withdrawals_addresses", {}, ["ok"]],
            [
              "withdrawal_batches_create",
              { body: { items: [{ ...withdrawal, out_withdrawal_no: "b-1" }] }, idempotency_key: "b-1" },
              [400, 503]
            ],
            ["withdrawal_batches_list", {}, ["ok"]],
            ["withdrawal_batches_get", { batch_id: "wbt_none" }, [404]],
            ["withdrawal_batches_items", { batch_id: "wbt_none" }, [404]],
            ["refunds_create", { order_id: orderId, body: { amount: "1" }, idempotency_key: "r-1" }, [400]],
            ["refunds_list_for_order", { order_id: orderId }, ["ok"]],
            ["refunds_list", {}, ["ok"]],
            ["refunds_get", { refund_id: "rfd_none" }, [404]],
            ["refunds_cancel", { refund_id: "rfd_none" }, [404]],
            ["refunds_claim_link", { refund_id: "rfd_none" }, [404]],
            ["payment_links_list", {}, ["ok"]],
            ["payment_links_get", { payment_link_id: linkId }, ["ok"]],
            ["payment_links_orders", { payment_link_id: linkId }, ["ok"]],
            ["payment_links_deactivate", { payment_link_id: linkId }, ["ok"]]
          ]
          for (const [name, args, expected] of rows) yield* run(name, args, expected)
          expect(TOOLS.map((t) => t.name).filter((n) => !called.has(n))).toEqual([])

          // a bad input: the API's 400 and its very message
          const bad = { amount: "a lot", currency: "USDT", chain: "TRC20" }
          const refused = yield* mcpCall(agent, "orders_create", { body: bad })
          const direct = yield* api.request("POST", "/v1/orders", { apiKey, json: bad })
          expect(direct.status).toBe(400)
          expect(refused.isError).toBe(true)
          expect(refused.structured).toEqual({ status: 400, ...asRecord(direct.body) })
          // arguments of the wrong shape never reach the API
          const unknown = yield* mcpCall(agent, "orders_get", { order_id: orderId, expand: "all" })
          expect(unknown).toMatchObject({ isError: true, structured: { error: expect.stringContaining("expand") } })
          expect(unknown.structured.status).toBeUndefined()
          const missing = yield* mcpCall(agent, "orders_get", {})
          expect(missing.structured.error).toContain("missing required argument(s) order_id")

          // a key without the wallet scope cannot sweep: the API's 403 and message
          const keys = yield* ApiKeys
          const narrow = Redacted.value(
            (yield* keys.issue(merchantId, ["read", "deposits"], "no wallet", TEST_ACTOR)).key
          )
          const limited = yield* mcpOverHttp(api.url, { authorization: `Bearer ${narrow}` })
          const sweep = yield* mcpCall(limited, "wallet_assets_sweep", {
            asset_key: "TRC20-USDT",
            body: { from_wallet_id: "wal_none" }
          })
          const sweepDirect = yield* api.request("POST", "/v1/wallet-assets/TRC20-USDT/sweep", {
            apiKey: narrow,
            json: { from_wallet_id: "wal_none" }
          })
          expect(sweepDirect.status).toBe(403)
          expect(sweep).toMatchObject({ isError: true, structured: { status: 403, ...asRecord(sweepDirect.body) } })
          expect(String(sweep.structured.error)).toContain("wallet scope")
          // the same key (as a bearer token) reads what any key of the merchant reads
          expectOutcome("orders_get (bearer)", yield* mcpCall(limited, "orders_get", { order_id: orderId }), ["ok"])

          // resources: each read, with the key where one is needed
          const { resources } = yield* Effect.promise(() => agent.listResources())
          expect(resources.map((r) => r.uri)).toEqual(RESOURCES.map((r) => r.uri))
          const { resourceTemplates } = yield* Effect.promise(() => agent.listResourceTemplates())
          expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["facet://orders/{order_id}"])
          const version = yield* mcpRead(anonymous, CONTRACT_VERSION_URI)
          const changelog = asRecord((yield* api.request("GET", "/v1/api-changelog")).body)
          expect(JSON.parse(version.text)).toEqual({
            api: changelog.api,
            current_version: changelog.current_version,
            latest: recordsOf(changelog.entries)[0]
          })
          const llms = yield* mcpRead(anonymous, LLMS_TXT_URI)
          expect(llms).toEqual({ mimeType: "text/plain", text: (yield* api.request("GET", "/llms.txt")).text })
          const openapi = yield* mcpRead(anonymous, OPENAPI_URI)
          expect(asRecord(JSON.parse(openapi.text)).openapi).toBe("3.1.0")
          const policies = yield* mcpRead(agent, ASSET_POLICIES_URI)
          expect(JSON.parse(policies.text)).toEqual(
            (yield* api.request("GET", "/v1/wallet-asset-policies", { apiKey })).body
          )
          const open = asRecord(JSON.parse((yield* mcpRead(agent, OPEN_ORDERS_URI)).text))
          expect(open).toMatchObject({ statuses: ["CONFIRMING", "PENDING"], truncated: false })
          expect(recordsOf(open.orders).map((o) => o.order_id)).toContain(orderId)
          const one = yield* mcpRead(agent, `facet://orders/${orderId}`)
          expect(asRecord(JSON.parse(one.text)).order_id).toBe(orderId)
          // refusals are MCP errors with the API's status and message
          const noKey = yield* Effect.flip(mcpRead(anonymous, ASSET_POLICIES_URI))
          expect(noKey.data).toMatchObject({
            status: 401,
            error: "merchant authentication is required: send the X-API-Key header"
          })
          const none = yield* Effect.flip(mcpRead(agent, "facet://orders/ord_none"))
          expect(none).toMatchObject({ code: -32002, data: { status: 404 } })
        }),
      120_000
    )

    it.effect(
      "/mcp: POST only (stateless), the body-size limit, no foreign browser origin; loopback calls are rate limited as the caller's",
      () =>
        Effect.gen(function* () {
          const api = yield* TestClient
          const get = yield* api.request("GET", "/mcp", { headers: { accept: "text/event-stream" } })
          expect(get.status).toBe(405)
          expect(get.headers.get("allow")).toBe("POST")
          const del = yield* api.request("DELETE", "/mcp")
          expect(del.status).toBe(405)
          const mcpHeaders = { accept: "application/json, text/event-stream" }
          const large = yield* api.request("POST", "/mcp", {
            headers: mcpHeaders,
            rawBody: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "x".repeat(2_000_000) } })
          })
          expect(large.status).toBe(413)
          const foreign = yield* api.request("POST", "/mcp", {
            headers: { ...mcpHeaders, origin: "https://evil.example" },
            json: { jsonrpc: "2.0", id: 1, method: "ping" }
          })
          expect(foreign.status).toBe(403)
          // one message per request: a batch would fan one rate-limit token out into many /v1 calls
          const batch = yield* api.request("POST", "/mcp", {
            headers: mcpHeaders,
            json: Array.from({ length: 3 }, (_, id) => ({ jsonrpc: "2.0", id, method: "tools/list" }))
          })
          expect(batch.status).toBe(400)
          expect(JSON.stringify(batch.body)).toContain("batches are not accepted")

          // a keyless tool call from 127.0.0.2: /mcp and its call to /v1 both count against 127.0.0.2
          const sql = yield* SqlClient.SqlClient
          const bucketTimes = sql<{ bucket: string; updated_at: Date }>`
            SELECT bucket, updated_at FROM rate_limit_buckets WHERE bucket LIKE 'addr:%'`
          const before = new Map((yield* bucketTimes).map((b) => [b.bucket, b.updated_at.getTime()]))
          const answer = yield* postFrom127002(api.url, {
            jsonrpc: "2.0",
            id: 7,
            method: "tools/call",
            params: {
              name: "onboarding_merchant_apply",
              arguments: { body: { ...APPLICATION, project_name: "Other" } }
            }
          })
          expect(answer.status).toBe(200)
          expect(asRecord(asRecord(JSON.parse(answer.body)).result).isError).toBeUndefined()
          const after = yield* bucketTimes
          const touched = after.filter((b) => before.get(b.bucket) !== b.updated_at.getTime()).map((b) => b.bucket)
          expect(touched.map((b) => b.replace("::ffff:", ""))).toEqual(["addr:127.0.0.2"])
        }),
      60_000
    )

    it.scoped(
      "over stdio (npm run mcp): the catalogue, an order made and read, resources, a scope refusal and a bad input",
      () =>
        Effect.gen(function* () {
          const api = yield* TestClient
          const owner = asRecord(
            (yield* api.request("POST", "/v1/ai/merchant-apply", {
              json: { ...APPLICATION, project_name: "Stdio Shop" }
            })).body
          )
          const env = asRecord(owner.env)
          // a key that makes orders but cannot sweep: one process (each is a node start)
          const keys = yield* ApiKeys
          const apiKey = Redacted.value(
            (yield* keys.issue(String(env.FACET_MERCHANT_ID), ["read", "orders"], "orders, no wallet", TEST_ACTOR)).key
          )
          const agent = yield* mcpOverStdio(api.url, apiKey)
          const { tools } = yield* Effect.promise(() => agent.listTools())
          expect(tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name))

          const order = yield* mcpCall(agent, "orders_create", {
            body: { amount: "3", currency: "USDT", chain: "TRC20" }
          })
          expectOutcome("orders_create", order, ["ok"])
          const orderId = String(order.structured.order_id)
          const got = yield* mcpCall(agent, "orders_get", { order_id: orderId })
          expect(got.structured).toMatchObject({ order_id: orderId, status: "PENDING" })
          const open = asRecord(JSON.parse((yield* mcpRead(agent, OPEN_ORDERS_URI)).text))
          expect(recordsOf(open.orders).map((o) => o.order_id)).toEqual([orderId])
          const one = yield* mcpRead(agent, `facet://orders/${orderId}`)
          expect(JSON.parse(one.text)).toEqual(got.structured)
          const version = asRecord(JSON.parse((yield* mcpRead(agent, CONTRACT_VERSION_URI)).text))
          expect(typeof version.current_version).toBe("string")

          // sweeps need the wallet scope: the API's 403 and its message
          const refused = yield* mcpCall(agent, "wallet_assets_sweep", {
            asset_key: "TRC20-USDT",
            body: { from_wallet_id: "wal_none" }
          })
          const sweepDirect = yield* api.request("POST", "/v1/wallet-assets/TRC20-USDT/sweep", {
            apiKey,
            json: { from_wallet_id: "wal_none" }
          })
          expect(refused).toMatchObject({ isError: true, structured: { status: 403, ...asRecord(sweepDirect.body) } })
          expect(String(refused.structured.error)).toContain("lacks the wallet scope")
          // a bad input: the API's 400 and its message
          const bad = yield* mcpCall(agent, "orders_create", { body: { amount: "-1", currency: "USDT" } })
          const direct = yield* api.request("POST", "/v1/orders", { apiKey, json: { amount: "-1", currency: "USDT" } })
          expect(direct.status).toBe(400)
          expect(bad).toMatchObject({ isError: true, structured: { status: 400, ...asRecord(direct.body) } })
        }),
      120_000
    )
  })
})
