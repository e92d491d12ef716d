import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort } from "../src/database/embedded-postgres.js"
import { withLifeline } from "../src/processes/child-process.js"
import { signFacetWebhook } from "./src/webhooks.js"

/**
 * The webhooks guide's receiver without the kit, run as written (docs/guides/webhooks.md): only its
 * database, `creditUser` and `fulfil` are stand-ins. It acts once per event, whatever the unsigned headers
 * say, and refuses a signed body older than the service's retries.
 */
const root = path.resolve(import.meta.dirname, "..")
const SECRET = "whsec_guide_test"

const plainReceiver = () => {
  const guide = fs.readFileSync(path.join(root, "docs/guides/webhooks.md"), "utf8")
  const section = guide.slice(guide.indexOf("## A receiver in plain Node, without the kit"))
  const block = /```js\n([\s\S]*?)```/.exec(section)?.[1]
  if (block === undefined) throw new Error("the guide has no plain receiver")
  return block
}

/** In-memory stand-ins: the two key tables, and what the receiver did, one line each on stdout. */
const STANDINS = `
const tables = { facet_events: new Set(), fulfilled_orders: new Set() }
const tx = { query: async (sql, [value]) => {
  const table = tables[/INSERT INTO (\\w+)/.exec(sql)[1]]
  const rowCount = table.has(value) ? 0 : 1
  table.add(value)
  return { rowCount }
} }
const db = { transaction: async (work) => work(tx) }
const creditUser = async (_tx, body) => console.log("credit " + body.amount)
const fulfil = async (_tx, order) => console.log("fulfil " + order.order_id)
`

const deposit = (createdAt: Date, amount: string) =>
  JSON.stringify({ event: "wallet.deposit.confirmed", amount, created_at: createdAt.toISOString() })

describe("the webhooks guide's plain receiver", () => {
  it.live(
    "acts once per signed body whatever its headers, refuses a stale or unsigned one",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const script = `${STANDINS}\n${plainReceiver().replace(".listen(3000)", `.listen(${port}, () => console.log("up"))`)}`
        // a lifeline: the receiver dies with this process, even on a SIGKILL of it alone
        const run = withLifeline(process.execPath, ["--input-type=module", "-e", script], "TERM")
        const child = spawn(run.command, run.args, {
          env: { ...process.env, FACET_WEBHOOK_SECRET: SECRET },
          stdio: ["ignore", "pipe", "inherit"]
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill()))
        let printed = ""
        child.stdout.on("data", (chunk: Buffer) => (printed += chunk.toString("utf8")))
        while (!printed.includes("up")) yield* Effect.sleep("50 millis")

        const post = (body: string, headers: Record<string, string>) =>
          Effect.promise(() =>
            fetch(`http://127.0.0.1:${port}/`, { method: "POST", body, headers }).then((res) => res.status)
          )
        const signed = (body: string, key: string) => ({
          "x-facet-signature": signFacetWebhook(body, SECRET),
          "x-facet-event": "wallet.deposit.confirmed",
          "x-facet-idempotency-key": key
        })
        const fresh = deposit(new Date(), "12.5")
        const statuses = [
          yield* post(fresh, signed(fresh, "k1")),
          // the same signed bytes under another idempotency header: a replay, not a new deposit
          yield* post(fresh, signed(fresh, "k2")),
          yield* post(fresh, { ...signed(fresh, "k1"), "x-facet-signature": "00".repeat(32) })
        ]
        const stale = deposit(new Date(Date.now() - 26 * 3600 * 1000), "99")
        statuses.push(yield* post(stale, signed(stale, "k3")))
        expect(statuses).toEqual([204, 204, 400, 400])
        expect(printed.trim().split("\n")).toEqual(["up", "credit 12.5"])
      }).pipe(Effect.scoped),
    30_000
  )
})
