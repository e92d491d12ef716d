import { HttpApi, HttpMethod, OpenApi } from "@effect/platform"
import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js"
import { Context, Either, JSONSchema, Option, type Schema } from "effect"
import { randomUUID } from "node:crypto"
import { FacetApi } from "../api.js"
import { AgentHints, AgentNote } from "./agent-annotations.js"

/**
 * The MCP tools: one per endpoint of the `/v1` API (`FacetApi`), derived from its declaration when this module
 * loads, so a new endpoint is a tool with no code written (or it is in `EXCLUDED`, with its reason). A tool's
 * input is the endpoint's own Schemas as JSON Schema (effect's `JSONSchema`): path and query parameters as
 * top-level properties, the JSON payload under `body`, the idempotency header as `idempotency_key`. A call is
 * one HTTP request to the API, so authentication, scopes, validation and errors are the API's.
 */

/** What is not a tool, and why: whole groups, or one endpoint of a group. */
export interface Exclusion {
  readonly group: string
  readonly endpoint?: string
  readonly reason: string
}

export const EXCLUDED: ReadonlyArray<Exclusion> = [
  { group: "checkout", reason: "the customer's hosted checkout page (HTML), not the merchant API (OpenApi.Exclude)" },
  { group: "pay", reason: "the customer's payment link page (HTML), not the merchant API (OpenApi.Exclude)" },
  { group: "system", reason: "operator endpoints (readiness, Prometheus metrics), not a merchant's" },
  {
    group: "developer",
    reason:
      "the contract itself: served as the resources facet://openapi.json, facet://contract/version and facet://llms.txt"
  },
  {
    group: "walletAssets",
    endpoint: "assets",
    reason: "deprecated (its totals are not withdrawable): wallet_assets_portfolio replaces it"
  },
  {
    group: "ledgerExport",
    endpoint: "export",
    reason:
      "a streamed bulk file (CSV or NDJSON, up to a year of movements), not an answer for a model: fetch GET /v1/ledger-export over HTTP"
  }
]

/** The idempotency header (`IdempotencyKeyHeader`) and the input that carries it. */
const IDEMPOTENCY_HEADER = "x-service-idempotency-key"
const IDEMPOTENCY_INPUT = "idempotency_key"

/** A header an endpoint declares, as a tool input. `generated`: when absent, the server makes one per call. */
export interface ToolHeader {
  readonly input: string
  readonly header: string
  readonly generated: boolean
}

export interface ToolInputSchema {
  readonly type: "object"
  readonly properties: Record<string, Record<string, unknown>>
  readonly required: ReadonlyArray<string>
  readonly additionalProperties: false
  readonly $defs?: Record<string, unknown>
}

/** A tool and the request it makes. */
export interface ApiTool {
  readonly name: string
  /** `group.endpoint` in the HttpApi. */
  readonly endpoint: string
  readonly method: HttpMethod.HttpMethod
  /** The declared path, `:name` for its parameters. */
  readonly path: string
  readonly pathParams: ReadonlyArray<string>
  readonly queryParams: ReadonlyArray<string>
  readonly hasBody: boolean
  readonly headers: ReadonlyArray<ToolHeader>
  readonly description: string
  readonly inputSchema: ToolInputSchema
  readonly annotations: ToolAnnotations
}

/** `merchantApply` → `merchant_apply`. */
const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase()

/** `/v1/orders/:order_id` → `/v1/orders/{order_id}`, as the OpenAPI document writes it. */
export const openApiPath = (path: string) => path.replace(/:(\w+)\??/g, "{$1}")

