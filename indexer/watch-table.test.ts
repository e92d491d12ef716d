import { describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { newId } from "../src/ids.js"
import { evmAddress, solanaAddress, tronAddress } from "../src/keys/address-encoding.js"
import { addressKeysOf } from "./address-keys.js"
import { type WatchedWallet, WatchTable } from "./watch-table.js"

const wallet = (i: number): WatchedWallet => ({
  walletId: newId("wal"),
  merchantId: `mch_${i % 7}`,
  purpose: i % 3 === 0 ? "order" : "deposit"
})

describe("watch table", () => {
  it("finds every address it holds and none it does not, on each chain's real address shapes, across growth", () => {
    const shapes = [
      { chain: "TRC20" as const, address: () => tronAddress(randomBytes(20)) },
      { chain: "BEP20" as const, address: () => evmAddress(randomBytes(20)) },
      { chain: "SOLANA" as const, address: () => solanaAddress(randomBytes(32)) }
    ]
    for (const { chain, address } of shapes) {
      const table = new WatchTable(addressKeysOf(chain), 16)
      const held = new Map<string, WatchedWallet>()
      for (let i = 0; i < 20_000; i++) {
        const a = address()
        const w = wallet(i)
        held.set(a, w)
        table.add(a, w)
      }
      expect(table.size).toBe(held.size)
      for (const [a, w] of held) expect(table.lookup(a)).toEqual(w)
      for (let i = 0; i < 20_000; i++) expect(table.lookup(address())).toBeUndefined()
    }
  })

  it("tells apart addresses that differ in one character, or by a prefix, and EVM addresses only by value", () => {
    const tron = new WatchTable(addressKeysOf("TRC20"))
    const a = tronAddress(new Uint8Array(20).fill(7))
    tron.add(a, wallet(1))
    expect(tron.lookup(a.slice(0, -1))).toBeUndefined()
    expect(tron.lookup(`${a.slice(0, -1)}${a.endsWith("z") ? "y" : "z"}`)).toBeUndefined()
    expect(tron.lookup(a)).toBeDefined()

    const evm = new WatchTable(addressKeysOf("BEP20"))
    const e = evmAddress(new Uint8Array(20).fill(0xab))
    evm.add(e, wallet(2))
    expect(evm.lookup(e.toLowerCase())?.walletId).toBe(evm.lookup(e.toUpperCase().replace("0X", "0x"))?.walletId)
    expect(evm.lookup(`${e}0`)).toBeUndefined()
  })

  it("keeps addresses and wallet ids of other shapes exactly, and a second add of an address replaces its wallet", () => {
    const table = new WatchTable(addressKeysOf("TRC20"))
    const odd = { walletId: "w31", merchantId: "m1", purpose: "deposit" as const }
    table.add("not a base58 address\twith a tab", odd)
    table.add("TwalletA", odd)
    expect(table.lookup("not a base58 address\twith a tab")).toEqual(odd)
    expect(table.lookup("TwalletA")).toEqual(odd)
    const replaced = wallet(3)
    table.add("TwalletA", replaced)
    expect(table.lookup("TwalletA")).toEqual(replaced)
    expect(table.size).toBe(2)
  })

  it("costs about sixty bytes an address in its arrays", () => {
    const table = new WatchTable(addressKeysOf("TRC20"))
    for (let i = 0; i < 100_000; i++) table.add(tronAddress(randomBytes(20)), wallet(i))
    table.trim()
    expect(table.arrayBytes / table.size).toBeLessThan(64)
  })
})
