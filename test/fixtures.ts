import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/**
 * Recorded mainnet responses (test/recorded/mainnet, copied from the team's shared fixtures with their
 * PROVENANCE.md): inside the checkout, so a clone anywhere runs the decoding tests.
 */
export const fixturesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "recorded/mainnet")

export const readFixture = (relative: string): string => fs.readFileSync(path.join(fixturesDir, relative), "utf8")

/** JSON.parse that keeps integers beyond 2^53 exact, as strings. */
export const parseExact = (text: string): unknown => JSON.parse(text.replace(/(:\s*)(\d{16,})(\s*[,}\]])/g, '$1"$2"$3'))

export const readJsonLines = (relative: string): Array<unknown> =>
  readFixture(relative)
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map(parseExact)
