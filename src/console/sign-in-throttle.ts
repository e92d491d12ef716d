import { Effect, Option } from "effect"
import { AuditStore } from "../stores/audit-store.js"
import { ConsoleStore } from "../stores/console-store.js"
import { ConsoleRefusal } from "./console-refusal.js"

/** Failures tolerated in the window from one address (any account), and for one account from one address. */
const MAX_PER_ADDRESS = 20
const MAX_PER_ACCOUNT_AND_ADDRESS = 5
/** Past this many failures for an account from anywhere, each attempt waits 2^(n - this) s since the last, at most `MAX_BACKOFF_SECONDS`. */
const BACKOFF_AFTER = 5
const MAX_BACKOFF_SECONDS = 60
const WINDOW = "15 minutes"

/**
 * Failed password logins and password re-confirmations, counted together (migration 0025), and the
 * throttle they feed. An address that fails too often is refused for the window, for any account; an
 * account failed too often from one address is refused from that address. Failures for an account from
 * many addresses (a spread-out guess) slow logins to it down — each attempt waits a backoff capped at a
 * minute — except from an address its owner has logged in from before, and never a re-confirmation inside
 * the owner's own session: no stranger can lock a named approver out of logging in or approving.
 */
export class SignInThrottle extends Effect.Service<SignInThrottle>()("facet/SignInThrottle", {
  effect: Effect.gen(function* () {
    const store = yield* ConsoleStore
    // where an account's owner logged in before is in the audit log
    const audit = yield* AuditStore

    /**
     * Refuses (429, saying how long to wait) an attempt the counts forbid now; nothing is counted.
     * `session`: a re-confirmation by a signed-in user (the account-wide backoff does not apply).
     */
    const gate = Effect.fn("SignInThrottle.gate")(function* (loginName: string, address: string, session = false) {
      const found = yield* Effect.orDie(store.failureCounts(loginName, address, WINDOW))
      if (Option.isNone(found)) return
      const counts = found.value
      if (counts.by_address >= MAX_PER_ADDRESS || counts.by_pair >= MAX_PER_ACCOUNT_AND_ADDRESS) {
        return yield* new ConsoleRefusal({
          status: 429,
          message: "Too many failed attempts from here. Wait 15 minutes and try again."
        })
      }
      if (
        !session &&
        counts.by_name >= BACKOFF_AFTER &&
        counts.since_last !== null &&
        !(yield* knownAddress(loginName, address))
      ) {
        const wait = Math.min(MAX_BACKOFF_SECONDS, 2 ** (counts.by_name - BACKOFF_AFTER))
        if (counts.since_last < wait) {
          return yield* new ConsoleRefusal({
            status: 429,
            message: `Too many failed attempts for this account. Wait ${Math.ceil(wait - counts.since_last)} seconds and try again.`
          })
        }
      }
    })

    /** The account's owner has logged in from this address before. */
    const knownAddress = (loginName: string, address: string) => Effect.orDie(audit.loggedInFrom(loginName, address))

    /** One failure, in the caller's transaction when it has one. */
    const failed = Effect.fn("SignInThrottle.failed")(function* (
      loginName: string,
      address: string,
      kind: "login" | "reconfirm"
    ) {
      yield* Effect.orDie(store.recordFailure(loginName, address, kind))
    })

    return { gate, failed } as const
  }),
  dependencies: [AuditStore.Default, ConsoleStore.Default]
}) {}
