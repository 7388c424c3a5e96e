/** Pure helpers of the chaos suite: a seeded random source and the backoff's bound on runs. */
import { jitteredBackoffMs } from "../../runtime/backoff";

/** A size from the environment: a whole number ≥ `min`, or `fallback` when unset. */
export function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min)
    throw new Error(`${name}: expected a whole number ≥ ${min}, got ${JSON.stringify(raw)}`);
  return value;
}

/** A small seeded PRNG (mulberry32): a failing run is replayed with the seed it printed. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The most runs a key that keeps failing can start within `windowMs` of its first run: every
 * backoff at its shortest (the lowest jitter) and every run taking no time.
 */
export function maxRunsInWindow(windowMs: number, baseMs: number, maxMs: number, jitter: number): number {
  let runs = 1;
  let at = 0;
  for (let failures = 1; ; failures++) {
    at += jitteredBackoffMs(failures, baseMs, maxMs, jitter, 0);
    if (at > windowMs) return runs;
    runs++;
  }
}
