import { Context } from "effect"

/**
 * The send lifecycle's rules that guard money, each with the switch that turns it off. Nothing in the
 * service sets them: they exist so that the simulation (`npm run sim`) can show it finds the double payment
 * or the frozen wallet each rule prevents (its test switches one off and must find a violation).
 */
export interface SendRules {
  /**
   * Off: a send refused at its first broadcast, and not found by one lookup right after, counts as never sent
   * — the operation fails and its money is released (the rule before issue 46: defect 1).
   */
  readonly refusalIsNoEvidence: boolean
  /**
   * Off: the next EVM nonce is the stored counter, given back by a refused first send only when nothing was
   * reserved after it (the rule before issue 46: defect 3, a gap when fundings were in flight).
   */
  readonly lowestFreeNonce: boolean
}

export const SendRules = Context.Reference<SendRules>()("facet/SendRules", {
  defaultValue: (): SendRules => ({ refusalIsNoEvidence: true, lowestFreeNonce: true })
})
