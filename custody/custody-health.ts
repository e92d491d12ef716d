import { Effect, Option } from "effect"
import { CustodyConfig } from "./custody-config.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { fromBaseUnits } from "../src/money.js"
import { GasWallets, lendableTransfers } from "./gas-wallets.js"
import { EnergyReadings } from "./energy-readings.js"
import { energyMetrics, energyReport } from "./energy-view.js"

/**
 * What /health and /metrics say about custody: operations by status, the oldest one in flight (and what
 * it waits for), the gas wallets' last readings (on TRON with what the stake can lend: a low TRX balance
 * is `ok` while the stake can lend a transfer's energy), the TRON stake's last reading (what it lends, what
 * custody burned). An empty gas wallet or an operation in flight longer than FACET_CUSTODY_STUCK_MINUTES
 * (30), or a wallet halted on a transfer whose fate the chain cannot yet prove, makes the service degraded;
 * a low gas wallet is shown, and warned about in the log, without degrading it; the stake is only shown.
 */
export class CustodyHealth extends Effect.Service<CustodyHealth>()("facet/CustodyHealth", {
  effect: Effect.gen(function* () {
    const store = yield* CustodyStore
    const gas = yield* GasWallets
    const config = yield* CustodyConfig
    const energy = yield* EnergyReadings

    const snapshot = Effect.gen(function* () {
      const stats = yield* store.stats()
      const wallets = yield* gas.cached
      const stake = yield* energy.cached
      return { stats, wallets, stake }
    })

    const report = Effect.map(snapshot, ({ stats, wallets, stake }) => {
      const oldest = stats.oldest?.id === null || stats.oldest === undefined ? undefined : stats.oldest
      const operations: Record<string, number> = {}
      for (const row of stats.byStatus) operations[`${row.type}:${row.status}`] = row.n
      const transactions: Record<string, number> = {}
      for (const row of stats.transactions) transactions[row.status] = row.n
      const reasons = [
        ...stats.halted.map(
          (h) =>
            `custody wallet ${h.from_address} (${h.chain}) is halted on operation ${h.id}: ${h.halted_reason}: npm run custody -- show ${h.id}`
        ),
        ...wallets
          .filter((w) => w.status === "empty")
          .map(
            (w) =>
              `the ${w.chain} gas wallet ${w.address} is empty (${Option.getOrElse(w.balance, () => "?")} ${w.asset}): token sweeps cannot be funded`
          ),
        ...(oldest !== undefined && (oldest.seconds ?? 0) > config.stuckAfterMinutes * 60
          ? [
              `custody operation ${oldest.id} has been in flight ${Math.round((oldest.seconds ?? 0) / 60)} min (waiting for ${oldest.waiting_for ?? "nothing recorded"}): npm run custody -- show ${oldest.id}`
            ]
          : [])
      ]
      return {
        custody: {
          operations,
          transactions,
          oldest_in_flight_seconds: Math.round(oldest?.seconds ?? 0),
          oldest_in_flight: oldest?.id ?? null,
          halted: stats.halted.map((h) => ({
            operation_id: h.id,
            chain: h.chain,
            wallet_address: h.from_address,
            reason: h.halted_reason,
            seconds: Math.round(h.seconds)
          })),
          gas_wallets: wallets.map((w) => ({
            chain: w.chain,
            address: w.address,
            asset: w.asset,
            balance: Option.getOrElse(w.balance, () => "unknown"),
            gas_status: w.status,
            ...Option.match(w.stake, {
              onNone: () => ({}),
              onSome: (s) => ({
                energy: {
                  lendable: fromBaseUnits(s.lendable, NATIVE_ASSETS.TRC20.decimals),
                  per_transfer: fromBaseUnits(s.perTransfer, NATIVE_ASSETS.TRC20.decimals),
                  transfers: lendableTransfers(s)
                }
              })
            })
          })),
          ...Option.match(stake, {
            onNone: () => ({}),
            onSome: (r) => ({ energy: { ...energyReport(r.status), read_at: r.readAt.toISOString() } })
          })
        },
        reasons
      }
    })

    const metrics = Effect.map(snapshot, ({ stats, wallets, stake }) => {
      const lines = [
        "# HELP facet_custody_operations Custody operations by type and status.",
        "# TYPE facet_custody_operations gauge",
        ...stats.byStatus.map((r) => `facet_custody_operations{type="${r.type}",status="${r.status}"} ${r.n}`),
        "# HELP facet_custody_transactions Transactions custody signed, by state (signed, broadcast, included, final, reverted, dropped, rejected, replaced).",
        "# TYPE facet_custody_transactions gauge",
        ...stats.transactions.map((r) => `facet_custody_transactions{status="${r.status}"} ${r.n}`),
        "# HELP facet_custody_oldest_in_flight_seconds Age of the oldest unfinished custody operation (0 when none).",
        "# TYPE facet_custody_oldest_in_flight_seconds gauge",
        `facet_custody_oldest_in_flight_seconds ${Math.round(stats.oldest?.seconds ?? 0)}`,
        "# HELP facet_custody_halted_wallets Wallets halted because the chain cannot yet prove what became of a transfer (never signed again meanwhile).",
        "# TYPE facet_custody_halted_wallets gauge",
        `facet_custody_halted_wallets ${stats.halted.length}`,
        "# HELP facet_gas_wallet_balance The platform gas wallet's balance, in its native asset (last reading).",
        "# TYPE facet_gas_wallet_balance gauge",
        ...wallets.flatMap((w) =>
          Option.match(w.balance, {
            onNone: () => [],
            onSome: (b) => [`facet_gas_wallet_balance{chain="${w.chain}",asset="${w.asset}"} ${b}`]
          })
        ),
        "# HELP facet_gas_wallet_status 1 for the gas wallet's status (low: top it up; empty: sweeps cannot be funded; on TRON ok while the stake can lend a transfer's energy).",
        "# TYPE facet_gas_wallet_status gauge",
        ...wallets.flatMap((w) =>
          (["ok", "low", "empty", "unknown"] as const).map(
            (s) => `facet_gas_wallet_status{chain="${w.chain}",status="${s}"} ${w.status === s ? 1 : 0}`
          )
        ),
        "# HELP facet_gas_wallet_energy_transfers USDT transfers whose energy the TRON stake can lend now (last reading).",
        "# TYPE facet_gas_wallet_energy_transfers gauge",
        ...wallets.flatMap((w) =>
          Option.match(w.stake, {
            onNone: () => [],
            onSome: (s) => [`facet_gas_wallet_energy_transfers{chain="${w.chain}"} ${lendableTransfers(s)}`]
          })
        ),
        ...Option.match(stake, { onNone: () => [], onSome: (r) => energyMetrics(r.status) })
      ]
      return `${lines.join("\n")}\n`
    })

    return { report, metrics } as const
  }),
  dependencies: [CustodyStore.Default, GasWallets.Default, EnergyReadings.Default]
}) {}
