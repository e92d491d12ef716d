import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Option, Redacted } from "effect"
import { AppConfig } from "../config.js"
import { AssetCatalog } from "../assets/asset-catalog.js"
import type { AssetPolicy } from "../domain/asset-policy.js"
import type {
  IntegrationMode,
  MerchantApplyRequest,
  MerchantApplyResponse,
  OnboardingStatus
} from "../domain/onboarding.js"
import { newId } from "../ids.js"
import { SecretBox } from "../keys/secret-box.js"
import { ConsoleStore } from "../stores/console-store.js"
import { MerchantStore, type MerchantRow } from "../stores/merchant-store.js"
import { ApiKeys } from "./api-keys.js"
import { hashSecret, newConsoleToken, newWebhookSecret } from "./credentials.js"
import { integrationPrompt } from "./integration-prompt.js"
import { ALL_SCOPES, type Principal } from "./principal.js"
import { MerchantNotFound, NotOwnMerchant, ProjectNameTaken } from "./merchant-errors.js"

interface Check {
  readonly name: string
  readonly done: boolean
  readonly required: boolean
  readonly detail: string
  readonly nextStep: string
}

/** Live-readiness: which checks a merchant must pass depends on its integration mode. */
const readinessChecks = (
  merchant: MerchantRow,
  policies: ReadonlyArray<AssetPolicy>,
  hasActiveKey: boolean
): ReadonlyArray<Check> => {
  const wantsCheckout = merchant.integration_mode !== "exchange_wallet"
  const wantsWallets = merchant.integration_mode !== "checkout"
  const enabled = policies.filter((p) => p.merchant_enabled)
  const checkoutAssets = enabled.filter((p) => p.actions.checkout).map((p) => p.asset_key)
  const depositAssets = enabled.filter((p) => p.actions.deposit).map((p) => p.asset_key)
  const checks: Array<Check> = [
    {
      name: "merchant_active",
      done: merchant.status === "active",
      required: true,
      detail: `merchant status is ${merchant.status}`,
      nextStep: "contact support: the merchant is not active"
    },
    {
      name: "api_key_active",
      done: hasActiveKey,
      required: true,
      detail: hasActiveKey ? "a live API key is active" : "no active API key",
      nextStep: "create a live API key in the merchant console"
    }
  ]
  if (wantsCheckout) {
    checks.push({
      name: "checkout_asset_enabled",
      done: checkoutAssets.length > 0,
      required: true,
      detail:
        checkoutAssets.length > 0
          ? `checkout assets: ${checkoutAssets.join(", ")}`
          : "no live asset enabled for checkout",
      nextStep: "enable a live asset with POST /v1/wallet-asset-enrollments"
    })
  }
  if (wantsWallets) {
    checks.push({
      name: "deposit_asset_enabled",
      done: depositAssets.length > 0,
      required: true,
      detail:
        depositAssets.length > 0 ? `deposit assets: ${depositAssets.join(", ")}` : "no asset enabled for deposits",
      nextStep: "enable a deposit asset with POST /v1/wallet-asset-enrollments"
    })
  }
  checks.push({
    name: "webhook_url_configured",
    done: merchant.webhook_url !== null,
    // deposits to long-term addresses are only announced by webhook; orders can carry notify_url instead
    required: wantsWallets,
    detail: merchant.webhook_url !== null ? `webhooks go to ${merchant.webhook_url}` : "no webhook_url on the merchant",
    nextStep: wantsWallets
      ? "set a webhook_url in the merchant console: wallet.deposit.confirmed is delivered there"
      : "set a webhook_url in the merchant console, or pass notify_url on every order"
  })
  checks.push({
    name: "console_bound",
    done: merchant.console_bound_at !== null,
    required: false,
    detail:
      merchant.console_bound_at !== null
        ? "the human owner has claimed the console"
        : "the console token has not been used yet",
    nextStep: "give the console token to the human owner to claim the console (needed to approve withdrawals)"
  })
  return checks
}

const modeSteps = (mode: IntegrationMode): ReadonlyArray<string> => {
  const checkout = "create an order with POST /v1/orders and handle order.updated webhooks until PAID"
  const wallets =
    "assign deposit addresses with POST /v1/deposit-addresses and credit users on wallet.deposit.confirmed"
  return mode === "checkout" ? [checkout] : mode === "exchange_wallet" ? [wallets] : [checkout, wallets]
}