const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`)

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The generated JSON Schema as plain data, without effect's `$id` markers (`/schemas/unknown`, …): an `$id`
 * inside a schema would change the base URI of what it holds, and repeated ones trouble some validators.
 */
const withoutIds = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(withoutIds)
  if (!isRecord(node)) return node
  return Object.fromEntries(Object.entries(node).flatMap(([k, v]) => (k === "$id" ? [] : [[k, withoutIds(v)]])))
}

const asSchemaObject = (node: unknown): Record<string, unknown> => {
  const plain = withoutIds(node)
  return isRecord(plain) ? plain : {}
}

interface Parameters {
  readonly properties: ReadonlyArray<readonly [string, Record<string, unknown>]>
  readonly required: ReadonlyArray<string>
}

/** A Struct of parameters (path, query, headers) as (name, schema) pairs, as OpenAPI lists them. */
const parametersOf = (
  schema: Option.Option<Schema.Schema.All>,
  definitions: Record<string, JSONSchema.JsonSchema7>
): Parameters =>
  Option.match(schema, {
    onNone: () => ({ properties: [], required: [] }),
    onSome: (s) => {
      const json = JSONSchema.fromAST(s.ast, {
        definitions,
        target: "jsonSchema2020-12",
        topLevelReferenceStrategy: "skip"
      })
      return "properties" in json && "required" in json
        ? {
            properties: Object.entries(json.properties).map(([name, p]) => [name, asSchemaObject(p)] as const),
            required: json.required
          }
        : { properties: [], required: [] }
    }
  })

const IDEMPOTENCY_DESCRIPTION =
  "Sent as X-Service-Idempotency-Key. Retrying this call (after a timeout, a 5xx or a lost answer)? Pass the same key with the same arguments: it is done once and you get the same answer; another body with the same key is refused (409). Omitted: a new key is made for this call, and the error of a call that may have been done gives it."

/**
 * Money out (`AgentHints.destructive` with the idempotency header): the key is the caller's, required. A key the
 * server made could be lost with the answer (the reply cut, the request cancelled), and a retry under a new key
 * would ask for a second payout.
 */
const REQUIRED_IDEMPOTENCY_DESCRIPTION =
  "Required: a key of your own for this request, sent as X-Service-Idempotency-Key (e.g. your payout reference; 1-128 visible ASCII characters). Keep it before you call: retrying after a timeout, a 5xx or a lost answer, pass the same key with the same arguments and it is done once; a new key would be a second payout."

/** The header's rule (`IdempotencyKeyHeader`), checked before a call so a bad key never reaches a request. */
const IDEMPOTENCY_KEY_PATTERN = /^[!-~]{1,128}$/

interface Derived {
  readonly tools: ReadonlyArray<ApiTool>
  /** Endpoints that are neither a tool nor excluded: what the catalogue test names. */
  readonly problems: ReadonlyArray<string>
}

const derive = (): Derived => {
  const tools: Array<ApiTool> = []
  const problems: Array<string> = []
  HttpApi.reflect(FacetApi, {
    onGroup: () => undefined,
    onEndpoint: ({ group, endpoint, payloads }) => {
      const excluded = EXCLUDED.some(
        (e) => e.group === group.identifier && (e.endpoint === undefined || e.endpoint === endpoint.name)
      )
      if (excluded) return
      const id = `${group.identifier}.${endpoint.name}`
      if (Context.get(group.annotations, OpenApi.Exclude))
        problems.push(`${id}: its group is not in the OpenAPI document (OpenApi.Exclude) but not in EXCLUDED`)
      const definitions: Record<string, JSONSchema.JsonSchema7> = {}
      const path = parametersOf(endpoint.pathSchema, definitions)
      const hasBody = HttpMethod.hasBody(endpoint.method)
      // a payload of a method without a body is sent as query parameters (as the OpenAPI document lists it)
      const query = [
        ...(hasBody ? [] : [parametersOf(endpoint.payloadSchema, definitions)]),
        parametersOf(endpoint.urlParamsSchema, definitions)
      ]
      const declaredHeaders = parametersOf(endpoint.headersSchema, definitions)
      const json = payloads.get("application/json")
      if (hasBody && payloads.size > 0 && json === undefined)
        problems.push(`${id}: a payload that is not JSON (${[...payloads.keys()].join(", ")})`)
      const body = hasBody && json !== undefined ? Option.some(json.ast) : Option.none()

      const hints: Context.Tag.Service<AgentHints> = Option.getOrElse(
        Context.getOption(endpoint.annotations, AgentHints),
        () => ({})
      )
      const moneyOut = hints.destructive === true
      const headers = declaredHeaders.properties.map(([header, schema]) => {
        const idempotency = header === IDEMPOTENCY_HEADER
        return {
          header,
          input: idempotency ? IDEMPOTENCY_INPUT : header.replace(/-/g, "_"),
          generated: idempotency && !moneyOut,
          required: declaredHeaders.required.includes(header) || (idempotency && moneyOut),
          schema: idempotency
            ? { ...schema, description: moneyOut ? REQUIRED_IDEMPOTENCY_DESCRIPTION : IDEMPOTENCY_DESCRIPTION }
            : schema
        }
      })
      const properties: Record<string, Record<string, unknown>> = {}
      for (const [name, schema] of [...path.properties, ...query.flatMap((q) => q.properties)])
        properties[name] = schema
      if (Option.isSome(body))
        properties.body = {
          ...asSchemaObject(JSONSchema.fromAST(body.value, { definitions, target: "jsonSchema2020-12" })),
          description: "The JSON request body"
        }
      for (const h of headers) properties[h.input] = h.schema
      const required = [
        ...path.required,
        ...query.flatMap((q) => q.required),
        ...(Option.isSome(body) ? ["body"] : []),
        ...headers.filter((h) => h.required).map((h) => h.input)
      ]
      const defs = asSchemaObject(definitions)

      const summary = Context.getOption(endpoint.annotations, OpenApi.Summary)
      const description = Context.getOption(endpoint.annotations, OpenApi.Description)
      const note = Context.getOption(endpoint.annotations, AgentNote)
      if (Option.isNone(summary)) problems.push(`${id}: no OpenApi.Summary to describe its tool`)
      const readOnly = endpoint.method === "GET" || hints.readOnly === true
      tools.push({
        name: `${snake(group.identifier)}_${snake(endpoint.name)}`,
        endpoint: id,
        method: endpoint.method,
        path: endpoint.path,
        pathParams: path.properties.map(([name]) => name),
        queryParams: query.flatMap((q) => q.properties.map(([name]) => name)),
        hasBody: Option.isSome(body),
        headers: headers.map(({ header, input, generated }) => ({ header, input, generated })),
        description: [
          `${endpoint.method} ${openApiPath(endpoint.path)}: ${sentence(Option.getOrElse(summary, () => ""))}`,
          ...Option.toArray(description),
          ...Option.toArray(note)
        ].join("\n\n"),
        inputSchema: {
          type: "object",
          properties,
          required,
          additionalProperties: false,
          ...(Object.keys(defs).length > 0 ? { $defs: defs } : {})
        },
        annotations: readOnly
          ? { readOnlyHint: true }
          : {
              readOnlyHint: false,
              destructiveHint: hints.destructive === true,
              idempotentHint: hints.idempotent === true
            }
      })
    }
  })
  return { tools, problems }
}

const derived = derive()

/** Every tool, in the order the API declares its endpoints. */
export const TOOLS: ReadonlyArray<ApiTool> = derived.tools

/** Endpoints the catalogue could not make a tool of and that are not excluded (the catalogue test lists them). */
export const CATALOGUE_PROBLEMS: ReadonlyArray<string> = derived.problems

const BY_NAME = new Map(TOOLS.map((tool) => [tool.name, tool]))

export const toolNamed = (name: string): Option.Option<ApiTool> => Option.fromNullable(BY_NAME.get(name))

/** Where a tool's HTTP request goes, for a client: method and path as the OpenAPI document writes them. */
export const HTTP_META = "facet/http"

/** A tool as `tools/list` answers it. */
export const listedTool = (tool: ApiTool): Tool => ({
  name: tool.name,
  description: tool.description,
  inputSchema: { ...tool.inputSchema, required: [...tool.inputSchema.required] },
  annotations: tool.annotations,
  _meta: { [HTTP_META]: { method: tool.method, path: openApiPath(tool.path) } }
})

/** One request to the API. */
export interface ApiRequest {
  readonly method: HttpMethod.HttpMethod
  /** The path with its parameters and query string. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Option.Option<unknown>
  /** The idempotency key the request carries, when it is one the server made. */
  readonly generatedKey: Option.Option<string>
}

const scalar = (value: unknown): Option.Option<string> =>
  typeof value === "string"
    ? Option.some(value)
    : (typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean"
      ? Option.some(String(value))
      : Option.none()

/**
 * The request a tool call makes, or why its arguments cannot make one: their shape only (an object, no unknown
 * argument, the required ones there, parameters that are text). Their values are the API's to judge.
 */
export const toolRequest = (tool: ApiTool, args: unknown): Either.Either<ApiRequest, string> => {
  const given = args === undefined || args === null ? {} : args
  if (!isRecord(given)) return Either.left(`the arguments of ${tool.name} must be an object`)
  const takes = Object.keys(tool.inputSchema.properties)
  const accepted = takes.length === 0 ? "it takes no arguments" : `it takes: ${takes.join(", ")}`
  const unknown = Object.keys(given).filter((key) => !takes.includes(key))
  if (unknown.length > 0) return Either.left(`unknown argument(s) ${unknown.join(", ")} for ${tool.name}: ${accepted}`)
  const missing = tool.inputSchema.required.filter((key) => given[key] === undefined)
  if (missing.length > 0)
    return Either.left(`missing required argument(s) ${missing.join(", ")} for ${tool.name}: ${accepted}`)

  let url = tool.path
  for (const name of tool.pathParams) {
    const value = scalar(given[name])
    if (Option.isNone(value) || value.value === "")
      return Either.left(`${name} must be a non-empty string (a path parameter of ${tool.name})`)
    // encodeURIComponent leaves "." and "..": the URL would resolve them into another endpoint's path
    if (value.value === "." || value.value === "..")
      return Either.left(`${name} cannot be "${value.value}" (a path parameter of ${tool.name})`)
    url = url.replace(new RegExp(`:${name}\\??(?=/|$)`), encodeURIComponent(value.value))
  }
  const query = new URLSearchParams()
  for (const name of tool.queryParams) {
    const value = given[name]
    if (value === undefined || value === null) continue
    for (const item of Array.isArray(value) ? value : [value]) {
      const text = scalar(item)
      if (Option.isNone(text)) return Either.left(`${name} must be a string, a number or a boolean`)
      query.append(name, text.value)
    }
  }
  const search = query.toString()

  const headers: Record<string, string> = {}
  let generatedKey = Option.none<string>()
  for (const h of tool.headers) {
    const value = given[h.input]
    if (value === undefined || value === null) {
      if (h.generated) {
        const key = `mcp-${randomUUID()}`
        headers[h.header] = key
        generatedKey = Option.some(key)
      }
      continue
    }
    if (typeof value !== "string") return Either.left(`${h.input} must be a string`)
    if (h.header === IDEMPOTENCY_HEADER && !IDEMPOTENCY_KEY_PATTERN.test(value))
      return Either.left(`${h.input} must be 1 to 128 visible ASCII characters without whitespace`)
    headers[h.header] = value
  }
  return Either.right({
    method: tool.method,
    url: search === "" ? url : `${url}?${search}`,
    headers,
    body: tool.hasBody ? Option.some(given.body) : Option.none(),
    generatedKey
  })
}

/** What the API answered. */
export interface ApiAnswer {
  readonly status: number
  readonly contentType: string
  readonly text: string
}

export const parseJson = (text: string): Option.Option<unknown> => Either.getRight(Either.try(() => JSON.parse(text)))

/** A tool error that no HTTP answer carries (bad arguments, the API out of reach). */
export const toolError = (structured: Record<string, unknown>): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: JSON.stringify(structured) }],
  structuredContent: structured
})

/**
 * The API's answer as the tool's result: a 2xx is its JSON body (as text, and as structured content when it is
 * an object); anything else a tool error `{status, error, …the body's other fields}`. When the server made the
 * idempotency key and the call may have been done (429, 5xx), the error gives the key to retry with.
 */
export const toolResult = (answer: ApiAnswer, generatedKey: Option.Option<string>): CallToolResult => {
  const parsed = parseJson(answer.text)
  if (answer.status >= 200 && answer.status < 300) {
    return {
      content: [{ type: "text", text: answer.text }],
      ...Option.match(Option.filter(parsed, isRecord), {
        onNone: () => ({}),
        onSome: (body) => ({ structuredContent: body })
      })
    }
  }
  const body: Record<string, unknown> = Option.getOrElse(Option.filter(parsed, isRecord), () => ({
    error: answer.text.trim() === "" ? `HTTP ${answer.status}` : answer.text.slice(0, 2000)
  }))
  const { status: _ignored, ...fields } = body
  const retryable = answer.status === 429 || answer.status >= 500
  return toolError({
    status: answer.status,
    ...fields,
    ...(retryable && Option.isSome(generatedKey) ? { idempotency_key: generatedKey.value } : {})
  })
}
