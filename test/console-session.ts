import { Effect } from "effect"
import { TestClient } from "./http-harness.js"
import { asRecord } from "./json.js"

/** The password the console owners of these tests set. */
export const OWNER_PASSWORD = "Correct-Horse-Battery-9"

/** A console session as a browser holds it, against the service under test (TestAppLive). */
export interface ConsoleSessionOfTest {
  readonly cookie: string
  readonly csrf: string
  /** A console page (GET) of this session: status and text. */
  readonly get: (path: string) => Effect.Effect<{ readonly status: number; readonly text: string }>
  /** A form of this session (its CSRF token added): status, text and the page's notice. */
  readonly submit: (
    path: string,
    fields: Record<string, string>
  ) => Effect.Effect<{ readonly status: number; readonly text: string; readonly notice: string }>
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

/**
 * A new merchant onboarded over the API whose owner binds the console with the onboarding's one-time
 * setup token, as the setup page's form does: its API key, id and the owner's console session.
 */
export const merchantWithConsoleOwner = (overrides: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const applied = asRecord(
      (yield* client.request("POST", "/v1/ai/merchant-apply", {
        json: {
          project_name: `Console ${process.pid}-${Math.random().toString(36).slice(2, 10)}`,
          business_type: "shop",
          use_case: "payments",
          agree_terms: true,
          contact_email: `owner-${Math.random().toString(36).slice(2, 10)}@merchant.example`,
          webhook_url: "https://merchant.example/hooks",
          ...overrides
        }
      })).body
    )
    const env = asRecord(applied.env)
    const token = new URL(String(asRecord(applied.merchant_console).token_login_url)).searchParams.get("token") ?? ""
    const setup = yield* client.request("POST", "/console/setup", {
      rawBody: form({
        token,
        login_name: `owner-${Math.random().toString(36).slice(2, 10)}`,
        password: OWNER_PASSWORD
      }),
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    const cookie = setup.headers
      .getSetCookie()
      .map((c) => c.split(";")[0] ?? "")
      .find((c) => c.startsWith("facet_console="))
    if (cookie === undefined) return yield* Effect.dieMessage(`console setup refused (${setup.status}): ${setup.text}`)
    const get = (path: string) =>
      Effect.map(client.request("GET", path, { headers: { cookie } }), (r) => ({ status: r.status, text: r.text }))
    const csrf = /name="csrf" value="([^"]+)"/.exec((yield* get("/console/assets")).text)?.[1]
    if (csrf === undefined) return yield* Effect.dieMessage("the console shows no form with a CSRF token")
    const submit = (path: string, fields: Record<string, string>) =>
      Effect.map(
        client.request("POST", path, {
          rawBody: form({ ...fields, csrf }),
          headers: { "content-type": "application/x-www-form-urlencoded", cookie }
        }),
        (r) => ({
          status: r.status,
          text: r.text,
          notice: /class="notice"[^>]*>([^<]*)</.exec(r.text)?.[1] ?? ""
        })
      )
    const session: ConsoleSessionOfTest = { cookie, csrf, get, submit }
    return { apiKey: String(env.FACET_API_KEY), merchantId: String(env.FACET_MERCHANT_ID), session }
  })
