import { HttpApiBuilder, HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AppConfig } from "../src/config.js"
import { FacetApi } from "./api.js"
import { AuthenticationLive } from "./authentication.js"
import { ErrorBoundaryLive } from "./error-boundary.js"
import { DepositAddressesHandlers } from "./handlers/deposit-addresses.js"
import { DeveloperHandlers } from "./handlers/developer.js"
import { OnboardingHandlers } from "./handlers/onboarding.js"
import { OrdersHandlers } from "./handlers/orders.js"
import { SystemHandlers } from "./handlers/system.js"
import { TransactionsHandlers } from "./handlers/transactions.js"
import { WalletAssetsHandlers } from "./handlers/wallet-assets.js"
import { WithdrawalsHandlers } from "./handlers/withdrawals.js"
import { WithdrawalBatchesHandlers } from "./handlers/withdrawal-batches.js"
import { RefundsHandlers } from "./handlers/refunds.js"
import { CheckoutHandlers } from "./handlers/checkout.js"
import { PayHandlers } from "./handlers/pay.js"
import { PaymentLinksHandlers } from "./handlers/payment-links.js"
import { LedgerExportHandlers } from "./handlers/ledger-export.js"
import { ConsoleRoutesLive } from "./console/console-routes.js"
import { RateLimiter } from "./rate-limiter.js"
import { RefundClaimRoutes } from "./refund-claim-routes.js"
import { McpLoopbackLive } from "./mcp/mcp-caller.js"
import { McpRoutesLive } from "./mcp/mcp-routes.js"

const ApiLive = HttpApiBuilder.api(FacetApi).pipe(
  Layer.provide([
    SystemHandlers,
    DeveloperHandlers,
    OnboardingHandlers,
    WalletAssetsHandlers,
    OrdersHandlers,
    DepositAddressesHandlers,
    TransactionsHandlers,
    WithdrawalsHandlers,
    WithdrawalBatchesHandlers,
    RefundsHandlers,
    LedgerExportHandlers,
    CheckoutHandlers,
    PaymentLinksHandlers,
    PayHandlers
  ]),
  Layer.provide(AuthenticationLive)
)

/** The Node HTTP server on `PORT` (0 picks a free one; tests read it from `HttpServer.HttpServer`). */
const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => NodeHttpServer.layer(createServer, { port: config.port, host: "0.0.0.0" }))
)

export const HttpLive = HttpApiBuilder.serve(HttpMiddleware.logger).pipe(
  Layer.provide(ApiLive),
  // the merchant console's pages: outside the /v1 contract, on the same router and services
  Layer.provide(ConsoleRoutesLive),
  // the refund claim page customers open from a claim link: outside the contract too
  Layer.provide(RefundClaimRoutes),
  // the MCP server over streamable HTTP, calling /v1 over loopback with the caller's key
  Layer.provide(McpRoutesLive),
  Layer.provide(ErrorBoundaryLive),
  Layer.provide(RateLimiter.Default),
  // proves /mcp's own calls to /v1 to the rate limiter (the caller's address, not loopback's)
  Layer.provide(McpLoopbackLive),
  HttpServer.withLogAddress,
  Layer.provideMerge(NodeServerLive)
)
