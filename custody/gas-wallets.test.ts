import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { lendableTransfers, tronGasStatus } from "./gas-wallets.js"

const TRX = 1_000_000n
/** A stake that can lend `lendable` TRX, a transfer's energy taking 17,876 TRX of it (the devnet's figure). */
const stake = (lendable: bigint) => Option.some({ lendable: lendable * TRX, perTransfer: 17_876n * TRX })

describe("TRON's gas status counts the stake's energy as well as the gas wallet's TRX", () => {
  it("ok on TRX alone; ok on low TRX while the stake lends a transfer's energy; empty TRX stays empty", () => {
    expect(tronGasStatus("ok", Option.none())).toBe("ok")
    expect(tronGasStatus("ok", stake(0n))).toBe("ok")
    expect(tronGasStatus("low", Option.none())).toBe("low")
    expect(tronGasStatus("low", stake(17_875n))).toBe("low")
    expect(tronGasStatus("low", stake(17_876n))).toBe("ok")
    // activations and the bandwidth lent energy leaves are paid in TRX: a stake does not make up for none
    expect(tronGasStatus("empty", stake(1_000_000n))).toBe("empty")
    expect(tronGasStatus("unknown", stake(1_000_000n))).toBe("unknown")
  })

  it("counts whole transfers the stake can lend", () => {
    expect(lendableTransfers({ lendable: 50_000n * TRX, perTransfer: 17_876n * TRX })).toBe(2)
    expect(lendableTransfers({ lendable: 0n, perTransfer: 17_876n * TRX })).toBe(0)
    expect(lendableTransfers({ lendable: 50_000n * TRX, perTransfer: 0n })).toBe(0)
  })
})
