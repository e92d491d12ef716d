import { type Context, Effect, Option } from "effect"
import type { ChainClients } from "../src/chains/chain-clients.js"
import { type Chain, NATIVE_ASSETS } from "../src/domain/chain.js"
import { fromBaseUnits, MoneyDecimal } from "../src/money.js"
import { isNative } from "./custody-books.js"
import { type CustodyConfigShape, withGasMargin } from "./custody-config.js"
import type { EnergyPlan } from "./energy.js"

/** What a custody transfer costs and who pays it: shared by sweeps, gas fundings and withdrawals. */

interface Asset {
  readonly chain: Chain
  readonly currency: string
}

/** A TRC20 token transfer: its energy comes from the stake when it can (custody/energy.ts). */
export const usesEnergy = (asset: Asset) => asset.chain === "TRC20" && !isNative(asset)

/** A native transfer on TRON or BEP20 pays its fee out of the coins it moves (on Solana the gas wallet pays). */
export const paysOwnFee = (asset: Asset) => isNative(asset) && asset.chain !== "SOLANA"

/** The native units a transfer costs whoever pays its fee (on Solana the gas wallet, as fee payer). */
export const transferFee = (
  clients: Context.Tag.Service<ChainClients>,
  transfer: Asset & { readonly from: string; readonly to: string; readonly amount: bigint }
) =>
  Effect.flatMap(
    Option.match(clients.get(transfer.chain), {
      onNone: () => Effect.dieMessage(`no chain client for ${transfer.chain}`),
      onSome: Effect.succeed
    }),
    (client) =>
      client.feeEstimate({
        from: transfer.from,
        to: transfer.to,
        currency: transfer.currency,
        amount: transfer.amount,
        sponsored: transfer.chain === "SOLANA"
      })
  )

/** The value of base units of a currency in USDT, when it has a price. */
const valueInUsdt = (config: CustodyConfigShape, currency: string, units: bigint, decimals: number) =>
  Option.map(Option.fromNullable(config.prices.get(currency)), (price) =>
    new MoneyDecimal(fromBaseUnits(units, decimals)).times(price)
  )

/**
 * A sweep that costs more gas than a share of its value loses the merchant money: why it is refused, with
 * both figures and, on TRON, the energy path they are for; none when it may go.
 */
export const gasShareRefusal = (
  config: CustodyConfigShape,
  sweep: Asset & { readonly fee: bigint; readonly amount: bigint; readonly decimals: number },
  planned: EnergyPlan | undefined
) => {
  const { chain, fee, currency, amount, decimals } = sweep
  const native = NATIVE_ASSETS[chain]
  const gas = withGasMargin(config, fee)
  const gasValue = valueInUsdt(config, native.currency, gas, native.decimals)
  const sweptValue = valueInUsdt(config, currency, amount, decimals)
  if (
    Option.isNone(gasValue) ||
    Option.isNone(sweptValue) ||
    !gasValue.value.greaterThan(sweptValue.value.times(config.maxGasSharePercent).div(100))
  )
    return undefined
  const path =
    planned === undefined
      ? ""
      : planned.path === "delegated"
        ? ` (its energy lent from the stake${planned.activation ? "; the address's activation included" : ""})`
        : ` (TRX burned for its energy: ${planned.reason})`
  return `the sweep's gas (${fromBaseUnits(gas, native.decimals)} ${native.currency} ≈ ${gasValue.value.toFixed(2)} USDT) is more than ${config.maxGasSharePercent}% of its value (${fromBaseUnits(amount, decimals)} ${currency} ≈ ${sweptValue.value.toFixed(2)} USDT); sweep a larger balance later${path}`
}
