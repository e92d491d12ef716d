import { Args, Command, Options } from "@effect/cli"
import { Effect, Layer, Option, Schema } from "effect"
import * as os from "node:os"
import { AddressBook } from "./address-book.js"
import { AddressAlreadyInBook, AddressBookEntryNotFound, InvalidAddressBookEntry } from "./address-book-errors.js"
import { InvalidPolicySetting, PolicyChangeNotFound } from "./withdrawal-policy-errors.js"
import { MerchantNotFound } from "../src/merchants/merchant-errors.js"
import { describeSetting, WithdrawalPolicy } from "./withdrawal-policy.js"
import { parsedOption, refusalsAsUsage, refused, subcommandNeeded, unreachedAsFailure } from "../src/operator/cli.js"
import type { AuditActor } from "../src/audit/audit-log.js"
import { ConsoleRefusal } from "../src/console/console-refusal.js"
import { ConsoleUsers } from "./console-users.js"
import { Chain } from "../src/domain/chain.js"
import { SystemClockLive } from "../src/policy-clock.js"
import { MerchantStore } from "../src/stores/merchant-store.js"
import { OperatorMasterSeedLive } from "../src/keys/master-seed.js"
import { SecretBoxLive } from "../src/keys/secret-box.js"
import { operatorConfig, operatorDatabaseLive } from "../src/operator/operator-database.js"

/**
 * `npm run merchants` (its entry: merchants-cli.ts): the operator's hand on a merchant's withdrawal policy, address book and console
 * users. Every act is in the merchant's audit log as the operator's (`--by`, default the OS user, from
 * this host), under the same rules as the console: a loosening waits for the cooling-off. What the rules
 * refuse (a bad value, an unknown entry) is exit 2, as a bad command line is (docs/operating/cli.md).
 */

/** What the console's rules refuse (a role, a login) is refused here too: exit 2. */
const consoleRefusalsAsUsage = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, ConsoleRefusal> => error instanceof ConsoleRefusal,
    (error) => Effect.fail(refused(error.message))
  )

/** What the subcommands run on: the merchants, their policy, address book and console users. */
export type MerchantServices = MerchantStore | AddressBook | ConsoleUsers | WithdrawalPolicy

/** The merchant services on the system clock; the entry gives their database and seed, a test its own. */
export const MerchantServicesLive = Layer.mergeAll(
  MerchantStore.Default,
  AddressBook.Default,
  ConsoleUsers.Default,
  WithdrawalPolicy.Default
).pipe(Layer.provideMerge(SystemClockLive))

const merchantId = Args.text({ name: "MERCHANT_ID" }).pipe(Args.withDescription("the merchant (mer_…)"))
const by = Options.text("by").pipe(
  Options.withPseudoName("NAME"),
  Options.optional,
  Options.withDescription("the operator, as the audit log names them (default: the OS user)")
)

/** The operator as the audit log records them, from this host. */
const operator = (by: Option.Option<string>): AuditActor => ({
  kind: "operator",
  name: Option.getOrElse(by, () => os.userInfo().username),
  from: `cli@${os.hostname()}`
})

const optionalText = (name: string, pseudoName: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName(pseudoName), Options.optional, Options.withDescription(description))

const policyOptions = {
  merchantId,
  addressBook: optionalText("address-book", "on|off", "withdrawals only to addresses in the address book"),
  coolingOff: optionalText("cooling-off", "DURATION", "how long a loosening waits, e.g. 24h"),
  quorum: optionalText("quorum", "N", "approvals a withdrawal needs"),
  quorumAbove: Options.text("quorum-above").pipe(
    Options.withPseudoName("ASSET=AMOUNT:N|off"),
    Options.repeated,
    Options.withDescription("above AMOUNT of ASSET, N approvals (repeatable), e.g. TRC20-USDT=1000:2")
  ),
  limit: Options.text("limit").pipe(
    Options.withPseudoName("ASSET=per_tx:AMOUNT,per_day:AMOUNT"),
    Options.repeated,
    Options.withDescription("limits per withdrawal and per rolling 24 h (repeatable; off for none)")
  ),
  cancel: optionalText("cancel", "CHANGE_ID", "cancel a pending change instead"),
  by
}

