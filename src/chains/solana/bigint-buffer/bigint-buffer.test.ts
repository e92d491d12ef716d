import { describe, expect, it } from "@effect/vitest"
import { createTransferCheckedInstruction } from "@solana/spl-token"
import { Keypair } from "@solana/web3.js"
import { spawnSync } from "node:child_process"
import { toBigIntBE, toBigIntLE, toBufferBE, toBufferLE } from "bigint-buffer"

/**
 * The stand-in for bigint-buffer that package.json's overrides install under @solana/buffer-layout-utils:
 * token amounts encode to the same bytes, a value that does not fit is refused, and loading the Solana
 * libraries prints nothing.
 */
describe("bigint-buffer (Facet's stand-in)", () => {
  it("encodes and decodes both byte orders", () => {
    expect(toBufferLE(0x0102030405n, 8).toString("hex")).toBe("0504030201000000")
    expect(toBufferBE(0x0102030405n, 8).toString("hex")).toBe("0000000102030405")
    expect(toBigIntLE(Buffer.from("0504030201000000", "hex"))).toBe(0x0102030405n)
    expect(toBigIntBE(Buffer.from("0000000102030405", "hex"))).toBe(0x0102030405n)
    expect(toBigIntLE(Buffer.alloc(0))).toBe(0n)
    expect(toBufferLE(2n ** 64n - 1n, 8).toString("hex")).toBe("ffffffffffffffff")
    expect(toBufferLE(0n, 8).toString("hex")).toBe("0000000000000000")
  })

  it("refuses a value wider than its field or negative, where the original wrote another number", () => {
    expect(() => toBufferLE(2n ** 64n, 8)).toThrow("does not fit in 8 bytes")
    expect(() => toBufferBE(-1n, 8)).toThrow("negative")
  })

  it("is what a token transfer's amount is encoded with", () => {
    const [source, mint, destination, owner] = Array.from({ length: 4 }, () => Keypair.generate().publicKey)
    const transfer = (amount: bigint) =>
      createTransferCheckedInstruction(source, mint, destination, owner, amount, 6).data.toString("hex")
    // TransferChecked: instruction 12, the u64 amount little-endian, the decimals
    expect(transfer(12_500_000n)).toBe("0c20bcbe000000000006")
    expect(() => transfer(2n ** 64n)).toThrow("does not fit")
  })

  it("loads without a word on the console", () => {
    const run = spawnSync(
      process.execPath,
      ["-e", 'require("@solana/spl-token"); require("bigint-buffer").toBufferLE(1n, 8)'],
      { encoding: "utf8" }
    )
    expect({ status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
      status: 0,
      stdout: "",
      stderr: ""
    })
  })
})
