import { Schema } from "effect"

/** A console request refused, with the page status it gets and a sentence for the human. */
export class ConsoleRefusal extends Schema.TaggedError<ConsoleRefusal>()("ConsoleRefusal", {
  status: Schema.Number,
  message: Schema.String
}) {}
