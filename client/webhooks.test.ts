import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, TestClock } from "effect"
import { openApiDocument } from "../http/openapi-document.js"
import { productionFiles, sourceOf } from "../test/source-files.js"
import {
  FacetWebhookError,
  idempotencyKeyOf,
  OrderBodyEvent,
  type OrderWebhook,
  type RefundWebhook,
  signFacetWebhook,
  type WalletDepositWebhook,
  WEBHOOK_EVENT_TYPES,
  verifyFacetWebhook,
  verifyFacetWebhookEffect,
  type WithdrawalWebhook
} from "./src/webhooks.js"

const SECRET = "whsec_test_secret"
const NOW = Date.parse("2026-11-26T12:00:00.000Z")
const at = (minutesAgo: number) => new Date(NOW - minutesAgo * 60_000).toISOString()
/** The kit checked at NOW, whatever day the suite runs on (the bodies are dated around NOW). */
const verifyAtNow: typeof verifyFacetWebhook = (rawBody, headers, secret, options) =>
  verifyFacetWebhook(rawBody, headers, secret, { now: () => NOW, ...options })

const order: (typeof OrderWebhook.Type)["order"] = {
  order_id: "ord_1",
  out_trade_no: "INV-1",
  status: "PAID",
  amount: "12.5",
  paid_amount: "12.5",
  refunded_amount: "0",
  currency: "USDT",
  chain: "TRC20",
  checkout_mode: "single_asset",
  pay_address: "TPay",
  checkout_url: "https://pay.example/checkout/ord_1",
  late_payment: false,
  available_assets: [],
  expire_at: at(-10),
  created_at: at(20),
  updated_at: at(1)
}
const payment = {
  chain: "TRC20",
  currency: "USDT",
  tx_hash: "0xabc",
  to_address: "TPay",
  event_index: 0,
  amount: "12.5",
  block_number: 100,
  confirmations: 19
}
const confirmed: typeof OrderWebhook.Type = { event: "payment.confirmed", order, payment, created_at: at(1) }
const deposit: typeof WalletDepositWebhook.Type = {
  event: "wallet.deposit.confirmed",
  deposit_address_id: "dep_1",
  external_user_id: "user-7",
  wallet_id: "wal_1",
  chain: "BEP20",
  currency: "USDT",
  amount: "5",
  tx_hash: "0xdef",
  from_address: null,
  to_address: "0xTo",
  event_index: 3,
  block_number: 200,
  confirmations: 15,
  confirmed_at: at(1),
  created_at: at(1)
}
const withdrawal: typeof WithdrawalWebhook.Type = {
  event: "wallet.withdrawal.failed",
  withdrawal: {
    withdrawal_id: "wd_1",
    out_withdrawal_no: null,
    status: "FAILED",
    chain: "TRC20",
    currency: "USDT",
    amount: "10",
    platform_fee: "0.01",
    network_fee: "1",
    network_fee_asset: "TRX",
    network_fee_included: false,
    total_fee: "0.01",
    net_amount: "9.99",
    to_address: "TTo",
    tx_hash: null,
    fee_policy_version: "2026-07-19.1",
    failure_reason: "rejected",
    required_approvals: 1,
    approvals: [],
    kind: "withdrawal",
    created_at: at(5),
    updated_at: at(1)
  },
  created_at: at(1)
}
const refund: typeof RefundWebhook.Type = {
  event: "refund.updated",
  refund: {
    refund_id: "rf_1",
    order_id: "ord_1",
    status: "CANCELLED",
    chain: "TRC20",
    currency: "USDT",
    amount: "3",
    order_amount: null,
    rate: null,
    reason: null,
    claim_expires_at: at(-600),
    to_address: null,
    withdrawal_id: null,
    net_amount: null,
    tx_hash: null,
    failure_reason: null,
    claimed_at: null,
    created_at: at(5),
    updated_at: at(1)
  },
  created_at: at(1)
}

/** A delivery as the service makes it: the body's bytes, signed, with its headers. */
const delivery = (body: unknown, event: string, key: string, secret = SECRET) => {
  const raw = JSON.stringify(body)
  return {
    raw,
    headers: {
      "content-type": "application/json",
      "x-facet-event": event,
      "x-facet-idempotency-key": key,
      "x-facet-signature": signFacetWebhook(raw, secret),
      "x-facet-delivery-id": "evt_1",
      "x-facet-attempt": "2"
    }
  }
}

