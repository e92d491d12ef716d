import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AppConfig } from "../../src/config.js"
import { changelog, CONTRACT_VERSION } from "../../src/domain/changelog.js"
import { FacetApi } from "../api.js"
import { llmsTxt } from "../llms-txt.js"
import { openApiDocument } from "../openapi-document.js"

/** The contract about itself: OpenAPI generated from the declaration, change history, AI guidance. */
export const DeveloperHandlers = HttpApiBuilder.group(FacetApi, "developer", (handlers) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const document = openApiDocument(config.baseUrl)
    const guidance = llmsTxt(config.baseUrl, CONTRACT_VERSION)
    return handlers
      .handle("openapi", () => Effect.succeed(document))
      .handle("changelog", () => Effect.succeed(changelog))
      .handle("llmsTxt", () => Effect.succeed(guidance))
      .handle("wellKnownOpenapi", () =>
        Effect.succeed(HttpServerResponse.redirect("/v1/openapi.json", { status: 308 }))
      )
  })
)
