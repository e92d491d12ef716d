import { Either, Schema } from "effect"

/**
 * What a node's answer to `sendTransaction` says, from its structure: `sent` (a signature), `refused`
 * (a JSON-RPC error object in an HTTP 200 answer with code -32002 — preflight failed — and the `err` the
 * simulation gave in its data), or `unknown` (any other code, an HTTP status other than 200 — a 429 whose
 * body says "insufficient credits" — or a body that is no JSON-RPC answer). "Already processed" is `sent`:
 * the same signature is out. Even `refused` proves nothing about the bytes (issue 46): custody waits for
 * landing evidence whatever this says.
 */
export type SolanaSendAnswer =
  | { readonly _tag: "sent" }
  | { readonly _tag: "refused"; readonly message: string }
  | { readonly _tag: "unknown"; readonly message: string }

const PREFLIGHT_FAILED = -32002

const Answer = Schema.Union(
  Schema.Struct({ result: Schema.String }),
  Schema.Struct({
    error: Schema.Struct({
      code: Schema.Number,
      message: Schema.String,
      data: Schema.optional(Schema.Struct({ err: Schema.optional(Schema.Unknown) }))
    })
  })
)
const decodeAnswer = Schema.decodeUnknownEither(Schema.parseJson(Answer))

const ALREADY_PROCESSED = /AlreadyProcessed|already been processed/

export const solanaSendAnswer = (status: number, body: string): SolanaSendAnswer => {
  if (status !== 200) return { _tag: "unknown", message: `HTTP ${status}: ${body.slice(0, 200)}` }
  const answer = decodeAnswer(body)
  if (Either.isLeft(answer)) return { _tag: "unknown", message: `not a JSON-RPC answer: ${body.slice(0, 200)}` }
  if ("result" in answer.right) return { _tag: "sent" }
  const { code, message, data } = answer.right.error
  const err = data?.err
  if (code !== PREFLIGHT_FAILED || err === undefined || err === null)
    return { _tag: "unknown", message: `${code}: ${message}` }
  const reason = typeof err === "string" ? err : JSON.stringify(err)
  if (ALREADY_PROCESSED.test(reason)) return { _tag: "sent" }
  return { _tag: "refused", message: `${code}: ${message} (${reason})` }
}
