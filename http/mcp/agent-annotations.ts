import { Context } from "effect"

/**
 * What an AI agent must know before calling an endpoint, beyond its summary: set in `http/api.ts` beside the
 * endpoint, it ends the description of the endpoint's MCP tool. The endpoints that move money out say here
 * that they only ask, and that a human approves in the merchant console.
 */
export class AgentNote extends Context.Tag("facet/AgentNote")<AgentNote, string>() {}

/**
 * How an endpoint behaves, for an MCP client deciding whether to ask its user first (the tool's annotations):
 * `readOnly` for a POST that only computes (a GET is read-only by its method); `destructive` when it does
 * more than add (money leaves, something ends for good); `idempotent` when repeating the same call changes
 * nothing more. Unset: false.
 */
export class AgentHints extends Context.Tag("facet/AgentHints")<
  AgentHints,
  { readonly readOnly?: boolean; readonly destructive?: boolean; readonly idempotent?: boolean }
>() {}

/** The sentence each money-out endpoint's note ends with. */
export const AGENT_NEVER_APPROVES = "An AI agent can never approve it: no tool, key or endpoint does."
