import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Effect } from "effect"

/** scrypt with N = 2^15, r = 8, p = 1 (OWASP's floor), a 16-byte salt, a 32-byte key. */
const N = 32_768
const R = 8
const P = 1
const KEY_LENGTH = 32

const derive = (password: string, salt: Buffer, n: number, r: number, p: number) =>
  Effect.async<Buffer>((resume) => {
    scrypt(password.normalize("NFKC"), salt, KEY_LENGTH, { N: n, r, p, maxmem: 128 * n * r * 2 }, (error, key) => {
      resume(error === null ? Effect.succeed(key) : Effect.die(error))
    })
  })

/** `scrypt$N$r$p$salt$hash`, what console_users.password_hash keeps. */
export const hashPassword = (password: string) =>
  Effect.map(
    Effect.sync(() => randomBytes(16)).pipe(
      Effect.flatMap((salt) => Effect.map(derive(password, salt, N, R, P), (key) => ({ salt, key })))
    ),
    ({ salt, key }) => `scrypt$${N}$${R}$${P}$${salt.toString("base64url")}$${key.toString("base64url")}`
  )

export const verifyPassword = (password: string, stored: string) =>
  Effect.gen(function* () {
    const [scheme, n, r, p, salt, hash] = stored.split("$")
    if (
      scheme !== "scrypt" ||
      n === undefined ||
      r === undefined ||
      p === undefined ||
      salt === undefined ||
      hash === undefined
    )
      return false
    const expected = Buffer.from(hash, "base64url")
    const key = yield* derive(password, Buffer.from(salt, "base64url"), Number(n), Number(r), Number(p))
    return key.length === expected.length && timingSafeEqual(key, expected)
  })

const OBVIOUS = [
  "password",
  "passwort",
  "123456",
  "qwerty",
  "azerty",
  "letmein",
  "welcome",
  "admin",
  "iloveyou",
  "monkey",
  "dragon",
  "abc123",
  "111111"
]

/** Why a password is refused, in words; none when it is acceptable. */
export const passwordProblem = (password: string, loginName: string): string | undefined => {
  if (password.length < 12) return "the password must be at least 12 characters long"
  if (password.length > 256) return "the password must be at most 256 characters long"
  const lower = password.toLowerCase()
  if (loginName.length >= 3 && lower.includes(loginName.toLowerCase()))
    return "the password must not contain the login name"
  if (OBVIOUS.some((word) => lower.includes(word)))
    return "the password is too easy to guess (it contains a common password)"
  if (new Set(password).size < 6) return "the password needs more different characters"
  return undefined
}
