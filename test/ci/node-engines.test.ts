import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import semver from "semver"

/**
 * "Node.js 20 is all you need" holds package by package: the lowest Node that package.json's `engines` names
 * satisfies the `engines` of every package the lock file installs, so `npm ci` prints no EBADENGINE (it
 * printed 30 when a dependency moved to Node 22) and nothing runs on a Node its authors do not support.
 */
const root = path.resolve(import.meta.dirname, "..", "..")

const Engines = Schema.Struct({ engines: Schema.optional(Schema.Struct({ node: Schema.optional(Schema.String) })) })
const Manifest = Schema.parseJson(Engines)
const Lock = Schema.parseJson(Schema.Struct({ packages: Schema.Record({ key: Schema.String, value: Engines }) }))

const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8")

describe("Node versions", () => {
  const ours = Schema.decodeUnknownSync(Manifest)(read("package.json")).engines?.node ?? ""
  const lowest = semver.minVersion(ours)

  it("package.json names the lowest Node it supports, and this one is at least that", () => {
    expect(lowest?.major).toBe(20)
    expect(semver.satisfies(process.version, ours)).toBe(true)
  })

  it("every installed package supports the lowest Node we name", () => {
    const lock = Schema.decodeUnknownSync(Lock)(read("package-lock.json"))
    const refusing = Object.entries(lock.packages).flatMap(([name, pkg]) => {
      const range = pkg.engines?.node
      return range === undefined || lowest === null || semver.satisfies(lowest, range)
        ? []
        : [`${name.replace(/^.*node_modules\//, "")} wants Node ${range}`]
    })
    expect(refusing).toEqual([])
  })
})
