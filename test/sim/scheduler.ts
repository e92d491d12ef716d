import { Cause, Deferred, Effect, Exit, Fiber, Option, Queue } from "effect"
import type { Park } from "./sim-client.js"

/**
 * A wallet's actor in the simulation: the operations handed to it, handled one at a time, the first in
 * progress (a message is delivered again until its handler returns, as the cluster's are).
 */
export interface SimActor {
  readonly id: string
  readonly mailbox: Array<string>
  state: "parked" | "crashed" | "done"
  /** The point it waits at for its turn (a chain call, before or after, or the sender's pause). */
  at: string
  wake: Deferred.Deferred<void> | undefined
  fiber: Fiber.RuntimeFiber<void> | undefined
}

/** How a turn ended: the actor parked again, handled its whole mailbox, died of a defect, or never gave the turn back. */
export type TurnEnd =
  | { readonly _tag: "Parked" }
  | { readonly _tag: "Done" }
  | { readonly _tag: "Defect"; readonly cause: string }
  | { readonly _tag: "Stalled" }

interface Event {
  readonly actor: SimActor
  readonly exit: Exit.Exit<void> | undefined
}

/** A defect in words: its message and, for a database error, PostgreSQL's own (the constraint or trigger). */
const defectText = (cause: Cause.Cause<unknown>) => {
  const squashed = Cause.squash(cause)
  const inner = squashed instanceof Error && squashed.cause instanceof Error ? `: ${squashed.cause.message}` : ""
  return `${squashed instanceof Error ? squashed.message : String(squashed)}${inner}`
}

/** How long (real time) a turn may take before the run counts it as stalled (a lock wait, a hang). */
const TURN_LIMIT = "30 seconds"

/**
 * The deterministic scheduler's mechanics: every actor runs alone, holding the turn until it parks (at a
 * chain call or at SendPacer.pause) or ends; the caller decides who runs next. Only one fiber runs at a time,
 * so the database sees one order of statements and a seed replays exactly.
 */
export interface Scheduler {
  readonly park: Park
  readonly actors: ReadonlyArray<SimActor>
  readonly actor: (id: string) => SimActor
  /** Starts (or restarts after a crash) the actor on its mailbox, and waits for its turn to end. */
  readonly start: (actor: SimActor, drive: (operationId: string) => Effect.Effect<void>) => Effect.Effect<TurnEnd>
  /** Gives a parked actor the turn and waits for it to end. */
  readonly resume: (actor: SimActor) => Effect.Effect<TurnEnd>
  /** Interrupts a parked actor: what it held in memory is gone, what it committed stays. */
  readonly crash: (actor: SimActor) => Effect.Effect<void>
  /** Every fiber still alive, interrupted without waiting (the seed is over). */
  readonly shutdown: Effect.Effect<void>
}

export const makeScheduler = (actorIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const events = yield* Queue.unbounded<Event>()
    const actors: Array<SimActor> = actorIds.map((id) => ({
      id,
      mailbox: [],
      state: "done",
      at: "",
      wake: undefined,
      fiber: undefined
    }))
    let running: SimActor | undefined

    const park: Park = (point) =>
      Effect.gen(function* () {
        const actor = running
        if (actor === undefined) return
        const wake = yield* Deferred.make<void>()
        actor.wake = wake
        actor.at = point
        actor.state = "parked"
        yield* Queue.offer(events, { actor, exit: undefined })
        yield* Deferred.await(wake)
      })

    const turnEnd = Effect.gen(function* () {
      const event = yield* Effect.timeout(Queue.take(events), TURN_LIMIT).pipe(Effect.option)
      running = undefined
      if (Option.isNone(event)) return { _tag: "Stalled" } as const
      const { actor, exit } = event.value
      if (exit === undefined) return { _tag: "Parked" } as const
      actor.fiber = undefined
      if (Exit.isSuccess(exit)) {
        actor.state = "done"
        return { _tag: "Done" } as const
      }
      actor.state = "crashed"
      return Cause.isInterruptedOnly(exit.cause)
        ? ({ _tag: "Done" } as const)
        : ({ _tag: "Defect", cause: defectText(exit.cause) } as const)
    })

    const loop = (actor: SimActor, drive: (operationId: string) => Effect.Effect<void>) =>
      Effect.gen(function* () {
        for (let next = actor.mailbox[0]; next !== undefined; next = actor.mailbox[0]) {
          yield* drive(next)
          actor.mailbox.shift()
        }
      })

    const start = (actor: SimActor, drive: (operationId: string) => Effect.Effect<void>) =>
      Effect.gen(function* () {
        running = actor
        actor.state = "parked"
        actor.fiber = yield* Effect.forkDaemon(
          loop(actor, drive).pipe(Effect.onExit((exit) => Queue.offer(events, { actor, exit })))
        )
        return yield* turnEnd
      })

    const resume = (actor: SimActor) =>
      Effect.gen(function* () {
        const wake = actor.wake
        if (wake === undefined) return yield* Effect.dieMessage(`actor ${actor.id} is not parked`)
        actor.wake = undefined
        running = actor
        yield* Deferred.succeed(wake, undefined)
        return yield* turnEnd
      })

    const crash = (actor: SimActor) =>
      Effect.gen(function* () {
        const fiber = actor.fiber
        actor.wake = undefined
        if (fiber === undefined) return
        yield* Fiber.interrupt(fiber)
        yield* Queue.take(events)
        actor.fiber = undefined
        actor.state = "crashed"
      })

    const shutdown = Effect.forEach(actors, (actor) =>
      actor.fiber === undefined ? Effect.void : Fiber.interruptFork(actor.fiber)
    ).pipe(Effect.asVoid)

    const byId = new Map(actors.map((a) => [a.id, a]))
    const actor = (id: string) => {
      const found = byId.get(id)
      if (found === undefined) throw new Error(`no simulated actor ${id}`)
      return found
    }
    return { park, actors, actor, start, resume, crash, shutdown } satisfies Scheduler
  })
