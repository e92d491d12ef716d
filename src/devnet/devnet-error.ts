import { Data } from "effect"

/** A devnet (a local chain the service runs for development and tests) could not be started or used. */
export class DevnetError extends Data.TaggedError("DevnetError")<{
  readonly message: string
  readonly cause?: unknown
}> {}
