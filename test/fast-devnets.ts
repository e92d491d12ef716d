/**
 * The settings of devnets in the test process (`TestAppLive` with `chains: "devnet"` applies them under any
 * a test gives): short blocks and shallow finality, so a deposit is final in about a second, and custody
 * looks transfers up often. Configuration for the service under test, not `process.env`: test files share
 * a worker process (vitest.config.ts).
 */
export const FAST_DEVNETS: Readonly<Record<string, string>> = {
  FACET_DEVNET_TRON_BLOCK_MS: "250",
  FACET_CONFIRMATIONS_TRC20: "3",
  FACET_CONFIRMATIONS_BEP20: "2",
  FACET_DEVNET_BEP20_BLOCK_SECONDS: "1",
  FACET_DEVNET_SOLANA_SLOT_MS: "150",
  FACET_DEVNET_SOLANA_FINALITY_SLOTS: "4",
  FACET_CUSTODY_POLL_MS: "200",
  // custody's own consolidation of native coins is off: the tests that sweep natives by hand would race it
  // (custody/native-consolidation.test.ts turns it on)
  FACET_CONSOLIDATE_INTERVAL_MS: "0"
}
