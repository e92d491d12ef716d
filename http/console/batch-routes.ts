import { HttpApiBuilder, HttpRouter, HttpServerRequest, Multipart } from "@effect/platform"
import { Effect, Option, Stream } from "effect"
import { WithdrawalBatches } from "../../custody/withdrawal-batches.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { ConsoleRefusal } from "../../src/console/console-refusal.js"
import type { WithdrawalBatchItemProblem } from "../../src/domain/withdrawal-batch.js"
import { categorized } from "../error-statuses.js"
import { MAX_CSV_BYTES, parseBatchCsv } from "./batch-csv.js"
import { batchesPage, batchPage, type RefusedRow } from "./batch-pages.js"
import { messagePage } from "./console-pages.js"
import { actorOf, allowed, ConsoleGuards, htmlResponse, IdPath } from "./route-kit.js"

/** What a multipart form sent: its fields and its one file (the CSV). */
interface Upload {
  readonly field: (name: string) => string
  readonly file: Option.Option<{ readonly name: string; readonly bytes: Uint8Array }>
}

/** The upload form's parts, read into memory within the CSV's limits (a larger file is refused, not stored). */
const readUpload = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const fields = new Map<string, string>()
  let file: Upload["file"] = Option.none()
  yield* request.multipartStream.pipe(
    Multipart.withLimitsStream({
      maxParts: Option.some(8),
      maxFieldSize: 4096,
      maxFileSize: Option.some(MAX_CSV_BYTES)
    }),
    Stream.runForEach((part) =>
      Multipart.isFile(part)
        ? Effect.map(part.contentEffect, (bytes) => {
            file = Option.some({ name: part.name, bytes })
          })
        : Effect.sync(() => {
            if (Multipart.isField(part)) fields.set(part.key, part.value)
          })
    )
  )
  return { field: (name: string) => fields.get(name) ?? "", file } satisfies Upload
})

/** A service's refused items as the file's rows (the header is line 1). */
const rowsOf = (problems: ReadonlyArray<WithdrawalBatchItemProblem>, lines: ReadonlyArray<number>) =>
  problems.map(
    (p): RefusedRow => ({ line: lines[p.index] ?? p.index + 2, outWithdrawalNo: p.out_withdrawal_no, error: p.error })
  )

/**
 * Withdrawal batches in the console: the list with the CSV upload (the uploader asks for the batch and may
 * not approve it), a batch's page with its items, and the decision on the batch as a whole (approving asks
 * for the password, and the TOTP code once enrolled, again). Another merchant's batch in a URL is not found.
 */
