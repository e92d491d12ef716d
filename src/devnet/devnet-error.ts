import { Schema } from "effect"

/** A devnet (a local chain the service runs for development and tests) could not be started or used. */
export class DevnetError extends Schema.TaggedError<DevnetError>()("DevnetError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}
