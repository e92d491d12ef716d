import "../test/fast-devnets.js"

import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import type { Page } from "playwright-core"
import { totpCode } from "../src/console/totp.js"
import { launchBrowser } from "../test/browser.js"
import { fundedAddress, untilFinished } from "../test/custody-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { eventually } from "../test/webhook-receiver.js"

const PASSWORD = "Correct-Horse-Battery-9"

/** With FACET_SCREENSHOTS_DIR set (e.g. `docs`), the pages are saved there for the README. */
const screenshot = (page: Page, name: string) => {
  const dir = process.env.FACET_SCREENSHOTS_DIR
  return dir === undefined ? Effect.void : Effect.promise(() => page.screenshot({ path: path.join(dir, name), fullPage: true }))
}

const run = <A>(f: () => Promise<A>) => Effect.promise(f)

describe("merchant console in a real browser", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.scoped("the owner sets up once, logs out and in, and approves a withdrawal with the password; CSRF and ownership hold", () =>
      Effect.gen(function*() {
        const client = yield* TestClient
        const browser = yield* launchBrowser
        const applied = yield* client.request("POST", "/v1/ai/merchant-apply", {
          json: { project_name: `Console Shop ${Date.now()}`, business_type: "shop", use_case: "payouts", agree_terms: true, contact_email: "owner@console.example", integration_mode: "exchange_wallet" }
        })
        const body = asRecord(applied.body)
        const apiKey = String(asRecord(body.env).FACET_API_KEY)
        const setupUrl = new URL(String(asRecord(body.merchant_console).token_login_url))
        const local = (u: URL) => `${client.url}${u.pathname}${u.search}`
        const context = yield* run(() => browser.newContext())
        const page = yield* run(() => context.newPage())

        // setup: a weak password is refused, a good one binds the account and signs in
        yield* run(() => page.goto(local(setupUrl)))
        yield* run(() => page.fill("input[name=password]", "password12345"))
        yield* run(() => page.click("button[type=submit]"))
        expect(yield* run(() => page.textContent(".notice"))).toContain("too easy")
        const loginName = yield* run(() => page.inputValue("input[name=login_name]"))
        yield* run(() => page.fill("input[name=password]", PASSWORD))
        yield* run(() => page.click("button[type=submit]"))
        yield* run(() => page.waitForURL(/\/console\/withdrawals$/))
        const cookie = (yield* run(() => context.cookies())).find((c) => c.name === "facet_console")
        expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/console" })
        expect(yield* run(() => page.content())).not.toContain(apiKey)

        // log out; the setup link is dead now; log in again
        yield* run(() => page.click("nav button"))
        yield* run(() => page.waitForURL(/\/console\/login$/))
        yield* run(() => page.goto(local(setupUrl)))
        expect(yield* run(() => page.textContent("main"))).toContain("already used")
        yield* run(() => page.goto(`${client.url}/console/login`))
        yield* run(() => page.fill("input[name=login_name]", loginName))
        yield* run(() => page.fill("input[name=password]", "wrong-password-123"))
        yield* run(() => page.click("button[type=submit]"))
        expect(yield* run(() => page.textContent(".notice"))).toContain("Wrong login name or password")
        yield* run(() => page.fill("input[name=login_name]", loginName))
        yield* run(() => page.fill("input[name=password]", PASSWORD))
        yield* run(() => page.click("button[type=submit]"))
        yield* run(() => page.waitForURL(/\/console\/withdrawals$/))

        // money in, collected, a withdrawal requested by the backend over the API
        const receive = yield* fundedAddress(apiKey, "TRC20", "USDT", "500")
        // the owner finds the address by its user and sweeps it from the console
        yield* run(() => page.goto(`${client.url}/console/deposit-addresses`))
        expect(yield* run(() => page.textContent("table"))).toContain(receive.address)
        yield* run(() => page.goto(`${client.url}/console/collect?asset=TRC20-USDT`))
        yield* run(() => page.click(`#wallet-${receive.walletId} button`))
        const started = (yield* run(() => page.textContent(".notice"))) ?? ""
        expect(started).toMatch(/Sweep op_\w+ started: 500 USDT/)
        const operationId = /op_\w+/.exec(started)?.[0] ?? ""
        expect((yield* untilFinished(apiKey, "TRC20-USDT", operationId)).status).toBe("COMPLETED")
        const created = asRecord((yield* client.request("POST", "/v1/withdrawals", {
          apiKey, json: { chain: "TRC20", currency: "USDT", amount: "120", to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" }
        })).body)
        const id = String(created.withdrawal_id)
        yield* run(() => page.goto(`${client.url}/console/balances`))
        expect(yield* run(() => page.textContent("table"))).toContain("380")
        yield* screenshot(page, "console-balances.png")
        yield* run(() => page.goto(`${client.url}/console/withdrawals`))
        expect(yield* run(() => page.getAttribute(`#${id}`, "data-status"))).toBe("PENDING")
        yield* screenshot(page, "console-withdrawals.png")

        // a forged POST (no CSRF token) changes nothing; another merchant's (or no) withdrawal is not found
        const forged = yield* run(() => page.request.post(`${client.url}/console/withdrawals/${id}/cancel`, { form: { reason: "forged" } }))
        expect(forged.status()).toBe(403)
        const csrf = yield* run(() => page.inputValue(`#${id} form.cancel input[name=csrf]`))
        const foreign = yield* run(() => page.request.post(`${client.url}/console/withdrawals/wdr_of_someone_else/cancel`, { form: { csrf } }))
        expect(foreign.status()).toBe(404)

        // approve: the wrong password approves nothing, the right one does
        yield* run(() => page.fill(`#${id} form.approve input[name=password]`, "not-my-password-1"))
        yield* run(() => page.click(`#${id} form.approve button`))
        expect(yield* run(() => page.textContent(".notice"))).toContain("nothing was approved")
        expect(yield* run(() => page.getAttribute(`#${id}`, "data-status"))).toBe("PENDING")
        yield* run(() => page.fill(`#${id} form.approve input[name=password]`, PASSWORD))
        yield* run(() => page.click(`#${id} form.approve button`))
        expect(yield* run(() => page.getAttribute(`#${id}`, "data-status"))).toBe("APPROVED")
        const done = yield* eventually(client.request("GET", `/v1/withdrawals/${id}`, { apiKey }), (r) => asRecord(r.body).status === "COMPLETED", 60_000)
        expect(asRecord(done.body).status).toBe("COMPLETED")
        yield* run(() => context.close())
      }))

    it.scoped("the owner manages keys (a narrower one, shown once, revoked), the webhook secret, assets, and finds transactions", () =>
      Effect.gen(function*() {
        const client = yield* TestClient
        const browser = yield* launchBrowser
        const applied = asRecord((yield* client.request("POST", "/v1/ai/merchant-apply", {
          json: { project_name: `Keys Shop ${Date.now()}`, business_type: "shop", use_case: "payments", agree_terms: true, contact_email: "keys@console.example" }
        })).body)
        const apiKey = String(asRecord(applied.env).FACET_API_KEY)
        const setupUrl = new URL(String(asRecord(applied.merchant_console).token_login_url))
        const page = yield* run(() => browser.newPage())
        yield* run(() => page.goto(`${client.url}${setupUrl.pathname}${setupUrl.search}`))
        yield* run(() => page.fill("input[name=password]", PASSWORD))
        yield* run(() => page.click("button[type=submit]"))
        yield* run(() => page.waitForURL(/\/console\/withdrawals$/))

        // a key without the wallet scope: shown once, works for reads, cannot sweep, then revoked
        yield* run(() => page.goto(`${client.url}/console/keys`))
        yield* run(() => page.fill("form.new-key input[name=label]", "reporting"))
        yield* run(() => page.click("form.new-key button"))
        const narrow = (yield* run(() => page.textContent("#shown-once"))) ?? ""
        expect(narrow).toMatch(/^fk_live_/)
        yield* screenshot(page, "console-keys.png")
        expect((yield* client.request("GET", "/v1/wallet-portfolio", { apiKey: narrow })).status).toBe(200)
        expect((yield* client.request("POST", "/v1/wallet-assets/TRC20-USDT/sweep", { apiKey: narrow, json: { from_wallet_id: "wal_x" } })).status).toBe(403)
        yield* run(() => page.goto(`${client.url}/console/keys`))
        expect(yield* run(() => page.textContent("main"))).not.toContain(narrow)
        yield* run(() => page.locator("tr", { hasText: "reporting" }).locator("button").click())
        expect(yield* run(() => page.textContent(".notice"))).toContain("revoked")
        expect((yield* client.request("GET", "/v1/wallet-portfolio", { apiKey: narrow })).status).toBe(401)
        expect((yield* client.request("GET", "/v1/wallet-portfolio", { apiKey })).status).toBe(200)
        yield* run(() => page.click("form.rotate button"))
        expect(yield* run(() => page.textContent("#shown-once"))).toMatch(/^whsec_/)

        // assets: a custom asset enabled from the console is enabled for the API too
        yield* run(() => page.goto(`${client.url}/console/assets`))
        yield* run(() => page.click("#asset-BEP20-VELNX button"))
        expect(yield* run(() => page.textContent(".notice"))).toContain("BEP20-VELNX is enabled")
        const policies = asRecord((yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey })).body).items
        expect((Array.isArray(policies) ? policies.map(asRecord) : []).find((p) => p.asset_key === "BEP20-VELNX")?.merchant_enabled).toBe(true)

        // orders and transactions are there to look at and search
        const order = asRecord((yield* client.request("POST", "/v1/orders", { apiKey, json: { amount: "5", currency: "USDT", chain: "TRC20", out_trade_no: "inv-42" } })).body)
        yield* run(() => page.goto(`${client.url}/console/orders`))
        expect(yield* run(() => page.textContent("table"))).toContain("inv-42")
        yield* run(() => page.goto(`${client.url}/console/transactions?q=${String(order.pay_address)}`))
        expect(yield* run(() => page.textContent("main"))).toContain("0 found")
        yield* run(() => page.goto(`${client.url}/console/webhooks`))
        expect(yield* run(() => page.textContent("main"))).toContain("Every delivery went through")

        // a second factor: a wrong code changes nothing; the right one turns it on, and it is asked at login and to approve
        yield* run(() => page.goto(`${client.url}/console/security`))
        const secret = (yield* run(() => page.textContent("#totp-secret"))) ?? ""
        yield* run(() => page.fill("form.totp input[name=code]", "000000"))
        yield* run(() => page.click("form.totp button"))
        expect(yield* run(() => page.textContent(".notice"))).toContain("does not match")
        const offered = (yield* run(() => page.textContent("#totp-secret"))) ?? ""
        yield* run(() => page.fill("form.totp input[name=code]", totpCode(offered)))
        yield* run(() => page.click("form.totp button"))
        expect(yield* run(() => page.textContent(".enrolled"))).toContain("second factor is on")
        expect(secret).toMatch(/^[A-Z2-7]{32}$/)
        const loginName = (yield* run(() => page.textContent("nav .who"))) ?? ""
        yield* run(() => page.click("nav button"))
        yield* run(() => page.waitForURL(/\/console\/login$/))
        yield* run(() => page.fill("input[name=login_name]", loginName))
        yield* run(() => page.fill("input[name=password]", PASSWORD))
        yield* run(() => page.click("button[type=submit]"))
        expect(yield* run(() => page.textContent(".notice"))).toContain("6-digit code")
        yield* run(() => page.fill("input[name=login_name]", loginName))
        yield* run(() => page.fill("input[name=password]", PASSWORD))
        yield* run(() => page.fill("input[name=code]", totpCode(offered)))
        yield* run(() => page.click("button[type=submit]"))
        yield* run(() => page.waitForURL(/\/console\/withdrawals$/))
        // an approval without the code is refused before anything else is looked at
        const csrf = yield* run(() => page.inputValue("nav input[name=csrf]"))
        const noCode = yield* run(() => page.request.post(`${client.url}/console/withdrawals/wdr_any/approve`, { form: { csrf, password: PASSWORD } }))
        expect(noCode.status()).toBe(403)
        expect(yield* run(() => noCode.text())).toContain("6-digit code")
      }))

    it.scoped("logins are limited per account, and an idle session ends", () =>
      Effect.gen(function*() {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const browser = yield* launchBrowser
        const applied = asRecord((yield* client.request("POST", "/v1/ai/merchant-apply", {
          json: { project_name: `Limits Shop ${Date.now()}`, business_type: "shop", use_case: "payments", agree_terms: true, contact_email: "limits@console.example" }
        })).body)
        const setupUrl = new URL(String(asRecord(applied.merchant_console).token_login_url))
        const page = yield* run(() => browser.newPage())
        yield* run(() => page.goto(`${client.url}${setupUrl.pathname}${setupUrl.search}`))
        const loginName = yield* run(() => page.inputValue("input[name=login_name]"))
        yield* run(() => page.fill("input[name=password]", PASSWORD))
        yield* run(() => page.click("button[type=submit]"))
        yield* run(() => page.waitForURL(/\/console\/withdrawals$/))

        // the session ends after 30 idle minutes: the next page is the login page
        yield* sql`UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes'`
        yield* run(() => page.goto(`${client.url}/console/balances`))
        expect(page.url()).toMatch(/\/console\/login$/)

        // five wrong passwords for the account: then even the right one waits
        const attempt = (password: string) => run(() => page.request.post(`${client.url}/console/login`, { form: { login_name: loginName, password }, maxRedirects: 0 }))
        for (let i = 0; i < 5; i++) expect((yield* attempt(`wrong-password-${i}-xyz`)).status()).toBe(401)
        const limited = yield* attempt(PASSWORD)
        expect(limited.status()).toBe(429)
        expect(yield* run(() => limited.text())).toContain("Too many failed logins")
        yield* sql`DELETE FROM console_login_failures WHERE login_name = ${loginName}`
        expect((yield* attempt(PASSWORD)).status()).toBe(303)
      }))
  })
})
