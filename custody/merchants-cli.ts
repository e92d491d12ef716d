import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import * as os from "node:os"
import { AddressBook } from "./address-book.js"
import { describeSetting, WithdrawalPolicy } from "./withdrawal-policy.js"
import { OperatorError, operatorConfig, operatorDatabaseLive } from "../src/operator/operator-database.js"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { AuditLog, type AuditActor } from "../src/audit/audit-log.js"
import { ConsoleAccounts } from "../src/console/console-accounts.js"
import { ConsoleUsers } from "./console-users.js"
import { Chain } from "../src/domain/chain.js"
import { MasterSeedLive } from "../src/keys/master-seed.js"
import { SecretBoxLive } from "../src/keys/secret-box.js"
import { PolicyClock } from "../src/policy-clock.js"

const USAGE = `usage:
  npm run merchants -- policy MERCHANT_ID [--address-book on|off] [--cooling-off 24h] [--quorum N]
                      [--quorum-above ASSET=AMOUNT:N|off] [--limit ASSET=per_tx:AMOUNT,per_day:AMOUNT] [--cancel CHANGE_ID] [--by NAME]
  npm run merchants -- address-book MERCHANT_ID list | add --chain C --address A [--label L] | remove --chain C --address A [--by NAME]
  npm run merchants -- users MERCHANT_ID list | add LOGIN --role approver|viewer|admin | remove LOGIN [--by NAME]
Without an option, policy prints the policy in force and its pending changes. Loosening waits for the cooling-off, as in the console.`

/** Every value of a repeatable option. */
const options = (args: ReadonlyArray<string>, name: string) =>
  args.flatMap((arg, i) => (arg === name && args[i + 1] !== undefined ? [args[i + 1] ?? ""] : []))
const option = (args: ReadonlyArray<string>, name: string) => options(args, name)[0]

/** The settings a `policy` command asks for, from its options. */
const requestedSettings = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const wanted: Array<{ setting: string; value: string | null }> = []
    const addressBook = option(args, "--address-book")
    if (addressBook !== undefined) wanted.push({ setting: "address_book", value: addressBook })
    const coolingOff = option(args, "--cooling-off")
    if (coolingOff !== undefined) wanted.push({ setting: "cooling_off", value: coolingOff })
    const quorum = option(args, "--quorum")
    if (quorum !== undefined) wanted.push({ setting: "quorum", value: quorum })
    for (const tier of options(args, "--quorum-above")) {
      const [asset, value] = tier.split("=")
      if (asset === undefined || value === undefined)
        return yield* new OperatorError({
          message: `--quorum-above ${tier}: expected ASSET=AMOUNT:N, e.g. TRC20-USDT=1000:2`
        })
      wanted.push({ setting: `quorum_above:${asset}`, value })
    }
    for (const limit of options(args, "--limit")) {
      const [asset, spec] = limit.split("=")
      if (asset === undefined || spec === undefined)
        return yield* new OperatorError({ message: `--limit ${limit}: expected ASSET=per_tx:AMOUNT,per_day:AMOUNT` })
      for (const part of spec.split(",")) {
        const [kind, value] = part.split(":")
        if ((kind !== "per_tx" && kind !== "per_day") || value === undefined)
          return yield* new OperatorError({
            message: `--limit ${limit}: each part is per_tx:AMOUNT or per_day:AMOUNT (off for none)`
          })
        wanted.push({ setting: `${kind}:${asset}`, value })
      }
    }
    return wanted
  })

/**
 * `npm run merchants`: the operator's hand on a merchant's withdrawal policy, address book and console
 * users. Every act is in the merchant's audit log as the operator's (`--by`, default the OS user, from
 * this host), under the same rules as the console: a loosening waits for the cooling-off.
 */
