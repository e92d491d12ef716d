import { Effect, Layer } from "effect"
import { makeBep20Client } from "../src/chains/evm/bep20-client.js"
import { makeTronClient } from "../src/chains/tron/tron-client.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { masterSeedFromMnemonic } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { isAlive } from "../src/processes/child-process.js"
import { asRecord } from "./json.js"
import { api, readDevnetFile, type ServiceProcess, until } from "./service-process.js"

/** What the crash tests do to a service run as a process (test/service-process.ts), over its API and devnets. */

/** The chain clients only read here: any seed will do. */
const ReadOnlySigner = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

/** An exchange-wallet merchant, applied for over the API: the env it was given (FACET_API_KEY, FACET_WEBHOOK_SECRET, …). */
export const applyAsExchange = (service: ServiceProcess, fields: Record<string, string> = {}) =>
  Effect.map(
    api(service, "POST", "/v1/ai/merchant-apply", {
      json: {
        project_name: `Crash ${Date.now()}`,
        business_type: "exchange",
        use_case: "deposits",
        agree_terms: true,
        integration_mode: "exchange_wallet",
        ...fields
      }
    }),
    (applied) => asRecord(asRecord(applied.body).env)
  )

/** A deposit address of `user`, paid `amount` USDT by the devnet's customer: its API answer, once the deposit is final. */
export const paidDepositAddress = (
  service: ServiceProcess,
  dataDir: string,
  apiKey: string,
  request: { readonly chain: "TRC20" | "BEP20"; readonly user: string; readonly amount: string }
) =>
  Effect.gen(function* () {
    const address = asRecord(
      (yield* api(service, "POST", "/v1/deposit-addresses", {
        apiKey,
        json: { external_user_id: request.user, chain: request.chain, currency: "USDT" }
      })).body
    )
    yield* Effect.flatMap(readDevnetFile(dataDir), (file) =>
      payFromCustomer(file, `${request.chain}-USDT`, String(address.address), request.amount)
    )
    yield* until(
      "the deposit to be final",
      api(service, "GET", `/v1/deposit-addresses/${String(address.id)}/transactions`, { apiKey }),
      (r) => {
        const items = asRecord(r.body).items
        return Array.isArray(items) && items.some((t) => asRecord(t).status === "confirmed")
      }
    )
    return address
  })

/** Waits for a service started with FACET_FAULT_CRASH_POINT to SIGKILL itself; its log from then. */
export const killedItself = (service: ServiceProcess) =>
  Effect.map(
    until(
      "the service to kill itself",
      Effect.sync(() => isAlive(service.pid)),
      (alive) => !alive
    ),
    () => service.log()
  )

/** Our TRON client on the devnet of a service's data directory. */
const tronClientOf = (dataDir: string) =>
  Effect.flatMap(readDevnetFile(dataDir), (file) =>
    makeTronClient({ url: file.tron.url, tokens: new Map(Object.entries(file.tron.tokens)), confirmations: 3 })
  )

/** The on-chain token balance of an address, read through our own chain clients from the devnet file. */
export const tokenBalance = (dataDir: string, chain: "TRC20" | "BEP20", address: string) =>
  Effect.gen(function* () {
    if (chain === "TRC20") return yield* (yield* tronClientOf(dataDir)).balance(address, "USDT")
    const file = yield* readDevnetFile(dataDir)
    const usdt = file.bep20.tokens.USDT ?? ""
    const client = yield* makeBep20Client({
      rpcUrl: file.bep20.rpcUrl,
      chainId: file.bep20.chainId,
      tokens: new Map(isHexAddress(usdt) ? [["USDT", usdt]] : []),
      confirmations: 2
    })
    return yield* client.balance(address, "USDT")
  }).pipe(Effect.provide(ReadOnlySigner), Effect.orDie)

/**
 * Sun of stake `owner` lends on the TRON devnet, read through our own TRON client: to `receiver` (its
 * delegation records, final state), and to anyone (its account's figure).
 */
export const energyLent = (dataDir: string, owner: string, receiver: string) =>
  Effect.gen(function* () {
    const energy = (yield* tronClientOf(dataDir)).energy
    if (energy === undefined) return yield* Effect.dieMessage("the TRON client has no Stake 2.0 reads")
    return {
      toReceiver: yield* energy.lentTo(owner, receiver),
      toAnyone: (yield* energy.stake(owner)).lent
    }
  }).pipe(Effect.provide(ReadOnlySigner), Effect.orDie)
