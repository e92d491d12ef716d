import chromium from "@sparticuz/chromium"
import { Effect, type Scope } from "effect"
import { type Browser, chromium as playwright } from "playwright-core"

/**
 * A real headless Chromium for the page tests: `@sparticuz/chromium` ships the browser inside its npm
 * package (nothing downloaded, works offline), `playwright-core` drives it. `--single-process` is dropped:
 * it crashes as soon as a second browser context opens (KNOWN-GROUND.md). Closed with its scope.
 */
export const launchBrowser: Effect.Effect<Browser, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () =>
    playwright.launch({
      executablePath: await chromium.executablePath(),
      args: chromium.args.filter((arg) => arg !== "--single-process"),
      headless: true
    })
  ),
  (browser) => Effect.promise(() => browser.close())
)