/** The settings a `policy` command asks for, from its options; a malformed one is exit 2. */
const requestedSettings = (options: {
  readonly addressBook: Option.Option<string>
  readonly coolingOff: Option.Option<string>
  readonly quorum: Option.Option<string>
  readonly quorumAbove: ReadonlyArray<string>
  readonly limit: ReadonlyArray<string>
}) =>
  Effect.gen(function* () {
    const wanted: Array<{ setting: string; value: string | null }> = []
    if (Option.isSome(options.addressBook)) wanted.push({ setting: "address_book", value: options.addressBook.value })
    if (Option.isSome(options.coolingOff)) wanted.push({ setting: "cooling_off", value: options.coolingOff.value })
    if (Option.isSome(options.quorum)) wanted.push({ setting: "quorum", value: options.quorum.value })
    for (const tier of options.quorumAbove) {
      const [asset, value] = tier.split("=")
      if (asset === undefined || value === undefined)
        return yield* refused(`--quorum-above ${tier}: expected ASSET=AMOUNT:N, e.g. TRC20-USDT=1000:2`)
      wanted.push({ setting: `quorum_above:${asset}`, value })
    }
    for (const limit of options.limit) {
      const [asset, spec] = limit.split("=")
      if (asset === undefined || spec === undefined)
        return yield* refused(`--limit ${limit}: expected ASSET=per_tx:AMOUNT,per_day:AMOUNT`)
      for (const part of spec.split(",")) {
        const [kind, value] = part.split(":")
        if ((kind !== "per_tx" && kind !== "per_day") || value === undefined)
          return yield* refused(`--limit ${limit}: each part is per_tx:AMOUNT or per_day:AMOUNT (off for none)`)
        wanted.push({ setting: `${kind}:${asset}`, value })
      }
    }
    return wanted
  })

/**
 * The command tree, its subcommands on `services`: built when a subcommand runs (never for `--help` or a
 * usage error), what keeps a subcommand from them (an OperatorError: no database) is exit 1. The entry
 * (merchants-cli.ts) gives the service's database; custody/withdrawal-policy.test.ts the running test service's.
 */
