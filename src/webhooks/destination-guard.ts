import * as dns from "node:dns"
import * as net from "node:net"

/**
 * Where a production webhook may not go: loopback, private, shared (CGNAT), link-local (including the
 * cloud metadata address 169.254.169.254), multicast and reserved ranges, in IPv4 and IPv6.
 */
const blocked = new net.BlockList()
for (const [address, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
] as const)
  blocked.addSubnet(address, prefix, "ipv4")
for (const [address, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96],
  ["2001:db8::", 32]
] as const)
  blocked.addSubnet(address, prefix, "ipv6")

export const isForbiddenAddress = (address: string): boolean => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped?.[1] !== undefined) return isForbiddenAddress(mapped[1])
  const family = net.isIP(address)
  if (family === 0) return true
  return blocked.check(address, family === 4 ? "ipv4" : "ipv6")
}

// an Error, not a tagged one: Node's socket `lookup` callback takes an Error; the HTTP client fails with its RequestError
export class ForbiddenDestination extends Error {}

/**
 * A `lookup` for sockets that refuses forbidden addresses at connect time, so a name that resolves to a
 * private address (or is re-pointed there after a check) is never connected to.
 */
export const guardedLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error !== null) return callback(error, "", 0)
    const list = Array.isArray(addresses) ? addresses : []
    const bad = list.find((a) => isForbiddenAddress(a.address))
    if (bad !== undefined || list.length === 0) {
      return callback(
        new ForbiddenDestination(`destination ${hostname} resolves to a forbidden address ${bad?.address ?? "(none)"}`),
        "",
        0
      )
    }
    if (options.all === true) return callback(null, list)
    const first = list[0]
    return callback(null, first?.address ?? "", first?.family ?? 4)
  })
}

/** Checks what can be checked before connecting: scheme, and a literal IP host (which skips DNS). */
export const destinationProblem = (destination: string, production: boolean): string | undefined => {
  let url: URL
  try {
    url = new URL(destination)
  } catch {
    return `destination ${destination} is not a URL`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return `destination scheme ${url.protocol} is not http or https`
  if (!production) return undefined
  const host = url.hostname.replace(/^\[|\]$/g, "")
  if (host === "localhost" || host.endsWith(".localhost")) return `destination ${url.hostname} is a loopback name`
  if (net.isIP(host) !== 0 && isForbiddenAddress(host))
    return `destination ${url.hostname} is a private, loopback or link-local address`
  return undefined
}
