import { Effect, Exit, Redacted, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { reapStaleClusters, startEmbeddedPostgres } from "../src/database/embedded-postgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the throw-away PostgreSQL this test run started. */
    readonly databaseUrl: string
  }
}

const PREFIX = "facet-test-pg-"

/**
 * One real PostgreSQL for the whole run, on a free port with a throw-away data dir; each test file
 * creates its own database in it (see test/database.ts). Clusters left by a killed run are reaped first.
 */
export default async function setup(project: TestProject) {
  await Effect.runPromise(reapStaleClusters(os.tmpdir(), PREFIX))
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), PREFIX))
  const scope = Effect.runSync(Scope.make())
  const pg = await Effect.runPromise(startEmbeddedPostgres({ dataDir, throwaway: true }).pipe(Scope.extend(scope)))
  project.provide("databaseUrl", Redacted.value(pg.url))
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
