import { Schema } from "effect"
import { Chain } from "./chain.js"

export const IntegrationMode = Schema.Literal("checkout", "exchange_wallet", "hybrid").annotations({
  identifier: "IntegrationMode",
  description: "checkout: hosted checkout orders; exchange_wallet: reusable per-user deposit wallets; hybrid: both"
})
export type IntegrationMode = typeof IntegrationMode.Type

const absoluteUri = (value: string): boolean => {
  try {
    return new URL(value).protocol.length > 1
  } catch {
    return false
  }
}

/** An absolute URI (format uri). */
export const Uri = Schema.String.pipe(
  Schema.filter((value) => absoluteUri(value) || "must be an absolute URI such as https://example.com")
).annotations({ jsonSchema: { type: "string", format: "uri" } })

/** A URI the service will call or send people to: http or https only. */
export const HttpUri = Schema.String.pipe(
  Schema.filter((value) => {
    try {
      const url = new URL(value)
      return url.protocol === "http:" || url.protocol === "https:" || "must be an http or https URL"
    } catch {
      return "must be an absolute http or https URL"
    }
  })
).annotations({ jsonSchema: { type: "string", format: "uri" } })

export const Email = Schema.String.pipe(
  Schema.pattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: () => "must be an email address" })
).annotations({ jsonSchema: { type: "string", format: "email" } })

const NonBlank = (minLength: number, field: string) =>
  Schema.String.pipe(
    Schema.filter((value) => value.trim().length >= minLength || `${field} must have at least ${minLength} characters`)
  )

/** AIMerchantApplyRequest: additional properties are allowed (and kept with the application). */
export const MerchantApplyRequest = Schema.Struct({
  project_name: NonBlank(2, "project_name")
    .pipe(Schema.maxLength(128, { message: () => "project_name: at most 128 characters" }))
    .annotations({ jsonSchema: { type: "string", minLength: 2, maxLength: 128 } }),
  business_type: Schema.String.pipe(Schema.maxLength(200)),
  use_case: Schema.String.pipe(Schema.maxLength(2000)),
  agree_terms: Schema.Literal(true).annotations({ message: () => "agree_terms must be true" }),
  website: Schema.optional(Uri),
  repository_url: Schema.optional(Uri),
  contact_channel: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  contact_email: Schema.optional(Email),
  monthly_volume: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  webhook_url: Schema.optional(HttpUri),
  return_url: Schema.optional(HttpUri),
  preferred_chains: Schema.optional(Schema.Array(Chain)),
  ai_provider: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  integration_mode: Schema.optionalWith(IntegrationMode, { default: () => "checkout" as const })
}).annotations({ identifier: "AIMerchantApplyRequest", parseOptions: { errors: "all" } })
export type MerchantApplyRequest = typeof MerchantApplyRequest.Type

export const MerchantConsoleHandoff = Schema.Struct({
  console_token: Schema.optional(Schema.String),
  token_login_url: Schema.optional(Schema.String),
  dashboard_url: Schema.String,
  suggested_login_name: Schema.String,
  setup_required: Schema.Boolean,
  console_token_expires_at: Schema.optional(Schema.String)
}).annotations({ identifier: "MerchantConsoleHandoff" })

export const MerchantApplyResponse = Schema.Struct({
  status: Schema.String,
  mode: Schema.Literal("live"),
  live_ready: Schema.Boolean,
  env: Schema.Record({ key: Schema.String, value: Schema.String }),
  merchant_console: MerchantConsoleHandoff,
  generated_at: Schema.String,
  application_id: Schema.String,
  merchant_id: Schema.String,
  merchant_no: Schema.String,
  integration_prompt: Schema.String,
  integration_mode: IntegrationMode,
  onboarding_status_url: Schema.String,
  enabled_assets: Schema.Array(Schema.String)
}).annotations({ identifier: "AIMerchantApplyResponse" })
export type MerchantApplyResponse = typeof MerchantApplyResponse.Type

export const ReadinessCheck = Schema.Struct({
  name: Schema.String,
  done: Schema.Boolean,
  required: Schema.Boolean,
  detail: Schema.String
})

export const OnboardingStatus = Schema.Struct({
  merchant_id: Schema.String,
  merchant_no: Schema.String,
  application_id: Schema.String,
  integration_mode: IntegrationMode,
  provisioning_status: Schema.Literal("completed"),
  merchant_status: Schema.String,
  live_ready: Schema.Boolean,
  checks: Schema.Array(ReadinessCheck),
  missing: Schema.Array(Schema.String),
  next_steps: Schema.Array(Schema.String),
  enabled_assets: Schema.Array(Schema.String),
  console_bound: Schema.Boolean,
  checked_at: Schema.String
}).annotations({ identifier: "OnboardingStatus" })
export type OnboardingStatus = typeof OnboardingStatus.Type
