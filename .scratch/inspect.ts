import { Effect, Redacted } from "effect"
import pg from "pg"
import { startEmbeddedPostgres } from "/work/main/src/database/embedded-postgres.js"
const dir = process.argv[2] ?? ""
const queries = process.argv.slice(3)
Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const db = yield* startEmbeddedPostgres({ dataDir: dir })
  yield* Effect.promise(async () => {
    const client = new pg.Client({ connectionString: Redacted.value(db.url) })
    await client.connect()
    for (const q of queries) { const r = await client.query(q); console.log(JSON.stringify(r.rows)) }
    await client.end()
  })
}))).catch((e) => { console.error(e); process.exit(1) })
