import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { MerchantApplyResponse } from "../../src/domain/onboarding.js"
import { Onboarding } from "../../src/merchants/onboarding.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"

export const OnboardingHandlers = HttpApiBuilder.group(FacetApi, "onboarding", (handlers) =>
  Effect.gen(function* () {
    const onboarding = yield* Onboarding
    return handlers
      .handle("merchantApply", ({ payload, request }) =>
        Effect.gen(function* () {
          // the application is kept as sent, additional properties included
          const application = yield* Effect.orDie(request.json)
          const { created, response } = yield* onboarding.apply(payload, application)
          // 201 for a new package, 200 for a repeat: the status is the outcome, not the schema
          return yield* HttpServerResponse.schemaJson(MerchantApplyResponse)(response, {
            status: created ? 201 : 200
          }).pipe(Effect.orDie)
        }).pipe(categorized)
      )
      .handle("onboardingStatus", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (principal) => onboarding.status(principal, path.merchant_id)).pipe(categorized)
      )
  })
)