const sameText = (a: string | null | undefined, b: string | null | undefined) =>
  a !== null && a !== undefined && b !== null && b !== undefined && a.trim().toLowerCase() === b.trim().toLowerCase()

/**
 * The same application again: same project name and contact email, or, when the application has no
 * email, the same website or repository.
 */
const isSameApplicant = (existing: MerchantRow, request: MerchantApplyRequest): boolean =>
  request.contact_email !== undefined
    ? sameText(existing.contact_email, request.contact_email)
    : existing.contact_email === null &&
      (sameText(existing.website, request.website) || sameText(existing.repository_url, request.repository_url))

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 32) || "owner"

/** AI onboarding: one call provisions a live merchant package; a repeat returns it without new secrets. */
export class Onboarding extends Effect.Service<Onboarding>()("facet/Onboarding", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const assets = yield* AssetCatalog
    const keys = yield* ApiKeys
    const box = yield* SecretBox
    const consoleStore = yield* ConsoleStore
    const merchants = yield* MerchantStore

    const statusUrl = (merchantId: string) => `${config.baseUrl}/v1/ai/onboarding-status/${merchantId}`

    const evaluate = Effect.fn("Onboarding.evaluate")(function* (merchant: MerchantRow) {
      const policies = yield* assets.policies(merchant.id)
      const checks = readinessChecks(merchant, policies, yield* keys.hasActiveKey(merchant.id))
      const enabledAssets = policies.filter((p) => p.merchant_enabled).map((p) => p.asset_key)
      const liveReady = checks.every((c) => c.done || !c.required)
      return { checks, enabledAssets, liveReady }
    })

    const packageFor = Effect.fn("Onboarding.packageFor")(function* (
      merchant: MerchantRow,
      issued: Option.Option<{
        readonly apiKey: Redacted.Redacted<string>
        readonly webhookSecret: Redacted.Redacted<string>
        readonly consoleToken: Redacted.Redacted<string>
        readonly consoleExpiresAt: DateTime.Utc
      }>
    ) {
      const { enabledAssets, liveReady } = yield* evaluate(merchant)
      const now = yield* DateTime.now
      const env: Record<string, string> = {
        FACET_API_BASE_URL: config.baseUrl,
        FACET_MERCHANT_ID: merchant.id,
        FACET_INTEGRATION_MODE: merchant.integration_mode
      }
      const consoleUrl = config.consoleBaseUrl
      const handoff = Option.match(issued, {
        onNone: () => ({
          dashboard_url: consoleUrl,
          suggested_login_name: slug(merchant.project_name),
          setup_required: merchant.console_bound_at === null
        }),
        onSome: (secrets) => {
          env.FACET_API_KEY = Redacted.value(secrets.apiKey)
          env.FACET_WEBHOOK_SECRET = Redacted.value(secrets.webhookSecret)
          return {
            console_token: Redacted.value(secrets.consoleToken),
            token_login_url: `${consoleUrl}/setup?token=${encodeURIComponent(Redacted.value(secrets.consoleToken))}`,
            dashboard_url: consoleUrl,
            suggested_login_name: slug(merchant.project_name),
            setup_required: true,
            console_token_expires_at: DateTime.formatIso(secrets.consoleExpiresAt)
          }
        }
      })
      const response: MerchantApplyResponse = {
        status: Option.isSome(issued) ? "provisioned" : "already_provisioned",
        mode: "live",
        live_ready: liveReady,
        env,
        merchant_console: handoff,
        generated_at: DateTime.formatIso(now),
        application_id: merchant.application_id,
        merchant_id: merchant.id,
        merchant_no: merchant.merchant_no,
        integration_prompt: integrationPrompt(merchant.integration_mode, config.baseUrl, merchant.project_name),
        integration_mode: merchant.integration_mode,
        onboarding_status_url: statusUrl(merchant.id),
        enabled_assets: enabledAssets
      }
      return response
    })

    const apply = Effect.fn("Onboarding.apply")(function* (request: MerchantApplyRequest, application: unknown) {
      const projectName = request.project_name.trim()
      const projectKey = projectName.toLowerCase()
      const outcome = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            // one applicant at a time per project name, so a race cannot create two merchants or two key sets
            yield* Effect.orDie(sql`SELECT pg_advisory_xact_lock(hashtext(${`merchant-apply:${projectKey}`}))`)
            const existing = yield* Effect.orDie(merchants.findByProjectKey(projectKey))
            if (Option.isSome(existing)) {
              if (!isSameApplicant(existing.value, request)) {
                return yield* new ProjectNameTaken({ projectName })
              }
              return { merchant: existing.value, issued: Option.none() }
            }
            const merchantId = newId("mch")
            const webhookSecret = newWebhookSecret()
            yield* Effect.orDie(
              merchants.insertMerchant({
                id: merchantId,
                applicationId: newId("app"),
                projectName,
                projectKey,
                businessType: request.business_type,
                useCase: request.use_case,
                website: request.website ?? null,
                repositoryUrl: request.repository_url ?? null,
                contactChannel: request.contact_channel ?? null,
                contactEmail: request.contact_email ?? null,
                monthlyVolume: request.monthly_volume ?? null,
                webhookUrl: request.webhook_url ?? null,
                returnUrl: request.return_url ?? null,
                preferredChains: request.preferred_chains ?? [],
                aiProvider: request.ai_provider ?? null,
                integrationMode: request.integration_mode,
                application,
                sealedWebhookSecret: box.seal(Redacted.value(webhookSecret))
              })
            )
            const { key } = yield* keys.issue(merchantId, ALL_SCOPES, "onboarding", {
              kind: "service",
              name: "onboarding"
            })
            const consoleToken = newConsoleToken()
            const consoleExpiresAt = DateTime.addDuration(yield* DateTime.now, config.consoleTokenTtl)
            yield* Effect.orDie(
              consoleStore.insertHandoff({
                id: newId("con"),
                merchantId,
                tokenHash: hashSecret(consoleToken),
                expiresAt: DateTime.toDate(consoleExpiresAt)
              })
            )
            yield* assets.enableDefaults(merchantId)
            const merchant = yield* Effect.orDie(merchants.findById(merchantId))
            if (Option.isNone(merchant))
              return yield* Effect.die(new Error("merchant row vanished inside its own transaction"))
            return {
              merchant: merchant.value,
              issued: Option.some({ apiKey: key, webhookSecret, consoleToken, consoleExpiresAt })
            }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      if (Option.isSome(outcome.issued)) {
        yield* Effect.logInfo("merchant provisioned").pipe(
          Effect.annotateLogs({ merchant_id: outcome.merchant.id, integration_mode: outcome.merchant.integration_mode })
        )
      }
      return { created: Option.isSome(outcome.issued), response: yield* packageFor(outcome.merchant, outcome.issued) }
    })

    const status = Effect.fn("Onboarding.status")(function* (principal: Principal, merchantId: string) {
      // any id but the key's own is 403, whether or not it exists: no merchant-id oracle
      if (principal.merchantId !== merchantId) {
        return yield* new NotOwnMerchant({ merchantId })
      }
      const merchant = yield* Effect.orDie(merchants.findById(merchantId))
      if (Option.isNone(merchant)) return yield* new MerchantNotFound({ merchantId })
      const m = merchant.value
      const { checks, enabledAssets, liveReady } = yield* evaluate(m)
      const missing = checks.filter((c) => !c.done && c.required).map((c) => c.name)
      const nextSteps = [
        ...checks.filter((c) => !c.done).map((c) => c.nextStep),
        ...(liveReady ? modeSteps(m.integration_mode) : [])
      ]
      const result: OnboardingStatus = {
        merchant_id: m.id,
        merchant_no: m.merchant_no,
        application_id: m.application_id,
        integration_mode: m.integration_mode,
        provisioning_status: "completed",
        merchant_status: m.status,
        live_ready: liveReady,
        checks: checks.map(({ detail, done, name, required }) => ({ name, done, required, detail })),
        missing,
        next_steps: nextSteps,
        enabled_assets: enabledAssets,
        console_bound: m.console_bound_at !== null,
        checked_at: DateTime.formatIso(yield* DateTime.now)
      }
      return result
    })

    return { apply, status } as const
  }),
  dependencies: [AssetCatalog.Default, MerchantStore.Default, ConsoleStore.Default, ApiKeys.Default]
}) {}
