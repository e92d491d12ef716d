import { secp256k1 } from "@noble/curves/secp256k1.js"
import { createHash } from "node:crypto"
import { mnemonicToAccount } from "viem/accounts"
import { secp256k1AccountId, tronAddress } from "../keys/address-encoding.js"
import { ANVIL_MNEMONIC, CUSTOMER_INDEX } from "./evm/anvil-devnet.js"
import { SOLANA_DEVNET_CUSTOMER } from "./solana/solana-devnet.js"

/**
 * The devnets' funded customer accounts: where `npm run pay` sends from. Their keys are public
 * constants: they exist only on the local devnets and never hold anything real.
 */
export const bep20Customer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: CUSTOMER_INDEX })

export const tronCustomerKey = createHash("sha256").update("facet-devnet-tron-customer").digest()
export const tronCustomerAddress = tronAddress(secp256k1AccountId(secp256k1.getPublicKey(tronCustomerKey, false)))

export const solanaCustomer = SOLANA_DEVNET_CUSTOMER

/** The TRON customer's wallet signing a txID: r ‖ s ‖ v (27/28), as TRON wallets send it. */
export const signAsTronCustomer = (txID: string): string => {
  const recovered = secp256k1.sign(Buffer.from(txID, "hex"), tronCustomerKey, { prehash: false, format: "recovered" })
  return Buffer.from(recovered.subarray(1)).toString("hex") + ((recovered[0] ?? 0) + 27).toString(16)
}
