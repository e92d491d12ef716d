import { Data, Effect } from "effect"
import type { ServiceProcess } from "./service-process.js"

/** The service did not answer (killed, or not started yet): the step is tried again later. */
export class Unanswered extends Data.TaggedError("Unanswered")<{ readonly cause: unknown }> {}

/** A console user's session as a browser holds it: the cookie, and the CSRF token its pages carry. */
export interface ConsoleBrowser {
  readonly login: string
  readonly password: string
  readonly cookie: string
  csrf: string | undefined
}

const post = (service: ServiceProcess, path: string, fields: Record<string, string>, cookie?: string) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(`${service.url}${path}`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie === undefined ? {} : { cookie }) },
        body: new URLSearchParams(fields).toString()
      })
      return { status: response.status, cookies: response.headers.getSetCookie(), text: await response.text() }
    },
    catch: (cause) => new Unanswered({ cause })
  })

/** A public page's form (no session), as a customer's browser submits it: the status (a 303 is not followed) and the page. */
export const submitPublicForm = (service: ServiceProcess, path: string, fields: Record<string, string>) =>
  Effect.map(post(service, path, fields), ({ status, text }) => ({ status, text }))

/** Accepts an invite link's token with a password, as the invite page's form does: the session it opens. */
export const acceptInvite = (service: ServiceProcess, login: string, token: string, password: string) =>
  Effect.gen(function* () {
    const answer = yield* post(service, "/console/invite", { token, password })
    const cookie = answer.cookies.map((c) => c.split(";")[0] ?? "").find((c) => c.startsWith("facet_console="))
    if (cookie === undefined)
      return yield* Effect.dieMessage(
        `${login}'s invite was not accepted (${answer.status}): ${answer.text.slice(0, 300)}`
      )
    return { login, password, cookie, csrf: undefined } satisfies ConsoleBrowser
  })

/** The CSRF token of the session's pages (read from the withdrawals page, once per session). */
const csrfOf = (service: ServiceProcess, browser: ConsoleBrowser) =>
  browser.csrf === undefined
    ? Effect.tryPromise({
        try: async () => {
          const response = await fetch(`${service.url}/console/withdrawals`, {
            headers: { cookie: browser.cookie },
            redirect: "manual"
          })
          return /name="csrf" value="([^"]+)"/.exec(await response.text())?.[1]
        },
        catch: (cause) => new Unanswered({ cause })
      }).pipe(
        Effect.flatMap((csrf) =>
          csrf === undefined
            ? Effect.dieMessage(`${browser.login}'s session shows no console page`)
            : Effect.succeed(csrf)
        )
      )
    : Effect.succeed(browser.csrf)

/** Approves a withdrawal from this session, the password asked again as the form asks it: the HTTP status and the page's notice. */
export const approveInConsole = (
  service: ServiceProcess,
  browser: ConsoleBrowser,
  id: string,
  /** a withdrawal, or a batch of them (decided as a whole) */
  what: "withdrawals" | "batches" = "withdrawals"
) =>
  Effect.gen(function* () {
    const csrf = yield* csrfOf(service, browser)
    browser.csrf = csrf
    const answer = yield* post(
      service,
      `/console/${what}/${id}/approve`,
      { csrf, password: browser.password },
      browser.cookie
    )
    const notice = /class="notice"[^>]*>([^<]*)</.exec(answer.text)?.[1] ?? ""
    return { status: answer.status, notice }
  })

/** The merchant's owner binding the console with onboarding's one-time token, as the setup page's form does. */
export const setUpOwner = (service: ServiceProcess, consoleToken: string, login: string, password: string) =>
  Effect.gen(function* () {
    const answer = yield* post(service, "/console/setup", { token: consoleToken, login_name: login, password })
    const cookie = answer.cookies.map((c) => c.split(";")[0] ?? "").find((c) => c.startsWith("facet_console="))
    if (cookie === undefined)
      return yield* Effect.dieMessage(`the console setup was refused (${answer.status}): ${answer.text.slice(0, 300)}`)
    return { login, password, cookie, csrf: undefined } satisfies ConsoleBrowser
  })

/** A signed form of the session (its CSRF token added): the HTTP status and the page's notice. */
export const submitInConsole = (
  service: ServiceProcess,
  browser: ConsoleBrowser,
  path: string,
  fields: Record<string, string>
) =>
  Effect.gen(function* () {
    const csrf = yield* csrfOf(service, browser)
    browser.csrf = csrf
    const answer = yield* post(service, path, { ...fields, csrf }, browser.cookie)
    return {
      status: answer.status,
      notice: /class="notice"[^>]*>([^<]*)</.exec(answer.text)?.[1] ?? "",
      text: answer.text
    }
  })

/** The owner invites a member from the console's people page: the one-time link's token. */
export const inviteInConsole = (service: ServiceProcess, owner: ConsoleBrowser, login: string, role: string) =>
  Effect.gen(function* () {
    const answer = yield* submitInConsole(service, owner, "/console/users/invite", { login_name: login, role })
    const token = /[?&]token=([^\s&"<]+)/.exec(answer.text)?.[1]
    if (token === undefined)
      return yield* Effect.dieMessage(`${login} was not invited (${answer.status}): ${answer.notice}`)
    return decodeURIComponent(token.replace(/&amp;/g, "&"))
  })
