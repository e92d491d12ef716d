import { describe, expect, it } from "@effect/vitest"
import { totpCode, totpStep } from "./totp.js"

describe("TOTP (RFC 6238)", () => {
  it("matches the RFC's SHA-1 test vectors and accepts one step of drift", () => {
    // RFC 6238 appendix B: the ASCII secret "12345678901234567890", 8 digits there; the last 6 here
    const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    expect(totpCode(secret, 59_000)).toBe("287082")
    expect(totpCode(secret, 1_111_111_109_000)).toBe("081804")
    expect(totpCode(secret, 1_234_567_890_000)).toBe("005924")
    // the step a code was made for, so an account accepts each step once
    const step = Math.floor(1_234_567_890 / 30)
    expect(totpStep(secret, totpCode(secret, 1_234_567_890_000), 1_234_567_890_000)).toBe(step)
    expect(totpStep(secret, totpCode(secret, 1_234_567_890_000 - 30_000), 1_234_567_890_000)).toBe(step - 1)
    expect(totpStep(secret, totpCode(secret, 1_234_567_890_000 - 90_000), 1_234_567_890_000)).toBeUndefined()
    expect(totpStep(secret, "12345", 1_234_567_890_000)).toBeUndefined()
  })
})