export const BatchRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { reconfirm, signedIn, signedForm } = yield* ConsoleGuards
    const batches = yield* WithdrawalBatches

    const listView = (
      session: ConsoleSession,
      message?: string,
      status = 200,
      refused: ReadonlyArray<RefusedRow> = []
    ) =>
      Effect.gen(function* () {
        const list = yield* batches.list(session.merchantId, { limit: 100, offset: 0 })
        return htmlResponse(batchesPage(session, list.items, list.total, message, refused), status)
      })

    const notFound = (session: ConsoleSession) =>
      htmlResponse(messagePage("Not found", "There is no such withdrawal batch.", session), 404)

    const batchView = (session: ConsoleSession, id: string, message?: string, status = 200) =>
      Effect.gen(function* () {
        const batch = yield* batches.get(session.merchantId, id)
        const items = yield* batches.items(session.merchantId, id, { limit: 500, offset: 0 })
        return htmlResponse(batchPage(session, batch, items.items, message), status)
      }).pipe(Effect.catchTag("WithdrawalBatchNotFound", () => Effect.succeed(notFound(session))))

    yield* router.get(
      "/console/batches",
      signedIn((session) => listView(session))
    )

    // the CSV upload: a multipart form, so its CSRF token is read from its parts
    yield* router.post(
      "/console/batches",
      signedIn((session) =>
        Effect.gen(function* () {
          const upload = yield* readUpload.pipe(
            Effect.mapError(
              (e) =>
                new ConsoleRefusal({
                  status: e.reason === "FileTooLarge" || e.reason === "BodyTooLarge" ? 413 : 400,
                  message:
                    e.reason === "FileTooLarge" || e.reason === "BodyTooLarge"
                      ? `The file is larger than ${MAX_CSV_BYTES / 1024} KiB: nothing was created.`
                      : "The upload could not be read: nothing was created."
                })
            )
          )
          if (upload.field("csrf") !== session.csrfToken) {
            return htmlResponse(
              messagePage(
                "Refused",
                "This form is stale or did not come from the console (no valid CSRF token): nothing was changed.",
                session
              ),
              403
            )
          }
          return yield* allowed(
            session,
            "manage",
            Effect.gen(function* () {
              if (Option.isNone(upload.file) || upload.file.value.bytes.length === 0)
                return yield* new ConsoleRefusal({ status: 400, message: "Choose a CSV file to upload." })
              const text = new TextDecoder("utf-8", { fatal: false }).decode(upload.file.value.bytes)
              const parsed = parseBatchCsv(text)
              if (parsed._tag === "Refused")
                return yield* listView(
                  session,
                  `${upload.file.value.name}: ${parsed.reason}.`,
                  400,
                  parsed.rows.map((r) => ({ line: r.line, outWithdrawalNo: r.outWithdrawalNo, error: r.error }))
                )
              const description = upload.field("description").trim().slice(0, 500)
              const refusedAs = (status: number, error: string, items: ReadonlyArray<WithdrawalBatchItemProblem>) =>
                listView(
                  session,
                  `${upload.file.pipe(
                    Option.map((f) => f.name),
                    Option.getOrElse(() => "the file")
                  )}: ${error}`,
                  status,
                  rowsOf(items, parsed.lines)
                )
              const actor = yield* actorOf(session)
              return yield* batches
                .create(
                  session.merchantId,
                  { items: parsed.items, ...(description === "" ? {} : { description }) },
                  Option.none(),
                  { actor, consoleUserId: session.userId, source: "console_csv" }
                )
                .pipe(
                  Effect.flatMap((batch) =>
                    batchView(
                      session,
                      batch.batch_id,
                      `Batch ${batch.batch_id} requested: ${batch.item_count} withdrawal(s), locked; it needs ${batch.required_approvals} approval(s) from someone else.`,
                      201
                    )
                  ),
                  Effect.catchTags({
                    InvalidWithdrawalBatch: (e) => refusedAs(400, e.message, e.items),
                    WithdrawalBatchConflict: (e) => refusedAs(409, e.message, e.items),
                    WithdrawalBatchPolicyRefused: (e) => refusedAs(403, e.message, e.items)
                  })
                )
            }).pipe(
              // the other failures named by the services as the console shows them: their HTTP category
              categorized,
              Effect.catchTags({
                ConsoleRefusal: (refusal) => listView(session, refusal.message, refusal.status),
                BadRequest: (e) => listView(session, e.error, 400),
                NotFound: (e) => listView(session, e.error, 404),
                Conflict: (e) => listView(session, e.error, 409),
                ServiceUnavailable: (e) => listView(session, e.error, 503)
              })
            )
          )
        }).pipe(Effect.catchTag("ConsoleRefusal", (refusal) => listView(session, refusal.message, refusal.status)))
      )
    )

    yield* router.get(
      "/console/batches/:id",
      signedIn((session) =>
        Effect.flatMap(HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie), ({ id }) => batchView(session, id))
      )
    )

    const decide = (decision: "APPROVED" | "REJECTED" | "CANCELLED") =>
      signedForm((session, field) =>
        Effect.gen(function* () {
          const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
          const actor = yield* actorOf(session)
          if (decision === "APPROVED") yield* reconfirm(session, field)
          if (decision === "REJECTED" && field("reason").trim() === "")
            return yield* batchView(session, id, "A rejection needs a reason.", 400)
          const decided = yield* batches.decide(
            id,
            decision,
            {
              kind: "console_user",
              by: session.loginName,
              userId: session.userId,
              from: actor.from ?? "unknown",
              userAgent: actor.userAgent,
              reason: field("reason").trim() === "" ? undefined : field("reason").trim()
            },
            session.merchantId
          )
          return yield* batchView(
            session,
            id,
            decided.status === "PENDING"
              ? `Your approval of batch ${id} is recorded: ${decided.approvals.length} of ${decided.required_approvals}; it waits for more.`
              : `Batch ${id} ${decision.toLowerCase()}: ${decided.item_count} withdrawal(s).`
          )
        }).pipe(
          // the failures named by the services as the console shows them: their HTTP category
          categorized,
          Effect.catchTags({
            ConsoleRefusal: (refusal) =>
              Effect.flatMap(HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie), ({ id }) =>
                batchView(session, id, refusal.message, refusal.status)
              ),
            NotFound: () => Effect.succeed(notFound(session)),
            Conflict: (conflict) =>
              Effect.flatMap(HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie), ({ id }) =>
                batchView(session, id, conflict.error, 409)
              ),
            Forbidden: (refused) =>
              Effect.flatMap(HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie), ({ id }) =>
                batchView(session, id, refused.error, 403)
              )
          })
        )
      )
    yield* router.post("/console/batches/:id/approve", decide("APPROVED"))
    yield* router.post("/console/batches/:id/reject", decide("REJECTED"))
    yield* router.post("/console/batches/:id/cancel", decide("CANCELLED"))
  })
)
