/**
 * Imported first by the test files that run the devnets inside the test process: short blocks and shallow
 * finality, so a deposit is final in about a second, and custody looks transfers up often.
 */
process.env.FACET_DEVNET_TRON_BLOCK_MS = "250"
process.env.FACET_CONFIRMATIONS_TRC20 = "3"
process.env.FACET_CONFIRMATIONS_BEP20 = "2"
process.env.FACET_DEVNET_BEP20_BLOCK_SECONDS = "1"
process.env.FACET_DEVNET_SOLANA_SLOT_MS = "150"
process.env.FACET_DEVNET_SOLANA_FINALITY_SLOTS = "4"
process.env.FACET_CUSTODY_POLL_MS = "200"
// custody's own consolidation of native coins is off: the tests that sweep natives by hand would race it
// (custody/native-consolidation.test.ts turns it on)
process.env.FACET_CONSOLIDATE_INTERVAL_MS = "0"
