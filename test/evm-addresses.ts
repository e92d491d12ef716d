import { Effect } from "effect"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { Signer } from "../src/keys/signer.js"

/** The EVM address of one of our keys (key account, index), as custody would derive it. */
export const evmAddressOf = (account: number, index: number) =>
  Effect.flatMap(Signer, (s) => s.deriveAddresses("EVM", account, [index])).pipe(
    Effect.map(([k]) => k?.address ?? ""),
    Effect.filterOrDie(isHexAddress, () => new Error("no address"))
  )