export const merchantsCommand = <E>(services: Layer.Layer<MerchantServices, E>) => {
  /**
   * `body` for a merchant that exists, with the merchant services; an unknown merchant and what the rules
   * refuse are exit 2, what keeps it from them exit 1.
   */
  const withMerchants = <A, E2, R>(merchantId: string, body: Effect.Effect<A, E2, R>) =>
    Effect.flatMap(MerchantStore, (merchants) => Effect.orDie(merchants.findById(merchantId))).pipe(
      Effect.flatMap(
        (merchant): Effect.Effect<A, E2 | MerchantNotFound, R> =>
          Option.isNone(merchant) ? Effect.fail(new MerchantNotFound({ merchantId })) : body
      ),
      refusalsAsUsage([
        InvalidAddressBookEntry,
        AddressAlreadyInBook,
        AddressBookEntryNotFound,
        InvalidPolicySetting,
        PolicyChangeNotFound,
        MerchantNotFound
      ]),
      consoleRefusalsAsUsage,
      Effect.provide(services),
      unreachedAsFailure
    )

  const policy = Command.make("policy", policyOptions, (options) =>
    withMerchants(
      options.merchantId,
      Effect.gen(function* () {
        const { merchantId } = options
        const actor = operator(options.by)
        const policy = yield* WithdrawalPolicy
        if (Option.isSome(options.cancel)) {
          yield* policy.cancelChange(merchantId, options.cancel.value, actor)
          console.log(`pending change ${options.cancel.value} cancelled`)
          return
        }
        const wanted = yield* requestedSettings(options)
        if (wanted.length > 0) {
          const outcomes = yield* policy.change(merchantId, wanted, actor)
          for (const o of outcomes)
            console.log(
              `${o.setting}: ${o.from} → ${o.to} ${o.pending ? `pending until ${o.effectiveAt.toISOString()} (a loosening waits for the cooling-off)` : "in force now"}`
            )
          if (outcomes.length === 0) console.log("nothing changed: those values are already in force")
          return
        }
        yield* policy.settle(merchantId)
        const inForce = yield* policy.effective(merchantId)
        for (const setting of ["address_book", "cooling_off", "quorum"])
          console.log(`${setting}: ${describeSetting(setting, inForce.value(setting))}`)
        for (const s of inForce.settings.filter((s) => s.setting.includes(":"))) console.log(`${s.setting}: ${s.value}`)
        for (const c of (yield* policy.changes(merchantId)).filter((c) => c.status === "PENDING")) {
          console.log(
            `pending ${c.id}: ${c.setting} → ${c.value ?? "unset"} from ${c.effective_at.toISOString()} (asked by ${c.requested_by})`
          )
        }
      })
    )
  ).pipe(
    Command.withDescription(
      "a merchant's withdrawal policy: without an option it prints the policy in force and its pending changes; a loosening waits for the cooling-off, as in the console"
    )
  )

  // address-book MERCHANT_ID list | add | remove: the subcommands read the merchant from their parent
  const addressBook = Command.make("address-book", { merchantId })
  const chain = parsedOption("chain", "TRC20|BEP20|SOLANA", "TRC20, BEP20 or SOLANA", (value) =>
    Schema.decodeUnknownOption(Chain)(value.toUpperCase())
  )
  const address = Options.text("address").pipe(Options.withPseudoName("ADDRESS"))

  const addressBookList = Command.make("list", {}, () =>
    Effect.flatMap(addressBook, ({ merchantId }) =>
      withMerchants(
        merchantId,
        Effect.gen(function* () {
          const listed = yield* Effect.flatMap(AddressBook, (book) => book.list(merchantId, { limit: 100, offset: 0 }))
          console.log(
            `address book ${listed.address_book}, cooling-off ${listed.cooling_off_seconds} s, ${listed.total} entr${listed.total === 1 ? "y" : "ies"}`
          )
          for (const e of listed.items)
            console.log(
              `${e.id} ${e.chain} ${e.address} ${e.status}${e.status === "pending" ? ` until ${e.usable_from}` : ""} "${e.label}" (by ${e.created_by})`
            )
        })
      )
    )
  ).pipe(Command.withDescription("the entries, with when each is usable"))

  const addressBookAdd = Command.make(
    "add",
    { chain, address, label: optionalText("label", "LABEL", "a name for the entry"), by },
    (options) =>
      Effect.flatMap(addressBook, ({ merchantId }) =>
        withMerchants(
          merchantId,
          Effect.gen(function* () {
            const entry = yield* Effect.flatMap(AddressBook, (book) =>
              book.add(
                merchantId,
                { chain: options.chain, address: options.address, label: Option.getOrElse(options.label, () => "") },
                operator(options.by)
              )
            )
            console.log(`${entry.id}: ${entry.chain} ${entry.address} added, usable from ${entry.usable_from}`)
          })
        )
      )
  ).pipe(Command.withDescription("add an address; usable after the cooling-off"))

  const addressBookRemove = Command.make("remove", { chain, address, by }, (options) =>
    Effect.flatMap(addressBook, ({ merchantId }) =>
      withMerchants(
        merchantId,
        Effect.gen(function* () {
          const book = yield* AddressBook
          const id = yield* book.entryFor(merchantId, options.chain, options.address)
          if (id === undefined)
            return yield* refused(`${options.address} is not in the address book on ${options.chain}`)
          yield* book.remove(merchantId, id, operator(options.by))
          console.log(`${id}: ${options.chain} ${options.address} removed`)
        })
      )
    )
  ).pipe(Command.withDescription("remove an address"))

  // users MERCHANT_ID list | add LOGIN | remove LOGIN
  const users = Command.make("users", { merchantId })
  const login = Args.text({ name: "LOGIN" }).pipe(Args.withDescription("the console user's login name"))

  const usersList = Command.make("list", {}, () =>
    Effect.flatMap(users, ({ merchantId }) =>
      withMerchants(
        merchantId,
        Effect.gen(function* () {
          const people = yield* Effect.flatMap(ConsoleUsers, (u) => u.list(merchantId))
          for (const u of people.users)
            console.log(
              `${u.login_name} ${u.role}${u.approver_from === null ? "" : ` approvals count from ${u.approver_from.toISOString()}`}${u.totp ? " totp" : ""}`
            )
          for (const i of people.invites)
            console.log(
              `${i.login_name} ${i.role} invited by ${i.invited_by}, link valid until ${i.expires_at.toISOString()}`
            )
        })
      )
    )
  ).pipe(Command.withDescription("the console users and open invitations"))

  const usersAdd = Command.make(
    "add",
    {
      login,
      role: Options.text("role").pipe(Options.withPseudoName("approver|viewer|admin")),
      by
    },
    (options) =>
      Effect.flatMap(users, ({ merchantId }) =>
        withMerchants(
          merchantId,
          Effect.gen(function* () {
            const invite = yield* Effect.flatMap(ConsoleUsers, (u) =>
              u.invite(merchantId, { loginName: options.login, role: options.role }, operator(options.by))
            )
            console.log(
              `${invite.loginName} invited as ${invite.role}; the one-time link (valid until ${invite.expiresAt.toISOString()}):`
            )
            console.log(invite.url)
          })
        )
      )
  ).pipe(Command.withDescription("invite a console user; prints the one-time invitation link"))

  const usersRemove = Command.make("remove", { login, by }, (options) =>
    Effect.flatMap(users, ({ merchantId }) =>
      withMerchants(
        merchantId,
        Effect.gen(function* () {
          const consoleUsers = yield* ConsoleUsers
          const found = (yield* consoleUsers.list(merchantId)).users.find(
            (u) => u.login_name === options.login.toLowerCase()
          )
          if (found === undefined) return yield* refused(`${options.login} is not a console user of ${merchantId}`)
          yield* consoleUsers.remove(merchantId, found.id, operator(options.by))
          console.log(`${found.login_name} removed; their sessions have ended`)
        })
      )
    )
  ).pipe(Command.withDescription("remove a console user; their sessions end"))

  const merchants = Command.make("merchants", {}, () =>
    subcommandNeeded("npm run merchants --", ["policy", "address-book", "users"])
  ).pipe(
    Command.withDescription("a merchant's withdrawal policy, address book and console users, as the operator"),
    Command.withSubcommands([
      policy,
      addressBook.pipe(
        Command.withHandler(({ merchantId }) =>
          subcommandNeeded(`npm run merchants -- address-book ${merchantId}`, ["list", "add", "remove"])
        ),
        Command.withDescription("a merchant's withdrawal address book"),
        Command.withSubcommands([addressBookList, addressBookAdd, addressBookRemove])
      ),
      users.pipe(
        Command.withHandler(({ merchantId }) =>
          subcommandNeeded(`npm run merchants -- users ${merchantId}`, ["list", "add", "remove"])
        ),
        Command.withDescription("a merchant's console users"),
        Command.withSubcommands([usersList, usersAdd, usersRemove])
      )
    ])
  )
  return merchants
}

/**
 * What `npm run merchants` runs on: the service's database (DATABASE_URL, or the embedded PostgreSQL of the
 * service running in FACET_DATA_DIR), read when a subcommand runs; the service's seed opens the console's
 * secrets.
 */
export const MerchantsOperatorLive = Layer.unwrapEffect(
  Effect.map(operatorConfig([]), (config) =>
    MerchantServicesLive.pipe(
      Layer.provide(SecretBoxLive.pipe(Layer.provide(OperatorMasterSeedLive))),
      Layer.provide(operatorDatabaseLive(config))
    )
  )
)
