import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { asRecord } from "../../test/json.js"
import { isAlive } from "../processes/child-process.js"
import { type EmbeddedPostgres, reapStaleClusters, startEmbeddedPostgres } from "./embedded-postgres.js"

const query = (pg: EmbeddedPostgres, text: string) =>
  Effect.scoped(
    Effect.flatMap(PgClient.make({ url: pg.url, maxConnections: 1 }), (sql) => sql.unsafe<{ v: string }>(text))
  ).pipe(Effect.provide(Reactivity.layer))

// a stopped child may stay a zombie until node reaps it: that is stopped, not alive
const alive = isAlive

const tempDataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "facet-test-pg-embedded-"))

describe("embedded PostgreSQL", () => {
  it.effect(
    "a reaper leaves a cluster another run is still initialising, and removes one a killed run left long ago",
    () =>
      Effect.gen(function* () {
        const parent = fs.mkdtempSync(path.join(os.tmpdir(), "facet-reap-"))
        const initialising = fs.mkdtempSync(path.join(parent, "facet-test-pg-"))
        const left = fs.mkdtempSync(path.join(parent, "facet-test-pg-"))
        const anHourAgo = new Date(Date.now() - 3_600_000)
        fs.utimesSync(left, anHourAgo, anHourAgo)
        yield* reapStaleClusters(parent, "facet-test-pg-")
        expect([fs.existsSync(initialising), fs.existsSync(left)]).toEqual([true, false])
        fs.rmSync(parent, { recursive: true, force: true })
      })
  )

  it.live("keeps its data across a restart and stops cleanly with its scope", () =>
    Effect.gen(function* () {
      const dataDir = tempDataDir()
      const first = yield* Effect.scoped(
        Effect.gen(function* () {
          const pg = yield* startEmbeddedPostgres({ dataDir })
          yield* query(pg, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('survives')")
          return pg
        })
      )
      expect(alive(first.pid)).toBe(false)
      const rows = yield* Effect.scoped(
        Effect.flatMap(startEmbeddedPostgres({ dataDir }), (pg) => query(pg, "SELECT v FROM kept"))
      )
      expect(rows.map((r) => r.v)).toEqual(["survives"])
      fs.rmSync(dataDir, { recursive: true, force: true })
    })
  )

  it.live("stops an orphan left by a killed parent before starting again", () =>
    Effect.gen(function* () {
      const dataDir = tempDataDir()
      const leaked = yield* Scope.make()
      const orphan = yield* startEmbeddedPostgres({ dataDir }).pipe(Scope.extend(leaked))
      // pretend the parent was SIGKILLed: its pid in the owner record is dead, its postgres still runs
      const deadPid = spawnSync("true").pid
      const ownerFile = path.join(dataDir, "postgres.owner.json")
      fs.writeFileSync(
        ownerFile,
        JSON.stringify({ ...asRecord(JSON.parse(fs.readFileSync(ownerFile, "utf8"))), servicePid: deadPid })
      )
      expect(alive(orphan.pid)).toBe(true)

      const rows = yield* Effect.scoped(
        Effect.flatMap(startEmbeddedPostgres({ dataDir }), (pg) => query(pg, "SELECT 'up' AS v"))
      )
      expect(rows[0]?.v).toBe("up")
      expect(alive(orphan.pid)).toBe(false)
      yield* Scope.close(leaked, Exit.void)
      fs.rmSync(dataDir, { recursive: true, force: true })
    })
  )

  it.live("refuses a data directory that a running service owns", () =>
    Effect.gen(function* () {
      const dataDir = tempDataDir()
      const scope = yield* Scope.make()
      yield* startEmbeddedPostgres({ dataDir }).pipe(Scope.extend(scope))
      const other = spawn("sleep", ["30"])
      const ownerFile = path.join(dataDir, "postgres.owner.json")
      fs.writeFileSync(
        ownerFile,
        JSON.stringify({ ...asRecord(JSON.parse(fs.readFileSync(ownerFile, "utf8"))), servicePid: other.pid })
      )
      const refused = yield* Effect.flip(Effect.scoped(startEmbeddedPostgres({ dataDir })))
      expect(refused.message).toMatch(/in use by another running service/)
      other.kill()
      yield* Scope.close(scope, Exit.void)
      fs.rmSync(dataDir, { recursive: true, force: true })
    })
  )
})
