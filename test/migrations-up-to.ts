import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { defaultMigrationsDir } from "../src/database/migrator.js"
import { tempDir } from "./temp-dir.js"

/** The migrations up to and including `last`, copied into a directory of their own: a database of an older shape. */
export const migrationsUpTo = (last: number, prefix = "facet-migrations-") =>
  Effect.tap(tempDir(prefix), (dir) =>
    Effect.sync(() => {
      for (const file of fs.readdirSync(defaultMigrationsDir).filter((f) => f.endsWith(".sql") && Number(f.slice(0, 4)) <= last)) {
        fs.copyFileSync(path.join(defaultMigrationsDir, file), path.join(dir, file))
      }
    }))
