import type { Chain } from "../src/domain/chain.js"

/** A chain's own pace and the node calls an indexer makes following it (what providers bill and limit). */
const PACE: Record<
  Chain,
  { readonly blockSeconds: number; readonly tipCalls: number; readonly callsPerBlock: number; readonly what: string }
> = {
  // tip: the head and the solidified block's headers; a block: its body and its transaction infos
  TRC20: {
    blockSeconds: 3,
    tipCalls: 2,
    callsPerBlock: 2,
    what: "head and solidified headers per poll; a block's body and its transaction infos"
  },
  // tip: the head and the finalized block (one batch, two calls); a block: its body, a share of the logs,
  // and its trace when traces are on (receipts only for BNB-carrying transactions, not counted)
  BEP20: {
    blockSeconds: 0.75,
    tipCalls: 2,
    callsPerBlock: 1.1,
    what: "head and finalized block per poll; a block's body and its share of eth_getLogs (+1 with traces)"
  },
  // tip: the confirmed and finalized slots; a slot: its block, plus a share of getBlocks
  SOLANA: {
    blockSeconds: 0.4,
    tipCalls: 2,
    callsPerBlock: 1.05,
    what: "confirmed and finalized slots per poll; a slot's block and its share of getBlocks"
  },
  POLYGON: {
    blockSeconds: 2,
    tipCalls: 2,
    callsPerBlock: 1.1,
    what: "head and finalized block per poll; a block's body and its share of eth_getLogs"
  }
}

/**
 * The node calls an indexer makes following a chain's head with a poll interval, per second and per day:
 * said at start, so an operator can set the poll interval (FACET_INDEXER_POLL_MS_<CHAIN>) within a
 * provider's quota (TronGrid's free plan: 100,000 calls a day). Catching up costs more for a while.
 */
export const followingBudget = (chain: Chain, pollMs: number, traces: boolean) => {
  const pace = PACE[chain]
  const perBlock = pace.callsPerBlock + (chain === "BEP20" && traces ? 1 : 0)
  const perSecond = (pace.tipCalls * 1000) / pollMs + perBlock / pace.blockSeconds
  const perDay = Math.round(perSecond * 86_400)
  return {
    perSecond,
    perDay,
    text:
      `${chain} indexer following the head: about ${perSecond.toFixed(1)} node calls a second, ${perDay.toLocaleString("en-US")} a day ` +
      `(polling every ${pollMs} ms: ${pace.what}); catching up costs more while it lasts`
  }
}
