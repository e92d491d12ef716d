import { Command } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { runInProcess } from "../test/cli-in-process.js"
import { eventually } from "../test/webhook-receiver.js"
import { energyCommand, type EnergyServices } from "./energy-command.js"
import { EnergyReadings } from "./energy-readings.js"

/**
 * `npm run custody -- energy` in this process: the command line parsed by the energy command mounted as
 * custody-cli.ts mounts it, its exit code as the shared runner gives it, on the services of a running
 * service (TestAppLive): its resume pass hands a stored stake to the staking wallet's actor, as the service
 * does for the real command. No process is spawned. Then what /health and /metrics show of the stake.
 */

/** `npm run custody -- energy ...args`: the exit code, and what it printed (stdout without log lines; stderr). */
const cli = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const services = Layer.succeedContext(yield* Effect.context<EnergyServices>())
    const custody = Command.make("custody").pipe(Command.withSubcommands([energyCommand(services)]))
    return yield* runInProcess(custody, "custody", ["energy", ...args])
  })

/** What a command printed on stdout, as JSON. */
const printed = (stdout: string) => asRecord(JSON.parse(stdout))

/** The operator's stakes and unstakes stored so far. */
const stakeOperations = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM custody_operations WHERE type IN ('energy_stake', 'energy_unstake')`,
    (rows) => rows[0]?.n ?? 0
  )
).pipe(Effect.orDie)

const health = Effect.flatMap(TestClient, (c) => c.request("GET", "/health"))
const metrics = Effect.map(
  Effect.flatMap(TestClient, (c) => c.request("GET", "/metrics")),
  (res) => res.text
)
/** /health's `custody.energy`, if it has one. */
const energyInHealth = Effect.map(health, (res) => asRecord(asRecord(res.body).custody).energy)

describe("npm run custody -- energy, in process", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "300 seconds" })((it) => {
    it.effect(
      "refused before anything is stored (exit 2): a malformed amount, under 1 TRX to stake, more than the wallet holds, more than the stake to unstake",
      () =>
        Effect.gen(function* () {
          for (const amount of ["abc", "0", "0.000000", "1.1234567", "1e3", "1,5", "1000000000000"]) {
            const bad = yield* cli("stake", amount)
            expect([bad.code, bad.stderr], amount).toEqual([
              2,
              expect.stringContaining(`AMOUNT ${amount}: expected TRX`)
            ])
          }
          const tiny = yield* cli("stake", "0.5")
          expect([tiny.code, tiny.stderr]).toEqual([2, expect.stringContaining("TRON stakes at least 1 TRX")])
          const rich = yield* cli("stake", "999999999999")
          expect([rich.code, rich.stderr]).toEqual([
            2,
            expect.stringMatching(/stake 999999999999 TRX: the staking wallet T\w+ holds \d/)
          ])
          const nothing = yield* cli("unstake", "1")
          expect([nothing.code, nothing.stderr]).toEqual([
            2,
            expect.stringContaining("unstake 1 TRX: 0 TRX of the stake is neither lent nor reserved")
          ])
          expect(nothing.stdout).toBe("")
          expect(yield* stakeOperations).toBe(0)
          // the service read the stake in the background at its start: /health shows it without asking the node
          const shown = yield* eventually(energyInHealth, (e) => e !== undefined, 20_000)
          expect(shown).toMatchObject({ staked_trx: "0", lent_trx: "0", lent_by_custody_trx: "0", lendings: 0 })
        })
    )

    it.effect(
      "stake 1000 TRX, then unstake 400: each waits for its outcome; status, /health and /metrics show 600 staked and 400 unfreezing",
      () =>
        Effect.gen(function* () {
          const staked = yield* cli("stake", "1000")
          expect(staked.code, staked.stderr).toBe(0)
          const stake = printed(staked.stdout)
          expect(stake).toMatchObject({ type: "energy_stake", amount_trx: "1000", status: "COMPLETED" })
          expect(stake.tx_hash).toMatch(/^[0-9a-f]{64}$/)
          // what it waited for, as it changed
          expect(staked.stderr).toContain(`${stake.operation_id} stored: stake 1000 TRX; waiting up to`)
          expect(staked.stderr).toContain(`${stake.operation_id} COMPLETED`)

          const afterStake = yield* cli("status")
          expect(afterStake.code, afterStake.stderr).toBe(0)
          const status = printed(afterStake.stdout)
          expect(status).toMatchObject({ staked_trx: "1000", lent_trx: "0", lendable_trx: "1000", unfreezing: [] })
          expect(status.staking_address).toMatch(/^T\w{33}$/)
          // ~9.49 energy a day per TRX staked (the devnet's network weight is mainnet's)
          expect(Number(status.energy_per_day)).toBeGreaterThan(9_000)
          expect(Number(status.energy_per_day)).toBeLessThan(10_000)

          // too much to unstake now: refused, nothing stored
          const before = yield* stakeOperations
          const tooMuch = yield* cli("unstake", "1000.000001")
          expect([tooMuch.code, tooMuch.stderr]).toEqual([
            2,
            expect.stringContaining("1000 TRX of the stake is neither lent nor reserved")
          ])
          expect(yield* stakeOperations).toBe(before)

          const unstaked = yield* cli("unstake", "400")
          expect(unstaked.code, unstaked.stderr).toBe(0)
          expect(printed(unstaked.stdout)).toMatchObject({
            type: "energy_unstake",
            amount_trx: "400",
            status: "COMPLETED"
          })
          const afterUnstake = printed((yield* cli("status")).stdout)
          expect(afterUnstake).toMatchObject({
            staked_trx: "600",
            lendable_trx: "600",
            unfreezing: [{ amount_trx: "400" }]
          })
          const [unfreezing] = Array.isArray(afterUnstake.unfreezing) ? afterUnstake.unfreezing.map(asRecord) : []
          expect(Date.parse(String(unfreezing?.available_at))).toBeGreaterThan(Date.now())

          // /health and /metrics: the last reading (read now rather than at the next 15 s pass)
          yield* Effect.flatMap(EnergyReadings, (readings) => readings.refresh())
          const shown = asRecord(yield* energyInHealth)
          expect(shown).toMatchObject({
            staking_address: status.staking_address,
            staked_trx: "600",
            lent_trx: "0",
            lendable_trx: "600",
            lent_by_custody_trx: "0",
            lendings: 0,
            lending_in_flight_trx: "0",
            energy_per_day: expect.any(Number),
            energy_used: 0
          })
          expect(Date.now() - Date.parse(String(shown.read_at))).toBeLessThan(10_000)
          // custody's stake transactions burned only bandwidth, if anything
          expect(shown.trx_burned).toMatch(/^\d+(\.\d+)?$/)
          const text = yield* metrics
          expect(text).toContain("facet_tron_energy_staked_trx 600\n")
          expect(text).toContain("facet_tron_energy_lent_trx 0\n")
          expect(text).toContain("facet_tron_energy_lendable_trx 600\n")
          expect(text).toContain("facet_tron_energy_lent_by_custody_trx 0\n")
          expect(text).toContain("facet_tron_energy_lending_in_flight_trx 0\n")
          expect(text).toContain(`facet_tron_energy_daily_capacity ${shown.energy_per_day}\n`)
          expect(text).toContain("facet_tron_energy_used 0\n")
          expect(text).toContain(
            `# TYPE facet_tron_trx_burned_total counter\nfacet_tron_trx_burned_total ${shown.trx_burned}\n`
          )

          // --bandwidth: the staking wallet's own bandwidth, apart from the energy it lends
          const forBandwidth = yield* cli("stake", "200", "--bandwidth")
          expect(forBandwidth.code, forBandwidth.stderr).toBe(0)
          expect(printed(forBandwidth.stdout)).toMatchObject({ type: "bandwidth_stake", status: "COMPLETED" })
          const withBandwidth = printed((yield* cli("status")).stdout)
          expect(withBandwidth).toMatchObject({ staked_trx: "600", bandwidth_staked_trx: "200" })
          expect(Number(withBandwidth.bandwidth_per_day)).toBeGreaterThan(600)
          const tooMuchBandwidth = yield* cli("unstake", "201", "--bandwidth")
          expect([tooMuchBandwidth.code, tooMuchBandwidth.stderr]).toEqual([
            2,
            expect.stringContaining("200 TRX is staked for bandwidth")
          ])

          // --no-wait: stored, printed as it stands, exit 0 (the service goes on with it)
          const quick = yield* cli("stake", "1", "--no-wait")
          expect(quick.code, quick.stderr).toBe(0)
          expect(printed(quick.stdout)).toMatchObject({ type: "energy_stake", amount_trx: "1", status: "SWEEPING" })
        })
    )
  })

  layer(TestAppLive({}, { devnets: "fast" }), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect(
      "no TRON node answers: status is exit 1 saying so; a stake is stored unchecked, /health has no reading",
      () =>
        Effect.gen(function* () {
          const status = yield* cli("status")
          expect([status.code, status.stdout]).toEqual([1, ""])
          expect(status.stderr).toContain("the TRON node did not answer")
          const stored = yield* cli("stake", "10", "--no-wait")
          expect(stored.code, stored.stderr).toBe(0)
          expect(stored.stderr).toContain("stored unchecked")
          expect(printed(stored.stdout)).toMatchObject({ type: "energy_stake", amount_trx: "10" })
          yield* Effect.flatMap(EnergyReadings, (readings) => Effect.either(readings.refresh()))
          expect(yield* energyInHealth).toBeUndefined()
        })
    )
  })
})
