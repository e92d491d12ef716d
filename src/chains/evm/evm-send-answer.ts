import { BaseError, HttpRequestError, RpcRequestError } from "viem"

/**
 * What a node's answer to `eth_sendRawTransaction` says, read from its structure, never from free text
 * alone: `known` (the node has these bytes already: as good as accepted), `refused` (a JSON-RPC error object
 * in a 2xx answer, with geth's txpool code and one of its documented texts), or `unknown` (anything else:
 * a 429, a 5xx, a proxy's page, a timeout — whose body may say "insufficient credits", and whose bytes may
 * have gone out all the same). Even `refused` is no evidence that the bytes are not out (issue 46): custody
 * waits for landing evidence whatever this says; it only decides how the wait goes.
 */
export type EvmSendAnswer =
  | { readonly _tag: "known" }
  | { readonly _tag: "refused"; readonly message: string }
  | { readonly _tag: "unknown"; readonly message: string }

/** geth's txpool errors (code -32000; -32003, EIP-1474's "transaction rejected", where a node uses it). */
const TXPOOL_CODES: ReadonlySet<number> = new Set([-32000, -32003])
const KNOWN = /^(already known|known transaction)/i
const DOCUMENTED =
  /^(nonce too low|nonce too high|insufficient funds for gas \* price \+ value|intrinsic gas too low|replacement transaction underpriced|transaction underpriced|exceeds block gas limit|invalid sender|gas limit reached|max fee per gas less than block base fee)/i

const messageOf = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

export const evmSendAnswer = (cause: unknown): EvmSendAnswer => {
  if (!(cause instanceof BaseError)) return { _tag: "unknown", message: messageOf(cause) }
  // an HTTP status other than 2xx: the body is the provider's words, not the node's verdict on the bytes
  if (cause.walk((e) => e instanceof HttpRequestError) !== null) return { _tag: "unknown", message: messageOf(cause) }
  const rpc = cause.walk((e) => e instanceof RpcRequestError)
  if (!(rpc instanceof RpcRequestError) || rpc.status !== undefined)
    return { _tag: "unknown", message: messageOf(cause) }
  // the node's own text: anvil writes "Insufficient funds…", geth "insufficient funds…"; a prefix is kept
  const text = rpc.details.trim()
  if (!TXPOOL_CODES.has(rpc.code)) return { _tag: "unknown", message: `${rpc.code}: ${text}` }
  if (KNOWN.test(text)) return { _tag: "known" }
  if (DOCUMENTED.test(text)) return { _tag: "refused", message: `${rpc.code}: ${text}` }
  return { _tag: "unknown", message: `${rpc.code}: ${text}` }
}