const main = Effect.gen(function* () {
  const args = process.argv.slice(2)
  const [command, merchantId, sub, subject] = args
  if (
    (command !== "policy" && command !== "address-book" && command !== "users") ||
    merchantId === undefined ||
    merchantId.startsWith("--")
  ) {
    return yield* new OperatorError({ message: USAGE })
  }
  const actor: AuditActor = {
    kind: "operator",
    name: option(args, "--by") ?? os.userInfo().username,
    from: `cli@${os.hostname()}`
  }
  const config = yield* operatorConfig([])
  yield* Effect.gen(function* () {
    const policy = yield* WithdrawalPolicy
    if (command === "policy") {
      const cancel = option(args, "--cancel")
      if (cancel !== undefined) {
        yield* policy.cancelChange(merchantId, cancel, actor)
        console.log(`pending change ${cancel} cancelled`)
        return
      }
      const wanted = yield* requestedSettings(args)
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
      return
    }
    if (command === "address-book") {
      const book = yield* AddressBook
      if (sub === "list") {
        const listed = yield* book.list(merchantId, { limit: 100, offset: 0 })
        console.log(
          `address book ${listed.address_book}, cooling-off ${listed.cooling_off_seconds} s, ${listed.total} entr${listed.total === 1 ? "y" : "ies"}`
        )
        for (const e of listed.items)
          console.log(
            `${e.id} ${e.chain} ${e.address} ${e.status}${e.status === "pending" ? ` until ${e.usable_from}` : ""} "${e.label}" (by ${e.created_by})`
          )
        return
      }
      const chain = yield* Schema.decodeUnknown(Chain)(option(args, "--chain")).pipe(
        Effect.mapError(() => new OperatorError({ message: "--chain must be TRC20, BEP20 or SOLANA" }))
      )
      const address = option(args, "--address")
      if (address === undefined) return yield* new OperatorError({ message: "--address is needed" })
      if (sub === "add") {
        const entry = yield* book.add(merchantId, { chain, address, label: option(args, "--label") ?? "" }, actor)
        console.log(`${entry.id}: ${entry.chain} ${entry.address} added, usable from ${entry.usable_from}`)
        return
      }
      if (sub === "remove") {
        const id = yield* book.entryFor(merchantId, chain, address)
        if (id === undefined)
          return yield* new OperatorError({ message: `${address} is not in the address book on ${chain}` })
        yield* book.remove(merchantId, id, actor)
        console.log(`${id}: ${chain} ${address} removed`)
        return
      }
      return yield* new OperatorError({ message: USAGE })
    }
    const users = yield* ConsoleUsers
    if (sub === "list") {
      const people = yield* users.list(merchantId)
      for (const u of people.users)
        console.log(
          `${u.login_name} ${u.role}${u.approver_from === null ? "" : ` approvals count from ${u.approver_from.toISOString()}`}${u.totp ? " totp" : ""}`
        )
      for (const i of people.invites)
        console.log(
          `${i.login_name} ${i.role} invited by ${i.invited_by}, link valid until ${i.expires_at.toISOString()}`
        )
      return
    }
    if (subject === undefined || subject.startsWith("--")) return yield* new OperatorError({ message: USAGE })
    if (sub === "add") {
      const invite = yield* users.invite(merchantId, { loginName: subject, role: option(args, "--role") ?? "" }, actor)
      console.log(
        `${invite.loginName} invited as ${invite.role}; the one-time link (valid until ${invite.expiresAt.toISOString()}):`
      )
      console.log(invite.url)
      return
    }
    if (sub === "remove") {
      const found = (yield* users.list(merchantId)).users.find((u) => u.login_name === subject.toLowerCase())
      if (found === undefined)
        return yield* new OperatorError({ message: `${subject} is not a console user of ${merchantId}` })
      yield* users.remove(merchantId, found.id, actor)
      console.log(`${found.login_name} removed; their sessions have ended`)
      return
    }
    return yield* new OperatorError({ message: USAGE })
  }).pipe(
    Effect.catchTags({
      BadRequest: (e) => new OperatorError({ message: e.error }),
      NotFound: (e) => new OperatorError({ message: e.error }),
      Conflict: (e) => new OperatorError({ message: e.error }),
      ConsoleRefusal: (e) => new OperatorError({ message: e.message })
    }),
    Effect.provide(
      Layer.mergeAll(AddressBook.Default, ConsoleUsers.Default).pipe(
        Layer.provideMerge(WithdrawalPolicy.Default),
        Layer.provideMerge(Layer.mergeAll(AssetCatalog.Default, ConsoleAccounts.Default)),
        Layer.provideMerge(
          Layer.mergeAll(AuditLog.Default, PolicyClock.System, SecretBoxLive.pipe(Layer.provide(MasterSeedLive)))
        ),
        Layer.provideMerge(operatorDatabaseLive(config))
      )
    )
  )
}).pipe(
  Effect.catchTag("OperatorError", (error) =>
    Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 2
    })
  )
)

NodeRuntime.runMain(main)
