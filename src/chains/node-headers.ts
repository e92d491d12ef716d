import { Config, ConfigError, Either, Redacted } from "effect"

/** Headers sent to one node: a provider's API key (TronGrid's `TRON-PRO-API-KEY`, others' `x-api-key`…). */
export type NodeHeaders = Readonly<Record<string, string>>

/**
 * FACET_NODE_HEADERS: headers per node host, for providers that take their key in a header rather than in
 * the URL: `api.trongrid.io=TRON-PRO-API-KEY:…; bsc.example.com=x-api-key:…,x-other:…`. Secret: read
 * redacted, never logged (node labels show scheme and host only). A malformed entry is refused at start.
 */
export const nodeHeadersConfig = Config.option(Config.redacted("FACET_NODE_HEADERS")).pipe(
  Config.mapOrFail((value) => {
    const byHost = new Map<string, NodeHeaders>()
    if (value._tag === "None") return Either.right(byHost)
    for (const entry of Redacted.value(value.value)
      .split(";")
      .map((e) => e.trim())
      .filter((e) => e !== "")) {
      const at = entry.indexOf("=")
      const host = entry.slice(0, at).trim().toLowerCase()
      const headers: Record<string, string> = {}
      for (const pair of entry.slice(at + 1).split(",")) {
        const colon = pair.indexOf(":")
        const name = pair.slice(0, colon).trim()
        if (at <= 0 || colon <= 0 || !/^[A-Za-z0-9-]+$/.test(name)) {
          return Either.left(
            ConfigError.InvalidData(
              [],
              `FACET_NODE_HEADERS: expected host=Header-Name:value[,Header-Name:value]; … (an entry for ${host === "" ? "no host" : host} is not)`
            )
          )
        }
        headers[name] = pair.slice(colon + 1).trim()
      }
      byHost.set(host, headers)
    }
    return Either.right(byHost)
  })
)

/** The headers configured for a node's host (none when its host has none). */
export const headersFor = (byHost: ReadonlyMap<string, NodeHeaders>, url: string): NodeHeaders =>
  URL.canParse(url) ? (byHost.get(new URL(url).hostname.toLowerCase()) ?? {}) : {}
