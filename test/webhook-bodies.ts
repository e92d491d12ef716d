import { Either, ParseResult, Schema } from "effect"
import { idempotencyKeyMatches, WebhookBody, webhookEventOf } from "../src/domain/webhook-events.js"

const strictly = Schema.decodeUnknownEither(Schema.parseJson(WebhookBody), { onExcessProperty: "error" })

/**
 * What is wrong with a webhook the service wrote or delivered, measured against its declaration
 * (src/domain/webhook-events.ts): a field the schema does not declare, or lacks; a transport event that is not
 * the body's; a key that is not the body's. Undefined: nothing.
 */
export const webhookProblem = (event: string, idempotencyKey: string, body: string): string | undefined =>
  Either.match(strictly(body), {
    onLeft: (error) => `the body does not match its schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`,
    onRight: (decoded) =>
      webhookEventOf(decoded).type !== event
        ? `sent as ${event}, but the body is a ${webhookEventOf(decoded).type}`
        : idempotencyKeyMatches(decoded, idempotencyKey)
          ? undefined
          : `the key ${idempotencyKey} is not the body's`
  })
