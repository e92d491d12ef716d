import { OpenApi } from "@effect/platform"
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
      .filter((item) => !(isRecord(item) && typeof item.$ref === "string" && FRAMEWORK_SCHEMAS.some((s) => item.$ref === `#/components/schemas/${s}`)))
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

/** The OpenAPI 3.1 document of the `/v1` API, generated from its `HttpApi` declaration. */
export const openApiDocument = (serverUrl: string): Record<string, unknown> => {
  const generated = withoutFrameworkErrors(OpenApi.fromApi(FacetApi, { additionalPropertiesStrategy: "allow" }))
  const document = isRecord(generated) ? generated : {}
  const components = isRecord(document.components) ? document.components : {}
  const schemas = isRecord(components.schemas) ? { ...components.schemas } : {}
  for (const name of FRAMEWORK_SCHEMAS) delete schemas[name]
  return { ...document, components: { ...components, schemas }, servers: [{ url: serverUrl }] }
}
