import { Effect, Layer } from "effect"
import { AssetCatalog } from "./assets/asset-catalog.js"
import { DatabaseLive } from "./database/database.js"
import { runMigrations } from "./database/migrator.js"
import { ApiKeys } from "./merchants/api-keys.js"
import { Onboarding } from "./merchants/onboarding.js"
import { Readiness } from "./readiness.js"

/**
 * The composition root: every service and the order they start in. The database comes up (embedded or
 * DATABASE_URL) and is migrated before any service or the HTTP server is built.
 */
const MigrationsLive = Layer.effectDiscard(
  Effect.gen(function*() {
    yield* runMigrations()
    yield* Effect.flatMap(Readiness, (readiness) => readiness.mark("migrations", "ok"))
  })
)

/** Everything but the HTTP server; needs `AppConfig`. */
export const CoreLive = Layer.mergeAll(Onboarding.Default, AssetCatalog.Default, ApiKeys.Default).pipe(
  Layer.provideMerge(MigrationsLive),
  Layer.provideMerge(Readiness.Default),
  Layer.provideMerge(DatabaseLive)
)
