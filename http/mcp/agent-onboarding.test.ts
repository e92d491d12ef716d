import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { approveInConsole, setUpOwner } from "../../test/console-http.js"
import { pay } from "../../test/custody-flows.js"
import { TestAppLive, TestClient } from "../../test/http-harness.js"
import { asRecord } from "../../test/json.js"
import { mcpOk, mcpOverHttp, mcpRead } from "../../test/mcp-client.js"
import { eventually } from "../../test/webhook-receiver.js"
import { tronAddress } from "../../src/keys/address-encoding.js"

/**
 * What an AI agent does with the MCP server and nothing else (#36 part 4): applies as a merchant, reads its
 * integration prompt, takes an order and sees it PAID once the devnet customer pays, collects it and asks for a
 * withdrawal, which waits for a person in the console: the agent has no tool that approves.
 */

const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

describe("an agent onboards and takes a payment over MCP", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "240 seconds" })((it) => {
    it.scoped(
      "apply, read the prompt, order, paid on the devnet, collected, a withdrawal left to a human in the console",
      () =>
        Effect.gen(function* () {
          const http = yield* TestClient
          const service = { pid: process.pid, url: http.url, logFile: "", log: () => "" }

          // no key yet: the agent applies as a merchant through the one public tool
          const anonymous = yield* mcpOverHttp(http.url)
          const publicTools = (yield* Effect.promise(() => anonymous.listTools())).tools.map((tool) => tool.name)
          expect(publicTools).toContain("onboarding_merchant_apply")
          const guidance = yield* mcpRead(anonymous, "facet://llms.txt")
          expect(guidance.text).toMatch(/merchant-apply/)
          const applied = yield* mcpOk(anonymous, "onboarding_merchant_apply", {
            body: {
              project_name: "Agent Coffee Roasters",
              business_type: "shop",
              use_case: "an AI agent selling coffee subscriptions",
              agree_terms: true,
              contact_email: "owner@agent-coffee.example",
              ai_provider: "test agent",
              integration_mode: "checkout"
            }
          })
          const apiKey = String(asRecord(applied.env).FACET_API_KEY)
          expect(apiKey.length).toBeGreaterThan(20)
          // the integration prompt tells the agent what to do next; it is what this test follows
          expect(String(applied.integration_prompt)).toMatch(/\/v1\/orders/)
          expect(String(applied.integration_prompt)).toMatch(/\/mcp/)
          // the console token is the human owner's (the tool's description tells the agent so): the test plays the
          // owner with it below
          const consoleToken = String(asRecord(applied.merchant_console).console_token)

          // with its key: an order for 120 USDT (its collection costs under 5 % of it) on TRON
          const agent = yield* mcpOverHttp(http.url, { "x-api-key": apiKey })
          const tools = (yield* Effect.promise(() => agent.listTools())).tools
          // money out waits for people: no tool approves, and the withdrawal tool says so
          expect(tools.filter((tool) => /approve|reject|decide/.test(tool.name))).toEqual([])
          const withdrawTool = tools.find((tool) => tool.name === "withdrawals_create")
          expect(withdrawTool?.description).toMatch(/never approve/i)

          const order = yield* mcpOk(agent, "orders_create", {
            idempotency_key: "agent-order-1",
            body: { amount: "120", currency: "USDT", chain: "TRC20", product_name: "Coffee, 1 kg" }
          })
          expect(order).toMatchObject({ status: "PENDING", amount: "120" })
          const orderId = String(order.order_id)
          // the same call again (an agent retrying after a timeout) is the same order
          const again = yield* mcpOk(agent, "orders_create", {
            idempotency_key: "agent-order-1",
            body: { amount: "120", currency: "USDT", chain: "TRC20", product_name: "Coffee, 1 kg" }
          })
          expect(again.order_id).toBe(orderId)
          const open = yield* mcpRead(agent, "facet://orders/open")
          expect(open.text).toContain(orderId)

          // the customer pays on the devnet; the agent sees it PAID through the order's resource
          yield* pay("TRC20-USDT", String(order.pay_address), "120")
          const paid = yield* eventually(
            Effect.map(mcpRead(agent, `facet://orders/${orderId}`), (read) => asRecord(JSON.parse(read.text))),
            (o) => o.status === "PAID",
            60_000
          )
          expect(paid).toMatchObject({ status: "PAID", paid_amount: "120.000000" })

          // collected into the main wallet (a key with the wallet scope), then a withdrawal asked for
          const walletId = String(asRecord(list(order.available_assets)[0]).wallet_id)
          const sweep = yield* mcpOk(agent, "wallet_assets_sweep", {
            asset_key: "TRC20-USDT",
            body: { from_wallet_id: walletId }
          })
          const collected = yield* eventually(
            mcpOk(agent, "wallet_assets_sweep_status", {
              asset_key: "TRC20-USDT",
              operation_id: String(sweep.operation_id)
            }),
            (s) => s.status === "COMPLETED" || s.status === "FAILED",
            90_000
          )
          expect(collected.status).toBe("COMPLETED")

          const to = tronAddress(randomBytes(20))
          const quote = yield* mcpOk(agent, "withdrawals_quote", {
            body: { chain: "TRC20", currency: "USDT", amount: "10" }
          })
          expect(quote).toHaveProperty("network_fee")
          const asked = yield* mcpOk(agent, "withdrawals_create", {
            idempotency_key: "agent-withdrawal-1",
            body: { chain: "TRC20", currency: "USDT", amount: "10", to_address: to, out_withdrawal_no: "agent-w-1" }
          })
          expect(asked).toMatchObject({ status: "PENDING", required_approvals: 1 })
          const withdrawalId = String(asked.withdrawal_id)

          // the agent cannot move it: it stays PENDING, and the owner sees it waiting in the console
          yield* Effect.sleep("2 seconds")
          expect(yield* mcpOk(agent, "withdrawals_get", { withdrawal_id: withdrawalId })).toMatchObject({
            status: "PENDING",
            approvals: []
          })
          const owner = yield* setUpOwner(service, consoleToken, "owner", "Correct-Horse-Battery-9")
          const page = yield* Effect.promise(() =>
            fetch(`${http.url}/console/withdrawals`, { headers: { cookie: owner.cookie } }).then((r) => r.text())
          )
          expect(page).toContain(withdrawalId)

          // a person approves it there; the agent sees it through to the chain
          const approved = yield* approveInConsole(service, owner, withdrawalId)
          expect(approved.status, approved.notice).toBeLessThan(400)
          const done = yield* eventually(
            mcpOk(agent, "withdrawals_get", { withdrawal_id: withdrawalId }),
            (w) => w.status === "COMPLETED" || w.status === "FAILED",
            90_000
          )
          expect(done).toMatchObject({ status: "COMPLETED", to_address: to })
        }),
      240_000
    )
  })
})
