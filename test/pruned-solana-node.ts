import { rpcId, rpcMethod, rpcParams, startNodeProxy } from "./node-proxy.js"

/**
 * A Solana node without long-term storage in front of a real one, as Agave behaves: its ledger starts at
 * `firstSlot()` (`getFirstAvailableBlock`), `getBlocks` lists only the slots from there (silently leaving
 * out older ones, and any in `leftOut`), and `getBlock` of an older slot answers -32009.
 */
export const startPrunedSolanaNode = (target: string, firstSlot: () => number, leftOut: ReadonlyArray<number> = []) =>
  startNodeProxy(target, ({ body }) => {
    if (rpcMethod(body) === "getFirstAvailableBlock") return { jsonrpc: "2.0", id: rpcId(body), result: firstSlot() }
    const [slot] = rpcParams(body)
    return rpcMethod(body) === "getBlock" && typeof slot === "number" && slot < firstSlot()
      ? { jsonrpc: "2.0", id: rpcId(body), error: { code: -32009, message: `Slot ${slot} was skipped, or missing in long-term storage` } }
      : undefined
  }, ({ body }, answer) => {
    if (rpcMethod(body) !== "getBlocks" || typeof answer !== "object" || answer === null || !("result" in answer) || !Array.isArray(answer.result)) return answer
    return { ...answer, result: answer.result.filter((slot: unknown) => typeof slot === "number" && slot >= firstSlot() && !leftOut.includes(slot)) }
  })
