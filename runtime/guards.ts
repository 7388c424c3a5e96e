/** Narrowing of untyped JSON (API bodies, checkpoints, kubectl dumps). */

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
