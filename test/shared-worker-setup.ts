import { it, makeMethods } from "@effect/vitest"
import { afterAll } from "vitest"

/**
 * Runs before each test file (vitest.config.ts `setupFiles`). Test files share a worker process one after
 * another (`isolate: false`), so what a file sets in `process.env` would be the environment of the files
 * after it; each file's environment is put back as the file found it once it ends. Tests give a service its
 * settings as configuration (`TestAppLive`'s `env`, `startService`'s `env`), not in `process.env`
 * (`test/ci/shared-worker.test.ts`).
 */
const found = { ...process.env }

/**
 * `@effect/vitest` 0.30's `layer()` rebinds the shared `it` (vitest's own object): after it, `it.effect`,
 * `it.scoped`, `it.layer` and `it.prop` run in that layer's runtime (its log level, its loggers, no TestClock)
 * — in the next file of the fork too, once the layer is closed. Each file starts with them as a fresh process
 * has them. (effect-smol's @effect/vitest wraps `it` instead: Effect-TS/effect-smol#2177.)
 */
makeMethods(it)

afterAll(() => {
  for (const key of Object.keys(process.env)) if (!(key in found)) Reflect.deleteProperty(process.env, key)
  Object.assign(process.env, found)
})
