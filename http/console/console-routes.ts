import { Layer } from "effect"
import { ActivityRoutes } from "./activity-routes.js"
import { AuditRoutes } from "./audit-routes.js"
import { BatchRoutes } from "./batch-routes.js"
import { IntegrationRoutes } from "./integration-routes.js"
import { PaymentLinkRoutes } from "./payment-link-routes.js"
import { LedgerExportRoutes } from "./ledger-export-routes.js"
import { PeopleRoutes } from "./people-routes.js"
import { RefundRoutes } from "./refund-routes.js"
import { SignInRoutes } from "./sign-in-routes.js"
import { WalletRoutes } from "./wallet-routes.js"
import { WithdrawalPolicyRoutes } from "./withdrawal-policy-routes.js"
import { WithdrawalRoutes } from "./withdrawal-routes.js"

/**
 * `/console`: the merchant's pages, on the same services as `/v1` (portfolio, withdrawals and their
 * decisions). Sessions live in an HttpOnly, SameSite=Strict cookie (Secure behind https); every form
 * carries the session's CSRF token and a POST without it changes nothing; the API key never reaches the
 * browser. Another merchant's withdrawal in a URL is not found. Each group of pages is in its own file.
 */
export const ConsoleRoutesLive = Layer.mergeAll(
  SignInRoutes,
  WithdrawalRoutes,
  BatchRoutes,
  WithdrawalPolicyRoutes,
  WalletRoutes,
  ActivityRoutes,
  IntegrationRoutes,
  PeopleRoutes,
  AuditRoutes,
  PaymentLinkRoutes,
  RefundRoutes,
  LedgerExportRoutes
)
