import { HttpApiBuilder } from "@effect/platform"
import { Effect, Schema } from "effect"
import { Collections } from "../../custody/collections.js"
import { WalletPortfolioViews } from "../../custody/wallet-portfolio.js"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { Chain } from "../../src/domain/chain.js"
import { assetsPage, balancesPage, collectPage } from "./console-pages.js"
import { UnderpaymentTolerances } from "../../src/orders/underpayment-tolerance.js"
import { actorOf, allowed, ConsoleGuards, htmlResponse, queryParam } from "./route-kit.js"
import { categorized } from "../error-statuses.js"

/**
 * The money held and the assets it is held in: balances (the portfolio), the assets a merchant enables,
 * and collecting what receive addresses still hold into the main wallet.
 */
export const WalletRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { signedIn, signedForm } = yield* ConsoleGuards
    const portfolio = yield* WalletPortfolioViews
    const catalog = yield* AssetCatalog
    const collections = yield* Collections
    const tolerances = yield* UnderpaymentTolerances

    yield* router.get(
      "/console/balances",
      signedIn((session) =>
        Effect.map(portfolio.portfolio(session.merchantId), (p) => htmlResponse(balancesPage(session, p)))
      )
    )

    const assetsView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.map(catalog.policies(session.merchantId), (policies) =>
        htmlResponse(assetsPage(session, policies, message), status)
      )
    yield* router.get(
      "/console/assets",
      signedIn((session) => assetsView(session))
    )
    yield* router.post(
      "/console/assets/enable",
      signedForm((session, field) => {
        const [chain, currency] = field("asset_key").split("-")
        return allowed(
          session,
          "manage",
          Schema.decodeUnknown(Chain)(chain).pipe(
            Effect.flatMap((c) =>
              catalog.enroll(session.merchantId, { chain: c, currency: currency ?? "", source: "console" })
            ),
            Effect.flatMap((enabled) => assetsView(session, `${enabled.asset_key} is enabled.`)),
            Effect.catchAll(() => assetsView(session, `${field("asset_key")} cannot be enabled.`, 400))
          )
        )
      })
    )

    // the underpayment tolerance of new checkout orders in one asset (an owner or admin; audit-logged)
    yield* router.post(
      "/console/assets/tolerance",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const assetKey = field("asset_key")
            const setting = yield* tolerances.set(
              session.merchantId,
              assetKey,
              { percent: field("percent"), amount: field("amount") },
              yield* actorOf(session)
            )
            const off = setting.percent === null && setting.amount === null
            return yield* assetsView(
              session,
              off
                ? `${assetKey}: no underpayment tolerance for new orders.`
                : `${assetKey}: the underpayment tolerance of new orders is saved.`
            )
          }).pipe(categorized, Effect.catchTags({ BadRequest: (e) => assetsView(session, e.error, 400) }))
        )
      )
    )

    const collectView = (session: ConsoleSession, assetKey: string, message?: string, status = 200) =>
      Effect.gen(function* () {
        const policies = yield* catalog.policies(session.merchantId)
        const chosen =
          policies.find((p) => p.asset_key === assetKey && p.actions.collect) ?? policies.find((p) => p.actions.collect)
        const wallets =
          chosen === undefined
            ? []
            : (yield* portfolio.detail(session.merchantId, chosen.asset_key, { limit: 100 }).pipe(Effect.orDie)).items
        return htmlResponse(collectPage(session, policies, chosen?.asset_key ?? "", wallets, message), status)
      })
    yield* router.get(
      "/console/collect",
      signedIn((session) => Effect.flatMap(queryParam("asset"), (asset) => collectView(session, asset)))
    )
    yield* router.post(
      "/console/collect",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          collections.request(session.merchantId, field("asset"), { from_wallet_id: field("wallet_id") }).pipe(
            Effect.tap((op) =>
              Effect.logInfo(`console: ${session.loginName} swept ${op.from_address} (${op.operation_id})`)
            ),
            Effect.flatMap((op) =>
              collectView(
                session,
                field("asset"),
                `Sweep ${op.operation_id} started: ${op.amount} ${op.currency} (${op.status}).`
              )
            ),
            // the failures named by the services as the console shows them: their HTTP category
            categorized,
            Effect.catchTags({
              BadRequest: (e) => collectView(session, field("asset"), e.error, 400),
              NotFound: (e) => collectView(session, field("asset"), e.error, 404),
              Conflict: (e) => collectView(session, field("asset"), e.error, 409),
              ServiceUnavailable: (e) => collectView(session, field("asset"), e.error, 503)
            })
          )
        )
      )
    )
  })
)
