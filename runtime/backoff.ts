/**
 * The one backoff of the runtime: the work queue (per key), watch restarts and Compute API retries
 * all double from a base up to a cap; they differ only in how they spread it.
 */

/** base × 2^(failures−1), capped; 0 before the first failure. */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
}

/** backoffMs spread over ±jitter by `random` (uniform in [0, 1)), never above the maximum. */
export function jitteredBackoffMs(
  failures: number,
  baseMs: number,
  maxMs: number,
  jitter: number,
  random: number,
): number {
  const plain = backoffMs(failures, baseMs, maxMs);
  return Math.min(maxMs, Math.round(plain * (1 + jitter * (2 * random - 1))));
}

/**
 * "Full jitter" (uniform in [0, backoff)): for many clients retrying one API at once, which spreads
 * them best (AWS Architecture Blog, "Exponential Backoff And Jitter").
 */
export function fullJitterBackoffMs(failures: number, baseMs: number, maxMs: number, random: number): number {
  return Math.floor(random * backoffMs(failures, baseMs, maxMs));
}
