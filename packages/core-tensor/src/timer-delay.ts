/**
 * Timeouts the user gives in seconds, as timer delays. setTimeout takes a signed 32-bit number of
 * milliseconds and fires a longer delay at once (after 1 ms, with a TimeoutOverflowWarning), so a
 * generous timeout of 3000000 s used to time out every request immediately. Every timeout setting
 * is clamped here instead: a wait of ~24.8 days is no limit in practice, and a config that asks for
 * longer keeps working.
 */

/** The longest delay setTimeout honours: 2^31 − 1 ms, about 24.8 days. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The timer delay for a timeout of `seconds` (finite and > 0, as the settings check): at most {@link MAX_TIMER_MS}. */
export function timerDelayMs(seconds: number): number {
  return Math.min(seconds * 1000, MAX_TIMER_MS);
}
