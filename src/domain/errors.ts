import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * The error categories of the contract (section 7), each with its HTTP status, encoded as `{error: string}`.
 * Services fail with errors named for the failure; http/error-statuses.ts maps each to one of these.
 */
const ErrorBody = Schema.Struct({ error: Schema.String })

/** On the wire an error is only `{error}`: the tag is ours, not the client's. */
const onTheWire = <Tag extends string, Self extends { readonly _tag: Tag; readonly error: string }>(
  tag: Tag,
  errorClass: Schema.Schema<Self, { readonly _tag: Tag; readonly error: string }>,
  status: number,
  description: string
) =>
  Schema.transform(ErrorBody, errorClass, {
    strict: true,
    decode: ({ error }) => ({ _tag: tag, error }),
    encode: ({ error }) => ({ error })
  }).annotations({ ...HttpApiSchema.annotations({ status }), description, identifier: tag })

export class BadRequestError extends Schema.TaggedError<BadRequestError>()("BadRequest", { error: Schema.String }) {}
export class UnauthorizedError extends Schema.TaggedError<UnauthorizedError>()("Unauthorized", {
  error: Schema.String
}) {}
export class ForbiddenError extends Schema.TaggedError<ForbiddenError>()("Forbidden", { error: Schema.String }) {}
export class NotFoundError extends Schema.TaggedError<NotFoundError>()("NotFound", { error: Schema.String }) {}
export class MethodNotAllowedError extends Schema.TaggedError<MethodNotAllowedError>()("MethodNotAllowed", {
  error: Schema.String
}) {}
export class ConflictError extends Schema.TaggedError<ConflictError>()("Conflict", { error: Schema.String }) {}
export class PayloadTooLargeError extends Schema.TaggedError<PayloadTooLargeError>()("PayloadTooLarge", {
  error: Schema.String
}) {}
export class UnsupportedMediaTypeError extends Schema.TaggedError<UnsupportedMediaTypeError>()("UnsupportedMediaType", {
  error: Schema.String
}) {}
export class RateLimitedError extends Schema.TaggedError<RateLimitedError>()("RateLimited", { error: Schema.String }) {}
export class InternalError extends Schema.TaggedError<InternalError>()("Internal", { error: Schema.String }) {}
export class ServiceUnavailableError extends Schema.TaggedError<ServiceUnavailableError>()("ServiceUnavailable", {
  error: Schema.String
}) {}

export const BadRequest = onTheWire("BadRequest", BadRequestError, 400, "Invalid request: fix it before retrying")
export const Unauthorized = onTheWire("Unauthorized", UnauthorizedError, 401, "Missing, invalid or inactive X-API-Key")
export const Forbidden = onTheWire("Forbidden", ForbiddenError, 403, "The key may not act on this resource")
export const NotFound = onTheWire("NotFound", NotFoundError, 404, "No such resource owned by the caller")
export const MethodNotAllowed = onTheWire(
  "MethodNotAllowed",
  MethodNotAllowedError,
  405,
  "Only GET and HEAD are accepted"
)
export const Conflict = onTheWire(
  "Conflict",
  ConflictError,
  409,
  "Idempotency-key reuse with a different request, a concurrent operation, or a resource-state conflict"
)
export const PayloadTooLarge = onTheWire("PayloadTooLarge", PayloadTooLargeError, 413, "The request body is too large")
export const UnsupportedMediaType = onTheWire(
  "UnsupportedMediaType",
  UnsupportedMediaTypeError,
  415,
  "The request body is not application/json"
)
export const RateLimited = onTheWire(
  "RateLimited",
  RateLimitedError,
  429,
  "Too many requests for this key: wait for Retry-After seconds, back off exponentially"
)
export const Internal = onTheWire("Internal", InternalError, 500, "An unexpected failure; nothing was half-written")
export const ServiceUnavailable = onTheWire(
  "ServiceUnavailable",
  ServiceUnavailableError,
  503,
  "A required service is temporarily unavailable: retry idempotent reads with backoff"
)

export type ApiError =
  | BadRequestError
  | UnauthorizedError
  | ForbiddenError
  | NotFoundError
  | MethodNotAllowedError
  | ConflictError
  | PayloadTooLargeError
  | UnsupportedMediaTypeError
  | RateLimitedError
  | InternalError
  | ServiceUnavailableError