/** Why `f` threw a FacetWebhookError, and the status it says to answer (undefined: it did not throw). */
const refusal = (f: () => unknown) => {
  try {
    f()
  } catch (error) {
    if (error instanceof FacetWebhookError) return { reason: error.reason, status: error.status }
    throw error
  }
  return undefined
}

describe("the webhook receiver kit", () => {
  it("each event's idempotency key is the contract's formula over its body", () => {
    expect(idempotencyKeyOf(confirmed)).toBe("deposit:TRC20:USDT:0xabc:TPay:0:payment.confirmed")
    expect(
      idempotencyKeyOf({ event: "order.expired", order: { ...order, status: "EXPIRED" }, created_at: at(1) })
    ).toBe("ord_1:order.expired:EXPIRED")
    expect(idempotencyKeyOf(deposit)).toBe("wallet.deposit.confirmed:BEP20:USDT:0xdef:0xTo:3")
    expect(idempotencyKeyOf(withdrawal)).toBe("wallet.withdrawal.failed:wd_1:")
    expect(
      idempotencyKeyOf({
        ...withdrawal,
        event: "wallet.withdrawal.completed",
        withdrawal: { ...withdrawal.withdrawal, tx_hash: "0x9" }
      })
    ).toBe("wallet.withdrawal.completed:wd_1:0x9")
    expect(idempotencyKeyOf(refund)).toBe("refund.updated:rf_1:CANCELLED")
  })

  it("verifies the signature over the raw bytes, then gives the typed event", () => {
    const sent = delivery(confirmed, "order.updated", idempotencyKeyOf(confirmed))
    const verified = verifyAtNow(Buffer.from(sent.raw), sent.headers, SECRET)
    expect(verified).toMatchObject({
      type: "order.updated",
      idempotencyKey: "deposit:TRC20:USDT:0xabc:TPay:0:payment.confirmed",
      deliveryId: "evt_1",
      attempt: 2,
      body: { event: "payment.confirmed", order: { order_id: "ord_1", status: "PAID" } }
    })
    // a string, a Uint8Array, web Headers, header names in any case: the same
    const upper = Object.fromEntries(Object.entries(sent.headers).map(([k, v]) => [k.toUpperCase(), v]))
    expect(verifyAtNow(sent.raw, upper, SECRET).idempotencyKey).toBe(verified.idempotencyKey)
    expect(verifyAtNow(new TextEncoder().encode(sent.raw), new Headers(sent.headers), SECRET).type).toBe(
      "order.updated"
    )
    for (const [body, event] of [
      [deposit, "wallet.deposit.confirmed"],
      [withdrawal, "wallet.withdrawal.failed"],
      [refund, "refund.updated"]
    ] as const) {
      const one = delivery(body, event, idempotencyKeyOf(body))
      expect(verifyAtNow(one.raw, one.headers, SECRET)).toMatchObject({ type: event, body: { event } })
    }
  })

  it("refuses a forged or altered delivery before reading its body (401)", () => {
    const sent = delivery(confirmed, "order.updated", idempotencyKeyOf(confirmed))
    const forged = delivery(confirmed, "order.updated", idempotencyKeyOf(confirmed), "whsec_someone_else")
    expect(refusal(() => verifyAtNow(forged.raw, forged.headers, SECRET))).toEqual({
      reason: "signature",
      status: 401
    })
    // the same JSON re-serialized (what a parsed body would give) is other bytes
    const reformatted = JSON.stringify(JSON.parse(sent.raw), null, 2)
    expect(refusal(() => verifyAtNow(reformatted, sent.headers, SECRET))?.reason).toBe("signature")
    const altered = sent.raw.replace('"12.5"', '"125"')
    expect(refusal(() => verifyAtNow(altered, sent.headers, SECRET))?.reason).toBe("signature")
    for (const signature of [undefined, "", sent.headers["x-facet-signature"].toUpperCase(), "ab".repeat(31)]) {
      const headers = { ...sent.headers, "x-facet-signature": signature }
      expect(refusal(() => verifyAtNow(sent.raw, headers, SECRET))?.reason).toBe("signature")
    }
    const twice = { ...sent.headers, "x-facet-signature": [sent.headers["x-facet-signature"], "0".repeat(64)] }
    expect(refusal(() => verifyAtNow(sent.raw, twice, SECRET))?.reason).toBe("signature")
  })

  it("refuses a signed body that is no event, or whose unsigned headers do not match it (400)", () => {
    const notAnEvent = delivery({ hello: "world" }, "order.updated", "k")
    expect(refusal(() => verifyAtNow(notAnEvent.raw, notAnEvent.headers, SECRET))).toEqual({
      reason: "body",
      status: 400
    })
    const key = idempotencyKeyOf(confirmed)
    const wrongEvent = delivery(confirmed, "refund.updated", key)
    expect(refusal(() => verifyAtNow(wrongEvent.raw, wrongEvent.headers, SECRET))?.reason).toBe("event")
    // a replay under a new key would pass deduplication: the key is checked against the signed body
    const newKey = delivery(confirmed, "order.updated", `${key}-replayed`)
    expect(refusal(() => verifyAtNow(newKey.raw, newKey.headers, SECRET))?.reason).toBe("idempotency_key")
    const counted = delivery(confirmed, "order.updated", `${key}#2`)
    expect(refusal(() => verifyAtNow(counted.raw, counted.headers, SECRET))?.reason).toBe("idempotency_key")
  })

  it("takes a reversal's or restoration's #n from its signed body: a replay under another #n is refused", () => {
    const base = "deposit:TRC20:USDT:0xabc:TPay:0:payment.reversed"
    const firstReversal: typeof OrderWebhook.Type = { ...confirmed, event: "payment.reversed", occurrence: 1 }
    const secondReversal: typeof OrderWebhook.Type = { ...firstReversal, occurrence: 2 }
    expect(idempotencyKeyOf(firstReversal)).toBe(base)
    expect(idempotencyKeyOf(secondReversal)).toBe(`${base}#2`)
    expect(idempotencyKeyOf({ ...secondReversal, event: "payment.restored" })).toBe(
      "deposit:TRC20:USDT:0xabc:TPay:0:payment.restored#2"
    )
    const verify = (body: unknown, key: string) => {
      const sent = delivery(body, "order.updated", key)
      return verifyAtNow(sent.raw, sent.headers, SECRET)
    }
    // the second reversal of one payment is a delivery of its own, `#2`, and its body says so
    expect(verify(secondReversal, `${base}#2`)).toMatchObject({
      idempotencyKey: `${base}#2`,
      body: { event: "payment.reversed", occurrence: 2 }
    })
    expect(verify(firstReversal, base).idempotencyKey).toBe(base)
    // a captured delivery replayed under a made-up `#n` would pass a receiver's deduplication: refused
    for (const replayed of [`${base}#2`, `${base}#3`, `${base}#999999999`, `${base}#1`])
      expect(refusal(() => verify(firstReversal, replayed))?.reason).toBe("idempotency_key")
    for (const replayed of [base, `${base}#3`, `${base}#02`])
      expect(refusal(() => verify(secondReversal, replayed))?.reason).toBe("idempotency_key")
    // a body stored before the service wrote `occurrence` counts as the first: its key only, never a #n
    const unnumbered: typeof OrderWebhook.Type = { ...confirmed, event: "payment.reversed" }
    expect(verify(unnumbered, base).idempotencyKey).toBe(base)
    expect(refusal(() => verify(unnumbered, `${base}#2`))?.reason).toBe("idempotency_key")
    // an occurrence that is no count is no Facet body
    for (const occurrence of [0, 1.5, "2"])
      expect(refusal(() => verify({ ...firstReversal, occurrence }, base))?.reason).toBe("body")
  })

  it("a field it does not know is ignored; a value it does not know (event, status, chain) is refused, 400 body", () => {
    // the service adds fields: an older kit reads the body it knows
    const added = { ...confirmed, settlement: { batch: "b1" } }
    const sent = delivery(added, "order.updated", idempotencyKeyOf(confirmed))
    expect(verifyAtNow(sent.raw, sent.headers, SECRET).body).toMatchObject({ event: "payment.confirmed" })
    // a new member of a closed set is refused, loudly and by name (docs/guides/client.md: upgrade, then replay)
    const unknown = (body: unknown, event: string, key: string) => {
      const one = delivery(body, event, key)
      try {
        verifyAtNow(one.raw, one.headers, SECRET)
      } catch (error) {
        if (error instanceof FacetWebhookError)
          return { reason: error.reason, status: error.status, message: error.message }
        throw error
      }
      return undefined
    }
    const newStatus = unknown({ ...refund, refund: { ...refund.refund, status: "DISPUTED" } }, "refund.updated", "k")
    expect(newStatus).toMatchObject({ reason: "body", status: 400, message: expect.stringContaining("DISPUTED") })
    const newChain = unknown({ ...confirmed, order: { ...order, chain: "TON" } }, "order.updated", "k")
    expect(newChain).toMatchObject({ reason: "body", status: 400, message: expect.stringContaining("TON") })
    const newEvent = unknown({ ...confirmed, event: "payment.disputed" }, "order.updated", "k")
    expect(newEvent).toMatchObject({
      reason: "body",
      status: 400,
      message: expect.stringContaining("payment.disputed")
    })
  })

  it.effect("refuses a created_at older than the service's retries (25 h by default) or from the future", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(NOW)
      const sentAt = (minutesAgo: number) => {
        const body = { ...deposit, created_at: at(minutesAgo) }
        return delivery(body, "wallet.deposit.confirmed", idempotencyKeyOf(body))
      }
      const verify = (minutesAgo: number, options = {}) => {
        const sent = sentAt(minutesAgo)
        return Effect.either(verifyFacetWebhookEffect(sent.raw, sent.headers, SECRET, options))
      }
      // the service's last retry comes about 24 h after the event, with the same bytes
      expect(Either.isRight(yield* verify(24 * 60))).toBe(true)
      const stale = yield* verify(26 * 60)
      expect(Either.isLeft(stale) && stale.left).toMatchObject({ reason: "stale", status: 400 })
      expect(Either.isLeft(yield* verify(10, { maxAge: "5 minutes" }))).toBe(true)
      expect(Either.isRight(yield* verify(-4))).toBe(true)
      expect(Either.isLeft(yield* verify(-6))).toBe(true)
    })
  )

  it("without Effect, checks created_at against `now` (default Date.now)", () => {
    const dated = (createdAt: number) => {
      const body = { ...deposit, created_at: new Date(createdAt).toISOString() }
      return delivery(body, "wallet.deposit.confirmed", idempotencyKeyOf(body))
    }
    // the default clock: a body made a minute ago by today's clock passes, one made 26 h ago is stale
    const fresh = dated(Date.now() - 60_000)
    expect(verifyFacetWebhook(fresh.raw, fresh.headers, SECRET).type).toBe("wallet.deposit.confirmed")
    const old = dated(Date.now() - 26 * 3_600_000)
    expect(refusal(() => verifyFacetWebhook(old.raw, old.headers, SECRET))?.reason).toBe("stale")
    // a given clock: a stored delivery is checked at the time it arrived
    const stored = dated(NOW - 60_000)
    expect(verifyFacetWebhook(stored.raw, stored.headers, SECRET, { now: () => NOW }).type).toBe(
      "wallet.deposit.confirmed"
    )
    expect(
      refusal(() => verifyFacetWebhook(stored.raw, stored.headers, SECRET, { now: () => NOW + 26 * 3_600_000 }))
    ).toMatchObject({ reason: "stale", status: 400 })
  })

  it("has a schema for every event the service writes to its outbox, and the published document agrees", () => {
    const published = Object.keys(Object(openApiDocument("http://facet.test").webhooks)).sort()
    expect([...WEBHOOK_EVENT_TYPES].sort()).toEqual(published)
    // every event name in the code that writes the outbox is a transport event or an order body event
    const names = new Set<string>([...WEBHOOK_EVENT_TYPES, ...OrderBodyEvent.literals])
    const writers = ["src", "indexer", "custody", "http"]
      .flatMap((dir) => productionFiles(dir))
      .filter((file) => /outbox\.enqueue\(|INSERT INTO webhook_events/.test(sourceOf(file)))
    expect(writers.length).toBeGreaterThanOrEqual(5)
    const written = writers.flatMap((file) =>
      [...sourceOf(file).matchAll(/["'`]((?:order|payment|wallet|refund)\.[a-z_.]+)["'`]/g)].map((m) => m[1] ?? "")
    )
    expect(written.filter((name) => !names.has(name))).toEqual([])
    expect(WEBHOOK_EVENT_TYPES.filter((type) => !written.includes(type))).toEqual([])
  })
})
