import { rpcId, rpcMethod, rpcParams, startNodeProxy } from "./node-proxy.js"

/**
 * What a Solana node without long-term storage answers itself, as Agave does: its ledger starts at
 * `firstSlot()` (`getFirstAvailableBlock`) and `getBlock` of an older slot answers -32009. Undefined: the
 * node behind answers.
 */
export const prunedSolanaAnswer =
  (firstSlot: () => number) =>
  (body: unknown): unknown => {
    if (rpcMethod(body) === "getFirstAvailableBlock") return { jsonrpc: "2.0", id: rpcId(body), result: firstSlot() }
    const [slot] = rpcParams(body)
    return rpcMethod(body) === "getBlock" && typeof slot === "number" && slot < firstSlot()
      ? {
          jsonrpc: "2.0",
          id: rpcId(body),
          error: { code: -32009, message: `Slot ${slot} was skipped, or missing in long-term storage` }
        }
      : undefined
  }

/** Its `getBlocks`: only the slots from `firstSlot()` (silently leaving out older ones, and any in `leftOut`). */
export const prunedSolanaRewrite =
  (firstSlot: () => number, leftOut: ReadonlyArray<number> = []) =>
  (body: unknown, answer: unknown): unknown => {
    if (
      rpcMethod(body) !== "getBlocks" ||
      typeof answer !== "object" ||
      answer === null ||
      !("result" in answer) ||
      !Array.isArray(answer.result)
    )
      return answer
    return {
      ...answer,
      result: answer.result.filter(
        (slot: unknown) => typeof slot === "number" && slot >= firstSlot() && !leftOut.includes(slot)
      )
    }
  }

/** Such a node in front of a real one (`target`). */
export const startPrunedSolanaNode = (target: string, firstSlot: () => number, leftOut: ReadonlyArray<number> = []) =>
  startNodeProxy(
    target,
    ({ body }) => prunedSolanaAnswer(firstSlot)(body),
    ({ body }, answer) => prunedSolanaRewrite(firstSlot, leftOut)(body, answer)
  )
