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
import { ClockControl } from "../test/policy-clock.js"

const PASSWORD = "Correct-Horse-Battery-9"

/** With FACET_SCREENSHOTS_DIR set (e.g. `docs`), the pages are saved there for docs/console-and-checkout.md. */
const screenshot = (page: Page, name: string) => {
  const dir = process.env.FACET_SCREENSHOTS_DIR
  return dir === undefined
    ? Effect.void
    : Effect.promise(() => page.screenshot({ path: path.join(dir, name), fullPage: true }))
}

const run = <A>(f: () => Promise<A>) => Effect.promise(f)

describe("merchant console in a real browser", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.scoped(
      "the owner sets up once, logs out and in, and approves a withdrawal with the password; CSRF and ownership hold",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const browser = yield* launchBrowser
          const applied = yield* client.request("POST", "/v1/ai/merchant-apply", {
            json: {
              project_name: `Console Shop ${Date.now()}`,
              business_type: "shop",
              use_case: "payouts",
              agree_terms: true,
              contact_email: "owner@console.example",
              integration_mode: "exchange_wallet"
            }
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
          const created = asRecord(
            (yield* client.request("POST", "/v1/withdrawals", {
              apiKey,
              json: {
                chain: "TRC20",
                currency: "USDT",
                amount: "120",
                to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"
              }
            })).body
          )
          const id = String(created.withdrawal_id)
          yield* run(() => page.goto(`${client.url}/console/balances`))
          expect(yield* run(() => page.textContent("table"))).toContain("380")
          yield* screenshot(page, "console-balances.png")
          yield* run(() => page.goto(`${client.url}/console/withdrawals`))
          expect(yield* run(() => page.getAttribute(`#${id}`, "data-status"))).toBe("PENDING")
          yield* screenshot(page, "console-withdrawals.png")

          // a forged POST (no CSRF token) changes nothing; another merchant's (or no) withdrawal is not found
          const forged = yield* run(() =>
            page.request.post(`${client.url}/console/withdrawals/${id}/cancel`, { form: { reason: "forged" } })
          )
          expect(forged.status()).toBe(403)
          const csrf = yield* run(() => page.inputValue(`#${id} form.cancel input[name=csrf]`))
          const foreign = yield* run(() =>
            page.request.post(`${client.url}/console/withdrawals/wdr_of_someone_else/cancel`, { form: { csrf } })
          )
          expect(foreign.status()).toBe(404)

          // approve: the wrong password approves nothing, the right one does
          yield* run(() => page.fill(`#${id} form.approve input[name=password]`, "not-my-password-1"))
          yield* run(() => page.click(`#${id} form.approve button`))
          expect(yield* run(() => page.textContent(".notice"))).toContain("nothing was approved")
          expect(yield* run(() => page.getAttribute(`#${id}`, "data-status"))).toBe("PENDING")
          yield* run(() => page.fill(`#${id} form.approve input[name=password]`, PASSWORD))
          yield* run(() => page.click(`#${id} form.approve button`))
          expect(yield* run(() => page.getAttribute(`#${id}`, "data-status"))).toBe("APPROVED")
          const done = yield* eventually(
            client.request("GET", `/v1/withdrawals/${id}`, { apiKey }),
            (r) => asRecord(r.body).status === "COMPLETED",
            60_000
          )
          expect(asRecord(done.body).status).toBe("COMPLETED")
          yield* run(() => context.close())
        })
    )

    it.scoped(
      "the owner manages keys (a narrower one, shown once, revoked), the webhook secret, assets, and finds transactions",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const browser = yield* launchBrowser
          const applied = asRecord(
            (yield* client.request("POST", "/v1/ai/merchant-apply", {
              json: {
                project_name: `Keys Shop ${Date.now()}`,
                business_type: "shop",
                use_case: "payments",
                agree_terms: true,
                contact_email: "keys@console.example"
              }
            })).body
          )
          const apiKey = String(asRecord(applied.env).FACET_API_KEY)
          const setupUrl = new URL(String(asRecord(applied.merchant_console).token_login_url))
          const page = yield* run(() => browser.newPage())
          yield* run(() => page.goto(`${client.url}${setupUrl.pathname}${setupUrl.search}`))
          yield* run(() => page.fill("input[name=password]", PASSWORD))
          yield* run(() => page.click("button[type=submit]"))
          yield* run(() => page.waitForURL(/\/console\/withdrawals$/))

          // a key without the wallet scope: the password asked again (a key acts without one), shown once,
          // works for reads, cannot sweep, then revoked
          yield* run(() => page.goto(`${client.url}/console/keys`))
          yield* run(() => page.fill("form.new-key input[name=label]", "reporting"))
          yield* run(() => page.fill("form.new-key input[name=password]", "not-my-password-1"))
          yield* run(() => page.click("form.new-key button"))
          expect(yield* run(() => page.textContent(".notice"))).toContain(
            "The password is not right: nothing was created"
          )
          yield* run(() => page.fill("form.new-key input[name=label]", "reporting"))
          yield* run(() => page.fill("form.new-key input[name=password]", PASSWORD))
          yield* run(() => page.click("form.new-key button"))
          const narrow = (yield* run(() => page.textContent("#shown-once"))) ?? ""
          expect(narrow).toMatch(/^fk_live_/)
          yield* screenshot(page, "console-keys.png")
          expect((yield* client.request("GET", "/v1/wallet-portfolio", { apiKey: narrow })).status).toBe(200)
          expect(
            (yield* client.request("POST", "/v1/wallet-assets/TRC20-USDT/sweep", {
              apiKey: narrow,
              json: { from_wallet_id: "wal_x" }
            })).status
          ).toBe(403)
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
          expect(
            (Array.isArray(policies) ? policies.map(asRecord) : []).find((p) => p.asset_key === "BEP20-VELNX")
              ?.merchant_enabled
          ).toBe(true)

          // orders and transactions are there to look at and search
          const order = asRecord(
            (yield* client.request("POST", "/v1/orders", {
              apiKey,
              json: { amount: "5", currency: "USDT", chain: "TRC20", out_trade_no: "inv-42" }
            })).body
          )
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
          yield* run(() => page.fill("form.totp input[name=password]", PASSWORD))
          yield* run(() => page.click("form.totp button"))
          expect(yield* run(() => page.textContent(".notice"))).toContain("does not match")
          // enrolling asks for the password too (each refusal offers a new secret)
          const first = (yield* run(() => page.textContent("#totp-secret"))) ?? ""
          yield* run(() => page.fill("form.totp input[name=code]", totpCode(first)))
          yield* run(() => page.fill("form.totp input[name=password]", "not-my-password-1"))
          yield* run(() => page.click("form.totp button"))
          expect(yield* run(() => page.textContent(".notice"))).toContain("The password is not right")
          const offered = (yield* run(() => page.textContent("#totp-secret"))) ?? ""
          const enrolledAt = Date.now()
          const enrollCode = totpCode(offered, enrolledAt)
          yield* run(() => page.fill("form.totp input[name=code]", enrollCode))
          yield* run(() => page.fill("form.totp input[name=password]", PASSWORD))
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
          // the code that turned it on is used: it is not accepted again (the next step's is)
          yield* run(() => page.fill("input[name=login_name]", loginName))
          yield* run(() => page.fill("input[name=password]", PASSWORD))
          yield* run(() => page.fill("input[name=code]", enrollCode))
          yield* run(() => page.click("button[type=submit]"))
          expect(yield* run(() => page.textContent(".notice"))).toContain("already used")
          yield* run(() => page.fill("input[name=login_name]", loginName))
          yield* run(() => page.fill("input[name=password]", PASSWORD))
          yield* run(() => page.fill("input[name=code]", totpCode(offered, enrolledAt + 30_000)))
          yield* run(() => page.click("button[type=submit]"))
          yield* run(() => page.waitForURL(/\/console\/withdrawals$/))
          // an approval without the code is refused before anything else is looked at
          const csrf = yield* run(() => page.inputValue("nav input[name=csrf]"))
          const noCode = yield* run(() =>
            page.request.post(`${client.url}/console/withdrawals/wdr_any/approve`, {
              form: { csrf, password: PASSWORD }
            })
          )
          expect(noCode.status()).toBe(403)
          expect(yield* run(() => noCode.text())).toContain("6-digit code")
        })
    )

    it.scoped(
      "withdrawal policy in the console: the owner invites an approver, tightens at once, loosening waits and is cancelled, an address is added; quorum 2 is reached by two people; the audit log shows and exports it",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const clock = yield* ClockControl
          const browser = yield* launchBrowser
          const applied = asRecord(
            (yield* client.request("POST", "/v1/ai/merchant-apply", {
              json: {
                project_name: `Policy Shop ${Date.now()}`,
                business_type: "exchange",
                use_case: "payouts",
                agree_terms: true,
                contact_email: "policy@console.example",
                integration_mode: "exchange_wallet"
              }
            })).body
          )
          const apiKey = String(asRecord(applied.env).FACET_API_KEY)
          const setupUrl = new URL(String(asRecord(applied.merchant_console).token_login_url))
          const local = (u: URL) => `${client.url}${u.pathname}${u.search}`
          const owner = yield* run(() => browser.newPage())
          yield* run(() => owner.goto(local(setupUrl)))
          yield* run(() => owner.fill("input[name=password]", PASSWORD))
          yield* run(() => owner.click("button[type=submit]"))
          yield* run(() => owner.waitForURL(/\/console\/withdrawals$/))
          const receive = yield* fundedAddress(apiKey, "TRC20", "USDT", "500")
          const swept = asRecord(
            (yield* client.request("POST", "/v1/wallet-assets/TRC20-USDT/sweep", {
              apiKey,
              json: { from_wallet_id: receive.walletId }
            })).body
          )
          expect((yield* untilFinished(apiKey, "TRC20-USDT", String(swept.operation_id))).status).toBe("COMPLETED")

          // the owner invites an approver; the link works once, in the approver's own browser
          const approverLogin = `appr-${Date.now().toString(36)}`
          yield* run(() => owner.goto(`${client.url}/console/users`))
          yield* run(() => owner.fill("form.invite input[name=login_name]", approverLogin))
          yield* run(() => owner.selectOption("form.invite select[name=role]", "approver"))
          yield* run(() => owner.click("form.invite button"))
          const inviteUrl = new URL((yield* run(() => owner.textContent("#invite-link"))) ?? "")
          const approverContext = yield* run(() => browser.newContext())
          const approver = yield* run(() => approverContext.newPage())
          yield* run(() => approver.goto(local(inviteUrl)))
          expect(yield* run(() => approver.textContent("main"))).toContain("as approver")
          yield* run(() => approver.fill("input[name=password]", "Approver-Battery-Staple-7"))
          yield* run(() => approver.click("button[type=submit]"))
          yield* run(() => approver.waitForURL(/\/console\/withdrawals$/))
          expect(yield* run(() => approver.textContent("nav .role"))).toBe("approver")
          expect(yield* run(() => approver.locator("nav a[href='/console/collect']").count())).toBe(0)
          yield* run(() => owner.goto(`${client.url}/console/users`))
          expect(yield* run(() => owner.textContent(`#user-${approverLogin}`))).toMatch(/approver.*from \d{4}-/s)

          // tightening is at once; a loosening waits and the owner cancels it
          const changePolicy = (fields: Record<string, string>) =>
            Effect.gen(function* () {
              yield* run(() => owner.goto(`${client.url}/console/policy`))
              for (const [name, value] of Object.entries(fields)) {
                if (name === "address_book")
                  yield* run(() => owner.selectOption("form.change-policy select[name=address_book]", value))
                else yield* run(() => owner.fill(`form.change-policy input[name=${name}]`, value))
              }
              yield* run(() => owner.fill("form.change-policy input[name=password]", PASSWORD))
              yield* run(() => owner.click("form.change-policy button"))
              return (yield* run(() => owner.textContent(".notice"))) ?? ""
            })
          expect(yield* changePolicy({ quorum: "2", address_book: "on" })).toMatch(
            /address_book: off → on now; quorum: 1 → 2 now/
          )
          expect(yield* run(() => owner.textContent("#setting-quorum .value"))).toBe("2")
          expect(yield* changePolicy({ quorum: "1" })).toMatch(/quorum: 2 → 1 from \d{4}-.*a loosening waits/)
          expect(yield* run(() => owner.textContent("#setting-quorum .value"))).toBe("2")
          expect(yield* run(() => owner.textContent(".pending-changes"))).toContain("quorum")
          yield* screenshot(owner, "console-policy.png")
          yield* run(() => owner.click(".pending-changes form button"))
          expect(yield* run(() => owner.textContent(".notice"))).toContain("cancelled")
          expect(yield* run(() => owner.locator(".pending-changes").count())).toBe(0)

          // an address: the password again, then pending for the cooling-off
          yield* run(() => owner.goto(`${client.url}/console/address-book`))
          yield* run(() => owner.fill("form.add-address input[name=address]", "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"))
          yield* run(() => owner.fill("form.add-address input[name=label]", "exchange hot wallet"))
          yield* run(() => owner.fill("form.add-address input[name=password]", "not-my-password-1"))
          yield* run(() => owner.click("form.add-address button"))
          expect(yield* run(() => owner.textContent(".notice"))).toContain("nothing was added")
          yield* run(() => owner.fill("form.add-address input[name=address]", "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"))
          yield* run(() => owner.fill("form.add-address input[name=password]", PASSWORD))
          yield* run(() => owner.click("form.add-address button"))
          expect(yield* run(() => owner.textContent(".notice"))).toContain("usable from")
          expect(yield* run(() => owner.getAttribute("tr[id^=entry-]", "data-status"))).toBe("pending")
          const refused = yield* client.request("POST", "/v1/withdrawals", {
            apiKey,
            json: { chain: "TRC20", currency: "USDT", amount: "100", to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" }
          })
          expect([refused.status, String(asRecord(refused.body).error)]).toEqual([
            403,
            expect.stringContaining("still cooling off")
          ])

          // a day later: the address is usable and the approver's approvals count
          yield* clock.advance("25 hours")
          yield* run(() => owner.goto(`${client.url}/console/address-book`))
          expect(yield* run(() => owner.getAttribute("tr[id^=entry-]", "data-status"))).toBe("usable")
          const created = asRecord(
            (yield* client.request("POST", "/v1/withdrawals", {
              apiKey,
              json: {
                chain: "TRC20",
                currency: "USDT",
                amount: "100",
                to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"
              }
            })).body
          )
          const id = String(created.withdrawal_id)
          expect(created.required_approvals).toBe(2)
          const approve = (page: Page, password: string) =>
            Effect.gen(function* () {
              yield* run(() => page.goto(`${client.url}/console/withdrawals`))
              yield* run(() => page.fill(`#${id} form.approve input[name=password]`, password))
              yield* run(() => page.click(`#${id} form.approve button`))
              return (yield* run(() => page.textContent(".notice"))) ?? ""
            })
          expect(yield* approve(owner, PASSWORD)).toContain("1 of 2")
          expect(yield* run(() => owner.textContent(`#${id} .approvals`))).toContain("1 of 2")
          expect(yield* run(() => owner.getAttribute(`#${id}`, "data-status"))).toBe("PENDING")
          expect(yield* approve(owner, PASSWORD)).toContain("counts once")
          expect(yield* approve(approver, "Approver-Battery-Staple-7")).toContain("approved")
          expect(yield* run(() => approver.getAttribute(`#${id}`, "data-status"))).toBe("APPROVED")
          const done = yield* eventually(
            client.request("GET", `/v1/withdrawals/${id}`, { apiKey }),
            (r) => asRecord(r.body).status === "COMPLETED",
            60_000
          )
          expect(asRecord(done.body).approvals).toHaveLength(2)

          // a withdrawal the owner requests in the console needs someone else
          yield* run(() => owner.goto(`${client.url}/console/withdrawals`))
          yield* run(() => owner.click("details.new-withdrawal summary"))
          yield* run(() => owner.selectOption("form.create select[name=asset]", "TRC20-USDT"))
          yield* run(() => owner.fill("form.create input[name=to_address]", "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"))
          yield* run(() => owner.fill("form.create input[name=amount]", "20"))
          yield* run(() => owner.click("form.create button"))
          const requested = (yield* run(() => owner.textContent(".notice"))) ?? ""
          expect(requested).toMatch(/Withdrawal wdr_\w+ requested: 20\.000000 USDT/)
          const own = /wdr_\w+/.exec(requested)?.[0] ?? ""
          yield* run(() => owner.fill(`#${own} form.approve input[name=password]`, PASSWORD))
          yield* run(() => owner.click(`#${own} form.approve button`))
          expect(yield* run(() => owner.textContent(".notice"))).toContain("someone else must approve it")

          // the audit log: filtered in the page, every matching row in the CSV
          yield* run(() => owner.goto(`${client.url}/console/audit?action=withdrawal.approved`))
          expect(yield* run(() => owner.locator("table.audit tbody tr").count())).toBe(2)
          expect(yield* run(() => owner.textContent("table.audit"))).toContain(approverLogin)
          yield* run(() => owner.goto(`${client.url}/console/audit`))
          const trail = (yield* run(() => owner.textContent("table.audit"))) ?? ""
          for (const act of [
            "user.invited",
            "user.joined",
            "policy.changed",
            "policy.change_cancelled",
            "address.added",
            "withdrawal.created",
            "withdrawal.approved"
          ])
            expect(trail).toContain(act)
          yield* screenshot(owner, "console-audit.png")
          const href = (yield* run(() => owner.getAttribute("#audit-csv", "href"))) ?? ""
          const csv = yield* run(() => owner.request.get(`${client.url}${href}`))
          expect(csv.headers()["content-type"]).toContain("text/csv")
          const text = yield* run(() => csv.text())
          expect(text.split("\r\n")[0]).toBe("id,at,actor_kind,actor,from_address,user_agent,action,subject,detail")
          expect(text).toContain(`console_user,${approverLogin}`)
          expect(yield* run(() => approver.goto(`${client.url}/console/audit`).then((r) => r?.status()))).toBe(403)
          yield* run(() => approverContext.close())
        })
    )

    it.scoped("logins are limited per account, and an idle session ends", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const browser = yield* launchBrowser
        const applied = asRecord(
          (yield* client.request("POST", "/v1/ai/merchant-apply", {
            json: {
              project_name: `Limits Shop ${Date.now()}`,
              business_type: "shop",
              use_case: "payments",
              agree_terms: true,
              contact_email: "limits@console.example"
            }
          })).body
        )
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

        // five wrong passwords for the account from this address: then even the right one waits, from here
        // (src/console/sign-in-throttle.test.ts: from elsewhere it does not)
        const attempt = (password: string) =>
          run(() =>
            page.request.post(`${client.url}/console/login`, {
              form: { login_name: loginName, password },
              maxRedirects: 0
            })
          )
        for (let i = 0; i < 5; i++) expect((yield* attempt(`wrong-password-${i}-xyz`)).status()).toBe(401)
        const limited = yield* attempt(PASSWORD)
        expect(limited.status()).toBe(429)
        expect(yield* run(() => limited.text())).toContain("Too many failed attempts from here")
        yield* sql`DELETE FROM console_login_failures WHERE login_name = ${loginName}`
        expect((yield* attempt(PASSWORD)).status()).toBe(303)
      })
    )
  })
})
