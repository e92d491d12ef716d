import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import type { Chain } from "../src/domain/chain.js"
import { UnderpaymentTolerances } from "../src/orders/underpayment-tolerance.js"
import { launchBrowser } from "../test/browser.js"
import { merchantWithConsoleOwner, OWNER_PASSWORD } from "../test/console-session.js"
import { member } from "../test/console-members.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import type { Attributed } from "./attribution.js"
import { AttributionStore, type BlockRecord } from "./attribution-store.js"

/**
 * Underpayment tolerance (issue #35) against the database: the console setting, its snapshot on each new
 * order, and the settlement path the indexers write through (AttributionStore), with the webhook it queues.
 */

const HOLDER = "tolerance-test"
const OPERATOR = { kind: "operator", name: "test", from: "test" } as const
let nextBlock = 100n

const holdLease = (chain: Chain) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
    INSERT INTO indexer_leases (chain, holder) VALUES (${chain}, ${HOLDER})
    ON CONFLICT (chain) DO UPDATE SET holder = excluded.holder`
  )

/** A payment of `amount` into an order's pay address on `chain`, in a block of its own, final (or not) when written. */
const pays = (merchantId: string, asset: Record<string, unknown>, amount: string, final = true) =>
  Effect.gen(function* () {
    const store = yield* AttributionStore
    const chain = asset.chain === "BEP20" ? "BEP20" : "TRC20"
    nextBlock += 1n
    const number = nextBlock
    const block: BlockRecord = {
      chain,
      number,
      hash: `${chain}-${number}`,
      parentHash: `${chain}-${number - 1n}`,
      timestamp: Math.floor(Date.now() / 1000)
    }
    const hit: Attributed = {
      transfer: {
        chain,
        currency: String(asset.currency),
        txHash: `tx-${number}`,
        eventIndex: 0,
        from: "customer",
        to: String(asset.pay_address),
        amount: 1n,
        blockNumber: number,
        blockHash: block.hash,
        parentHash: block.parentHash,
        success: true
      },
      wallet: { walletId: String(asset.wallet_id), merchantId, purpose: "order" },
      amount
    }
    yield* store.writeBlocks([{ block, hits: [hit] }], final ? number : 0n, HOLDER)
  })

const order = (apiKey: string, json: Record<string, unknown>) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const created = yield* client.request("POST", "/v1/orders", { apiKey, json })
    expect(created.status, created.text).toBe(201)
    return asRecord(created.body)
  })

const assetsOf = (o: Record<string, unknown>) =>
  (Array.isArray(o.available_assets) ? o.available_assets : []).map(asRecord)

const current = (apiKey: string, o: Record<string, unknown>) =>
  Effect.flatMap(TestClient, (client) =>
    Effect.map(client.request("GET", `/v1/orders/${String(o.order_id)}`, { apiKey }), (r) => asRecord(r.body))
  )

/** The `order.updated` bodies queued for an order, oldest first. */
const webhookBodies = (o: Record<string, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{
        body: string
      }>`SELECT body FROM webhook_events WHERE order_id = ${String(o.order_id)} ORDER BY created_at, id`,
      (rows) => rows.map((r) => asRecord(JSON.parse(r.body)))
    )
  )

const policyOf = (apiKey: string, assetKey: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const items = asRecord((yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey })).body).items
    return (Array.isArray(items) ? items : []).map(asRecord).find((p) => p.asset_key === assetKey) ?? {}
  })

describe("underpayment tolerance", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "90 seconds" })((it) => {
    it.effect(
      "an owner sets it in the console (bounded, audit-logged), the API shows it, a viewer cannot, and each new order keeps its own",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId, session } = yield* merchantWithConsoleOwner()
          // off by default
          expect(yield* policyOf(apiKey, "TRC20-USDT")).not.toHaveProperty("underpayment_tolerance")
          expect((yield* session.get("/console/assets")).text).toMatch(/<td class="tolerance">off<\/td>/)

          // refused, nothing stored: more than 10 %, a negative or over-precise amount, an asset not enabled
          for (const [fields, says] of [
            [{ asset_key: "TRC20-USDT", percent: "10.5", amount: "" }, "at most 10"],
            [{ asset_key: "TRC20-USDT", percent: "", amount: "-1" }, "non-negative"],
            [{ asset_key: "TRC20-USDT", percent: "", amount: "0.0000001" }, "at most 6 fractional digits"],
            [{ asset_key: "BEP20-VELNX", percent: "1", amount: "" }, "not an asset enabled"]
          ] as const) {
            const refused = yield* session.submit("/console/assets/tolerance", fields)
            expect([refused.status, refused.notice]).toEqual([400, expect.stringContaining(says)])
          }
          expect(yield* policyOf(apiKey, "TRC20-USDT")).not.toHaveProperty("underpayment_tolerance")

          // 1 % and at most 0.3 USDT: both limits hold
          const saved = yield* session.submit("/console/assets/tolerance", {
            asset_key: "TRC20-USDT",
            percent: "1",
            amount: "0.30"
          })
          expect([saved.status, saved.notice]).toEqual([
            200,
            "TRC20-USDT: the underpayment tolerance of new orders is saved."
          ])
          expect(saved.text).toContain("1 % and at most 0.3 USDT")
          expect((yield* policyOf(apiKey, "TRC20-USDT")).underpayment_tolerance).toEqual({
            percent: "1",
            amount: "0.3"
          })
          const [audit] = yield* sql<{ action: string; detail: string; actor_kind: string }>`
            SELECT action, detail, actor_kind FROM audit_log
            WHERE merchant_id = ${merchantId} AND subject = 'underpayment_tolerance:TRC20-USDT'`
          expect(audit).toEqual({
            action: "policy.changed",
            actor_kind: "console_user",
            detail: "underpayment tolerance of new TRC20-USDT orders: 1 % and at most 0.3 USDT"
          })

          // a viewer sees it and cannot change it
          yield* member(merchantId, `viewer-${merchantId}`, "viewer")
          const login = yield* client.request("POST", "/console/login", {
            rawBody: new URLSearchParams({ login_name: `viewer-${merchantId}`, password: OWNER_PASSWORD }).toString(),
            headers: { "content-type": "application/x-www-form-urlencoded" }
          })
          const viewerCookie = login.headers
            .getSetCookie()
            .map((c) => c.split(";")[0] ?? "")
            .find((c) => c.startsWith("facet_console="))
          const viewerPage = yield* client.request("GET", "/console/assets", {
            headers: { cookie: viewerCookie ?? "" }
          })
          expect(viewerPage.text).toContain("An owner or admin sets it.")
          const viewerCsrf = /name="csrf" value="([^"]+)"/.exec(viewerPage.text)?.[1] ?? ""
          const refused = yield* client.request("POST", "/console/assets/tolerance", {
            rawBody: new URLSearchParams({
              asset_key: "TRC20-USDT",
              percent: "",
              amount: "",
              csrf: viewerCsrf
            }).toString(),
            headers: { "content-type": "application/x-www-form-urlencoded", cookie: viewerCookie ?? "" }
          })
          expect(refused.status).toBe(403)
          expect((yield* policyOf(apiKey, "TRC20-USDT")).underpayment_tolerance).toEqual({
            percent: "1",
            amount: "0.3"
          })

          // each order takes the setting as it stands: 100 USDT → 0.3 (1 % would be 1), 10 USDT → 0.1 (1 %)
          const large = yield* order(apiKey, { amount: "100", currency: "USDT", chain: "TRC20" })
          const small = yield* order(apiKey, { amount: "10", currency: "USDT", chain: "TRC20" })
          expect(assetsOf(large)[0]?.underpayment_tolerance).toBe("0.3")
          expect(assetsOf(small)[0]?.underpayment_tolerance).toBe("0.1")
          // switched off: open orders keep theirs, new ones have none
          const off = yield* session.submit("/console/assets/tolerance", {
            asset_key: "TRC20-USDT",
            percent: "",
            amount: ""
          })
          expect([off.status, off.notice]).toEqual([200, "TRC20-USDT: no underpayment tolerance for new orders."])
          expect(yield* policyOf(apiKey, "TRC20-USDT")).not.toHaveProperty("underpayment_tolerance")
          expect(assetsOf(yield* current(apiKey, large))[0]?.underpayment_tolerance).toBe("0.3")
          const later = yield* order(apiKey, { amount: "100", currency: "USDT", chain: "TRC20" })
          expect(assetsOf(later)[0]).not.toHaveProperty("underpayment_tolerance")

          // the console's page, for the guide (FACET_SCREENSHOTS_DIR=docs/guides/screenshots)
          const dir = process.env.FACET_SCREENSHOTS_DIR
          if (dir !== undefined) {
            yield* session.submit("/console/assets/tolerance", { asset_key: "TRC20-USDT", percent: "1", amount: "0.3" })
            const browser = yield* launchBrowser
            const context = yield* Effect.promise(() => browser.newContext())
            yield* Effect.promise(() =>
              context.addCookies([
                { name: "facet_console", value: session.cookie.split("=")[1] ?? "", url: `${client.url}/console` }
              ])
            )
            const page = yield* Effect.promise(() => context.newPage())
            yield* Effect.promise(() => page.goto(`${client.url}/console/assets`))
            yield* Effect.promise(() =>
              page.screenshot({ path: path.join(dir, "console-underpayment-tolerance.png"), fullPage: true })
            )
          }
        }).pipe(Effect.scoped)
    )

    it.effect(
      "settlement: short within the tolerance is PAID at once with underpaid_amount and says so in the webhook; short by more is not; off by default",
      () =>
        Effect.gen(function* () {
          const tolerances = yield* UnderpaymentTolerances
          const { apiKey, merchantId } = yield* onboardMerchant()
          yield* tolerances.set(merchantId, "TRC20-USDT", { percent: "", amount: "0.3" }, OPERATOR)
          yield* holdLease("TRC20")

          // 9.75 of 10: seen (CONFIRMING), then final: PAID at once, 0.25 lacking
          const within = yield* order(apiKey, { amount: "10", currency: "USDT", chain: "TRC20" })
          const asset = assetsOf(within)[0] ?? {}
          yield* pays(merchantId, asset, "9.75", false)
          expect((yield* current(apiKey, within)).status).toBe("CONFIRMING")
          yield* Effect.flatMap(AttributionStore, (store) => store.confirm("TRC20", nextBlock, nextBlock, HOLDER))
          expect(yield* current(apiKey, within)).toMatchObject({
            status: "PAID",
            paid_amount: "9.750000",
            underpaid_amount: "0.25",
            late_payment: false
          })
          const confirmed = (yield* webhookBodies(within)).filter((b) => b.event === "payment.confirmed")
          expect(confirmed.map((b) => asRecord(b.order))).toEqual([
            expect.objectContaining({ status: "PAID", paid_amount: "9.750000", underpaid_amount: "0.25" })
          ])
          // the rest arrives later: still PAID, nothing lacking any more
          yield* pays(merchantId, asset, "0.25")
          const completed = yield* current(apiKey, within)
          expect(completed).toMatchObject({ status: "PAID", paid_amount: "10.000000" })
          expect(completed).not.toHaveProperty("underpaid_amount")
          // the checkout asks nothing more of the customer once PAID
          const client = yield* TestClient
          const checkout = yield* client.request("GET", `/checkout/${String(within.order_id)}/status`)
          expect(asRecord(checkout.body)).toMatchObject({ status: "PAID", due: "0" })

          // 9.6 of 10: short by 0.4, more than 0.3: not paid
          const beyond = yield* order(apiKey, { amount: "10", currency: "USDT", chain: "TRC20" })
          yield* pays(merchantId, assetsOf(beyond)[0] ?? {}, "9.6")
          const short = yield* current(apiKey, beyond)
          expect(short).toMatchObject({ status: "PENDING", paid_amount: "9.600000" })
          expect(short).not.toHaveProperty("underpaid_amount")
          expect(
            asRecord((yield* client.request("GET", `/checkout/${String(beyond.order_id)}/status`)).body)
          ).toMatchObject({ due: "0.4" })

          // another merchant, nothing set: 9.999999 of 10 is not paid
          const other = yield* onboardMerchant()
          const strict = yield* order(other.apiKey, { amount: "10", currency: "USDT", chain: "TRC20" })
          expect(assetsOf(strict)[0]).not.toHaveProperty("underpayment_tolerance")
          yield* pays(other.merchantId, assetsOf(strict)[0] ?? {}, "9.999999")
          expect(yield* current(other.apiKey, strict)).toMatchObject({ status: "PENDING", paid_amount: "9.999999" })
        })
    )

    it.effect(
      "a multi-asset order: each asset's payment counts by its own tolerance (TRC20 lenient, BEP20 strict)",
      () =>
        Effect.gen(function* () {
          const tolerances = yield* UnderpaymentTolerances
          const { apiKey, merchantId } = yield* onboardMerchant()
          yield* tolerances.set(merchantId, "TRC20-USDT", { percent: "3", amount: "" }, OPERATOR)
          yield* holdLease("TRC20")
          yield* holdLease("BEP20")
          const both = {
            amount: "10",
            currency: "USDT",
            accepted_assets: [
              { chain: "TRC20", currency: "USDT" },
              { chain: "BEP20", currency: "USDT" }
            ]
          }
          const byChain = (o: Record<string, unknown>, chain: string) =>
            assetsOf(o).find((a) => a.chain === chain) ?? {}

          // 5 on BEP20 (half of 10) and 4.85 on TRC20 (half of 10 − 0.3): PAID, 0.15 lacking
          const mixed = yield* order(apiKey, both)
          expect(byChain(mixed, "TRC20").underpayment_tolerance).toBe("0.3")
          expect(byChain(mixed, "BEP20")).not.toHaveProperty("underpayment_tolerance")
          yield* pays(merchantId, byChain(mixed, "BEP20"), "5")
          yield* pays(merchantId, byChain(mixed, "TRC20"), "4.85")
          expect(yield* current(apiKey, mixed)).toMatchObject({ status: "PAID", underpaid_amount: "0.15" })

          // a crumb on TRC20 does not lend its tolerance to BEP20: 0.01 + 9.8 is not paid
          const crumb = yield* order(apiKey, both)
          yield* pays(merchantId, byChain(crumb, "TRC20"), "0.01")
          yield* pays(merchantId, byChain(crumb, "BEP20"), "9.8")
          expect(yield* current(apiKey, crumb)).toMatchObject({ status: "PENDING", paid_amount: "9.810000" })
        })
    )
  })
})
