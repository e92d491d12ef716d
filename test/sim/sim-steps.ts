import { Effect } from "effect"
import type { Random } from "../faults/seeded-random.js"
import type { Adversary } from "./adversary.js"
import { endViolations, isFinal, makeStepWatch, readOperations } from "./invariants.js"
import type { Scheduler, SimActor, TurnEnd } from "./scheduler.js"
import type { SimChain } from "./sim-chain.js"
import type { SeedReport, Violation } from "./simulation.js"
import type { SimChainId } from "./sim-tx.js"
import { BASE_PRICE, refillGasWallets, type Workload } from "./workload.js"

/** Everything one seed's steps act on. */
export interface StepWorld {
  readonly seed: number
  readonly workload: Workload
  readonly chains: ReadonlyMap<SimChainId, SimChain>
  readonly adversary: Adversary
  readonly scheduler: Scheduler
  readonly healAt: number
  /** How likely a parked actor is crashed rather than resumed (relative to a resume's 1). */
  readonly crashWeight: number
  readonly random: Random
  readonly keepTrace: boolean
  /** Whether a statement since the last call wrote to the database (and forget it). */
  readonly wrote: () => boolean
}

/** Steps after the healing within which every operation must be final. */
export const STEPS_AFTER_HEALING = 1_500
/** After the healing, this many steps without a status changing or a transaction landing end the run early. */
const STEPS_WITHOUT_PROGRESS = 400

type Action =
  | { readonly _tag: "Resume"; readonly actor: SimActor }
  | { readonly _tag: "Crash"; readonly actor: SimActor }
  | { readonly _tag: "CrashAll" }
  | { readonly _tag: "Restart"; readonly actor: SimActor }
  | { readonly _tag: "ResumePass" }
  | { readonly _tag: "Mine"; readonly chain: SimChain }
  | { readonly _tag: "Gas"; readonly chain: SimChain; readonly factor: bigint }

/** The scheduler's choices this step, each with its weight. */
const choices = (world: StepWorld): ReadonlyArray<readonly [Action, number]> => {
  const healed = world.adversary.healed()
  const actors = world.scheduler.actors
  const parked = actors.filter((a) => a.state === "parked")
  const crashed = actors.filter((a) => a.state === "crashed")
  const chains = [...world.chains.values()]
  return [
    ...parked.map((actor): readonly [Action, number] => [{ _tag: "Resume", actor }, 1]),
    ...chains.map((chain): readonly [Action, number] => [{ _tag: "Mine", chain }, 0.3]),
    ...crashed.map((actor): readonly [Action, number] => [{ _tag: "Restart", actor }, healed ? 2 : 0.2]),
    [{ _tag: "ResumePass" }, healed ? 0.3 : 0.05],
    ...(healed
      ? []
      : [
          ...parked.map((actor): readonly [Action, number] => [{ _tag: "Crash", actor }, world.crashWeight / 10]),
          [{ _tag: "CrashAll" }, world.crashWeight / 40] as const,
          ...chains.flatMap(
            (chain): ReadonlyArray<readonly [Action, number]> => [
              [{ _tag: "Gas", chain, factor: world.random.pick([2n, 3n, 8n]) }, 0.02],
              [{ _tag: "Gas", chain, factor: 1n }, 0.02]
            ]
          )
        ])
  ]
}

const pickWeighted = (random: Random, options: ReadonlyArray<readonly [Action, number]>): Action => {
  const total = options.reduce((sum, [, w]) => sum + w, 0)
  let roll = random.next() * total
  for (const [action, weight] of options) {
    roll -= weight
    if (roll < 0) return action
  }
  const last = options[options.length - 1]
  if (last === undefined) throw new Error("no choice")
  return last[0]
}

/**
 * The seed's steps: each one action of the scheduler (a parked actor continues, a chain mines, an actor or
 * the whole custody process crashes, a crashed actor restarts from the database, the resume pass hands over
 * what nobody drives, a gas price jumps), then the invariants. At `healAt` the adversary heals; the run ends
 * once every operation is final, or STEPS_AFTER_HEALING steps later.
 */
