import { Context, Layer, Option, Redacted } from "effect"
import { randomBytes, timingSafeEqual } from "node:crypto"

/**
 * Who an `/mcp` request comes from, and how the route's own calls to `/v1` (over loopback) say so. The API key
 * is the caller's (`X-API-Key`, or `Authorization: Bearer <key>` that many MCP clients send) and goes on each
 * call, so the rate limit by key is the caller's too. A call without a key is limited by client address, and
 * loopback calls all come from 127.0.0.1: they carry the caller's address with this process's secret, and the
 * rate limiter counts them against that address (`rateLimitAddress`), never a header it cannot trust.
 */

/** A random secret per process: proves that a request to `/v1` is one of this process's own `/mcp` calls. */
export class McpLoopback extends Context.Tag("facet/McpLoopback")<
  McpLoopback,
  { readonly secret: Redacted.Redacted<string> }
>() {}

export const McpLoopbackLive = Layer.sync(McpLoopback, () => ({
  secret: Redacted.make(randomBytes(32).toString("hex"))
}))

const SECRET_HEADER = "x-facet-mcp-loopback"
const CLIENT_HEADER = "x-facet-mcp-client"

type Headers = Readonly<Record<string, string | undefined>>

/** The caller's API key: `X-API-Key`, else `Authorization: Bearer <key>`. */
export const callerApiKey = (headers: Headers): Option.Option<Redacted.Redacted<string>> => {
  const direct = headers["x-api-key"]?.trim()
  if (direct !== undefined && direct !== "") return Option.some(Redacted.make(direct))
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? "")?.[1]
  return bearer === undefined ? Option.none() : Option.some(Redacted.make(bearer))
}

/** The headers of the route's calls to `/v1` for a caller at `address`. */
export const loopbackHeaders = (loopback: Context.Tag.Service<McpLoopback>, address: string) => ({
  [SECRET_HEADER]: Redacted.value(loopback.secret),
  [CLIENT_HEADER]: address
})

const isLoopback = (address: string) =>
  address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.")

const sameSecret = (given: string, secret: string) => {
  const a = Buffer.from(given)
  const b = Buffer.from(secret)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * The address a request is rate limited by: its own, or, for one of this process's `/mcp` calls (from loopback,
 * with the secret), the MCP caller's that it carries.
 */
export const rateLimitAddress = (
  loopback: Context.Tag.Service<McpLoopback>,
  headers: Headers,
  remoteAddress: Option.Option<string>
): string => {
  const own = Option.getOrElse(remoteAddress, () => "unknown")
  const secret = headers[SECRET_HEADER]
  const caller = headers[CLIENT_HEADER]
  return isLoopback(own) &&
    secret !== undefined &&
    caller !== undefined &&
    caller !== "" &&
    sameSecret(secret, Redacted.value(loopback.secret))
    ? caller
    : own
}
