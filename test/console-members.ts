import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AuditActor } from "../src/audit/audit-log.js"
import { ConsoleUsers } from "../custody/console-users.js"

/** The password every invited test member sets. */
export const MEMBER_PASSWORD = "Correct-Horse-Battery-9"
const INVITER: AuditActor = { kind: "operator", name: "ops", from: "test" }

/** A console user of the merchant with a role, through the real invite flow; their id. */
export const member = (merchantId: string, login: string, role: string) =>
  Effect.gen(function* () {
    const users = yield* ConsoleUsers
    const sql = yield* SqlClient.SqlClient
    const invite = yield* users.invite(merchantId, { loginName: login, role }, INVITER)
    yield* users.accept(new URL(invite.url).searchParams.get("token") ?? "", MEMBER_PASSWORD, "127.0.0.1", "test")
    const [user] = yield* sql<{ id: string }>`SELECT id FROM console_users WHERE login_name = ${login}`
    return user?.id ?? ""
  })

/** A console user's decision, as the console makes it for their own session. */
export const asUser = (userId: string, login: string) =>
  ({ kind: "console_user", by: login, userId, from: "127.0.0.1", userAgent: "test" }) as const
