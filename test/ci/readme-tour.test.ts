import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { processWorkDir, startService } from "../service-process.js"

/**
 * The README's short tour, run as written against `npm start` (the service as a process on its embedded
 * PostgreSQL and devnets): only the address (`localhost:8080`) and the data directory (`.facet/`) are the
 * test's own. It must end on the line it promises — the order PAID — and leave nothing in the repository.
 */
const root = path.resolve(import.meta.dirname, "..", "..")
const workDir = processWorkDir("facet-tour-")

const tourOf = (readme: string) => {
  const section = readme.slice(readme.indexOf("## A short tour"))
  const block = /```sh\n([\s\S]*?)```/.exec(section)
  if (block?.[1] === undefined) throw new Error("the README has no tour block")
  return block[1]
}

const runTour = (script: string, env: Record<string, string>) =>
  Effect.async<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resume) => {
    // `timeout` ends a tour stuck in its wait loop (an order that never gets PAID) with the output so far
    const child = execFile(
      "timeout",
      ["120", "bash", "-euo", "pipefail", "-c", script],
      { cwd: root, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : (child.exitCode ?? 1), stdout, stderr }))
    )
  })

describe("the README's tour", () => {
  it.scopedLive(
    "ends with the order PAID and writes only where git ignores",
    () =>
      Effect.gen(function* () {
        const dir = yield* workDir
        const dataDir = path.join(dir, "data")
        const service = yield* startService(dataDir, "tour")
        const tour = tourOf(fs.readFileSync(path.join(root, "README.md"), "utf8"))
        const script = tour
          .replaceAll("localhost:8080", service.url.replace("http://", ""))
          .replaceAll("./.facet/", `${dataDir}/`)
          .replaceAll(".facet/", `${dataDir}/`)
        expect(script).not.toContain(".facet")
        const before = fs.readdirSync(root).sort()
        const { code, stdout, stderr } = yield* runTour(script, { FACET_DATA_DIR: dataDir })
        expect({ code, output: code === 0 ? "" : `${stdout}${stderr}` }).toEqual({ code: 0, output: "" })
        const lines = stdout.trim().split("\n")
        expect(lines.at(-1)).toContain('"status":"PAID"')
        expect(fs.readdirSync(root).sort()).toEqual(before)
      }),
    180_000
  )
})
