import { Duration } from "effect"

/** docs/reference/decisions.md: about 10 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h, for 24 h. */
const STEPS_SECONDS = [10, 30, 120, 600, 1800, 3600]
const THEN_EVERY_SECONDS = 7200
export const GIVE_UP_AFTER = Duration.hours(24)

/**
 * Delay before attempt `attempt + 1` after attempt `attempt` (1-based) failed, with ±20% jitter so a
 * merchant's backlog does not come back as one burst. `scale` shrinks the schedule for tests.
 */
export const retryDelay = (attempt: number, scale: number, random: number): Duration.Duration => {
  const base = STEPS_SECONDS[attempt - 1] ?? THEN_EVERY_SECONDS
  const jitter = 0.8 + 0.4 * random
  return Duration.millis(Math.max(1, Math.round(base * 1000 * jitter * scale)))
}
