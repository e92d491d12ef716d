import { afterAll } from "vitest"

/**
 * Runs before each test file (vitest.config.ts `setupFiles`). Test files share a worker process one after
 * another (`isolate: false`), so what a file sets in `process.env` would be the environment of the files
 * after it; each file's environment is put back as the file found it once it ends. Tests give a service its
 * settings as configuration (`TestAppLive`'s `env`, `startService`'s `env`), not in `process.env`
 * (`test/ci/shared-worker.test.ts`).
 */
const found = { ...process.env }

afterAll(() => {
  for (const key of Object.keys(process.env)) if (!(key in found)) Reflect.deleteProperty(process.env, key)
  Object.assign(process.env, found)
})
