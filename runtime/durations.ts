/**
 * The one duration grammar of dccm: every duration flag and config key (the daemon's and the node
 * controller's) is read here, so `30s` means the same wherever it is written.
 *
 *     duration = term { term }                e.g. 500ms, 30s, 1.5s, 10m, 1h, 1h30m
 *     term     = digits [ "." digits ] unit
 *     unit     = "ms" | "s" | "m" | "h"
 *
 * Go's time.ParseDuration (what Kubernetes' own duration flags read) without its sign, its `0`
 * and its sub-millisecond units. Blanks around the value are ignored, none inside it. The value is
 * the sum of the terms, rounded to whole milliseconds (beyond Number.MAX_SAFE_INTEGER: refused). A unit is always required: a bare number
 * (`600`, or a YAML number) would have to guess between milliseconds and seconds.
 */

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
type Unit = keyof typeof UNIT_MS;

/** Node's timers take at most 2^31−1 ms (a longer delay fires at once); 596h is the last whole hour below. */
export const MAX_DURATION_MS = 596 * UNIT_MS.h;

const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
// "ms" before "m", so 5ms is one term and not 5 minutes followed by a stray "s".
const TERM = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/** Milliseconds of `text`, or undefined when it does not follow the grammar above. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (!DURATION.test(trimmed)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of trimmed.matchAll(TERM)) ms += Number(amount) * UNIT_MS[unit as Unit];
  const rounded = Math.round(ms);
  // Hundreds of digits overflow to Infinity: not a duration anything can wait for.
  return Number.isSafeInteger(rounded) ? rounded : undefined;
}

/** The shortest single-unit spelling parseDuration reads back exactly: 300000 → "5m". */
export function formatDuration(ms: number): string {
  for (const unit of ["h", "m", "s"] as const) {
    const factor = UNIT_MS[unit];
    if (ms >= factor && ms % factor === 0) return `${ms / factor}${unit}`;
  }
  return `${ms}ms`;
}

export interface DurationBounds {
  /** Smallest value accepted, in ms (default 0). */
  readonly minMs?: number;
}

export type DurationSetting =
  { readonly ok: true; readonly ms: number } | { readonly ok: false; readonly problem: string };

/**
 * A duration setting as read from a flag (a string) or a config file (any YAML value): its value,
 * or one problem line naming the setting exactly as `name` spells it (`--drift-interval`,
 * `nodeLifecyclePeriod`).
 */
export function durationSetting(value: unknown, name: string, bounds: DurationBounds = {}): DurationSetting {
  const minMs = bounds.minMs ?? 0;
  const ms = typeof value === "string" ? parseDuration(value) : undefined;
  if (ms === undefined)
    return {
      ok: false,
      problem: `${name}: expected a duration such as 30s, 10m or 1h30m, got ${JSON.stringify(value)}`,
    };
  if (ms < minMs)
    return {
      ok: false,
      problem: `${name}: expected a duration of at least ${formatDuration(minMs)}, got ${JSON.stringify(value)}`,
    };
  if (ms > MAX_DURATION_MS)
    return {
      ok: false,
      problem: `${name}: expected a duration of at most ${formatDuration(MAX_DURATION_MS)}, got ${JSON.stringify(value)}`,
    };
  return { ok: true, ms };
}

/**
 * An optional duration setting, as every caller reads one: `fallback` when unset (undefined, null
 * or "", as the model's keys), else its value; a bad value adds its problem and gives `fallback`,
 * so that every other setting is still checked.
 */
export function optionalDuration(
  value: unknown,
  name: string,
  fallback: number,
  problems: string[],
  bounds: DurationBounds = {},
): number {
  if (value === undefined || value === null || value === "") return fallback;
  const read = durationSetting(value, name, bounds);
  if (read.ok) return read.ms;
  problems.push(read.problem);
  return fallback;
}