export const runSteps = (world: StepWorld, drive: (operationId: string) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const trace: Array<string> = []
    const violations: Array<Violation> = []
    const seen = new Set<string>()
    let step = 0
    /** Every line when tracing; otherwise the 40 before the first violation and 10 after it. */
    let after = -1
    const note = (line: string) => {
      if (after >= 10) return
      trace.push(`${step} ${line}`)
      if (after >= 0) after += 1
      else if (!world.keepTrace && trace.length > 40) trace.shift()
    }
    const violate = (what: string) => {
      if (seen.has(what)) return
      seen.add(what)
      violations.push({ seed: world.seed, step, what })
      note(`VIOLATION ${what}`)
      if (after < 0 && !world.keepTrace) after = 0
    }
    const short = (id: string) => id.replace(/^sim\d+s\d+_/, "")
    const ids = world.workload.operations.map((o) => o.row.id)
    const watch = makeStepWatch(ids, world.chains, world.wrote)
    const actorOf = (id: string) => world.workload.operations.find((o) => o.row.id === id)?.row.wallet_id ?? ""

    const afterTurn = (actor: SimActor, end: TurnEnd) => {
      if (end._tag === "Defect") violate(`driver defect in ${short(actor.id)}: ${end.cause.split("\n")[0] ?? ""}`)
      if (end._tag === "Stalled") violate(`stalled: ${short(actor.id)} neither parked nor ended (a lock wait?)`)
      return end._tag !== "Stalled"
    }

    const start = (actor: SimActor) =>
      Effect.gen(function* () {
        if (actor.mailbox.length === 0) {
          actor.state = "done"
          return true
        }
        note(`start ${short(actor.id)} [${actor.mailbox.map(short).join(" ")}]`)
        return afterTurn(actor, yield* world.scheduler.start(actor, drive))
      })

    /** Operations not final and in no mailbox are handed to their actor again (as the service's resume pass). */
    const resumePass = Effect.gen(function* () {
      for (const state of yield* readOperations(ids)) {
        const actor = world.scheduler.actor(actorOf(state.id))
        if (!isFinal(state) && !actor.mailbox.includes(state.id)) actor.mailbox.push(state.id)
      }
      for (const actor of world.scheduler.actors) if (actor.state === "done" && !(yield* start(actor))) return false
      return true
    })

    const perform = (action: Action) =>
      Effect.gen(function* () {
        switch (action._tag) {
          case "Resume":
            note(`${short(action.actor.id)} continues at ${short(action.actor.at)}`)
            return afterTurn(action.actor, yield* world.scheduler.resume(action.actor))
          case "Crash":
            world.adversary.count(`crash at ${action.actor.at.replace(/ sim\d+s\d+_op\d+$/, "")}`)
            note(`crash ${short(action.actor.id)} at ${short(action.actor.at)}`)
            yield* world.scheduler.crash(action.actor)
            return true
          case "CrashAll":
            world.adversary.count("crash of the custody process (every actor)")
            note("crash of the custody process")
            for (const actor of world.scheduler.actors)
              if (actor.state === "parked") yield* world.scheduler.crash(actor)
            return true
          case "Restart":
            note(`restart ${short(action.actor.id)}`)
            return yield* start(action.actor)
          case "ResumePass":
            note("resume pass")
            return yield* resumePass
          case "Mine": {
            const landed = action.chain.mine()
            const names = landed.map((l) => `${l.hash.slice(0, 8)}${l.success ? "" : " (failed)"}`)
            note(
              `${action.chain.id} mines block ${action.chain.head()}${names.length > 0 ? `: ${names.join(", ")}` : ""}`
            )
            for (const what of yield* watch.afterBlock(
              action.chain,
              landed.map((l) => l.hash)
            ))
              violate(what)
            return true
          }
          case "Gas": {
            const base = BASE_PRICE[action.chain.id]
            world.adversary.count(`${action.chain.id} gas price ×${action.factor}`)
            action.chain.setPrices(base * action.factor, base * action.factor)
            note(`${action.chain.id} gas price ×${action.factor}`)
            return true
          }
        }
      })

    const heal = () => {
      world.adversary.heal()
      for (const chain of world.chains.values()) chain.setPrices(BASE_PRICE[chain.id], BASE_PRICE[chain.id])
      if (world.workload.gasShort) refillGasWallets(world.workload, world.chains)
      note(
        `the network heals: every backend honest and current, no more crashes${world.workload.gasShort ? "; the gas wallet refilled" : ""}`
      )
    }

    // the operations handed over at the start; the others arrive with a later resume pass
    for (const planned of world.workload.operations)
      if (planned.handedAtStart) world.scheduler.actor(planned.row.wallet_id).mailbox.push(planned.row.id)
    for (const actor of world.scheduler.actors) yield* start(actor)

    const limit = world.healAt + STEPS_AFTER_HEALING
    let lastProgress = 0
    for (step = 1; step <= limit; step++) {
      if (step === world.healAt) heal()
      const action = pickWeighted(world.random, choices(world))
      if (!(yield* perform(action))) break
      // only a driver's turn writes to the database (a crash interrupts a parked fiber)
      if (action._tag === "Resume" || action._tag === "Restart" || action._tag === "ResumePass")
        for (const what of yield* watch.afterTurn) violate(what)
      if (watch.moved()) lastProgress = step
      if (
        step > world.healAt &&
        (watch.allFinal() || step - Math.max(lastProgress, world.healAt) > STEPS_WITHOUT_PROGRESS)
      )
        break
    }
    if (!world.adversary.healed()) heal()
    const states = yield* readOperations(ids)
    for (const what of yield* endViolations(states, world.chains, world.workload.merchantId)) violate(what)

    const outcomes = new Map<string, number>()
    for (const state of states) {
      const kind = world.workload.operations.find((o) => o.row.id === state.id)?.kind ?? state.type
      outcomes.set(`${kind} ${state.status}`, (outcomes.get(`${kind} ${state.status}`) ?? 0) + 1)
    }
    return {
      seed: world.seed,
      steps: step,
      healedAt: world.healAt,
      operations: ids.length,
      violations,
      trace,
      moves: world.adversary.counts,
      outcomes
    } satisfies SeedReport
  })
