import { Option } from "effect"
import type { AssetPolicy } from "../domain/asset-policy.js"
import { toBaseUnits } from "../money.js"

/**
 * The payment URI a wallet app understands, for the checkout QR code: EIP-681 on BEP20
 * (`ethereum:<token>@<chainId>/transfer?address=…&uint256=…`), `tron:<address>?amount=…&token=…` on
 * TRON, Solana Pay (`solana:<recipient>?amount=…&spl-token=…`) on Solana. A token whose contract is not
 * configured gets no URI rather than a wrong one.
 */
export const paymentUri = (
  asset: AssetPolicy,
  address: string,
  amount: string,
  contract: Option.Option<string>,
  bep20ChainId: number
): Option.Option<string> => {
  const native = asset.metadata.standard === "native"
  if (!native && Option.isNone(contract)) return Option.none()
  const token = Option.getOrElse(contract, () => "")
  switch (asset.chain) {
    case "BEP20": {
      const units = toBaseUnits(amount, asset.decimals).toString()
      return Option.some(
        native
          ? `ethereum:${address}@${bep20ChainId}?value=${units}`
          : `ethereum:${token}@${bep20ChainId}/transfer?address=${address}&uint256=${units}`
      )
    }
    case "TRC20":
      return Option.some(`tron:${address}?amount=${amount}${native ? "" : `&token=${token}`}`)
    case "SOLANA":
      return Option.some(`solana:${address}?amount=${amount}${native ? "" : `&spl-token=${token}`}`)
    case "POLYGON":
      return Option.none()
  }
}
