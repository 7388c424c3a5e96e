// Plain JSON values as the GCE emulator stores and exchanges them, plus the Pulumi wire sentinels
// (unknowns, secrets, resource references, output values) that can appear in provider inputs.

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

/** The value the engine sends for a property that is not known yet (only during preview). */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
/** Key that marks a special Pulumi value (secret, resource reference, output value). */
export const SIG_KEY = "4dabf18193072939515e22adb298388d";
export const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
export const RESOURCE_REF_SIG = "5cf8f73096256a8f31e491e813e4eb8e";
export const OUTPUT_VALUE_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4";

export function isJsonObject(v: Json | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Narrows an arbitrary value (e.g. JSON.parse or protobuf Struct output) to Json, dropping undefined members. */
export function toJson(v: unknown, where = "value"): Json {
  if (v === null || typeof v === "boolean" || typeof v === "string") {
    return v;
  }
  if (typeof v === "number") {
    if (!Number.isFinite(v)) {
      throw new TypeError(`${where}: non-finite number`);
    }
    return v;
  }
  if (Array.isArray(v)) {
    return v.map((e: unknown, i) => (e === undefined ? null : toJson(e, `${where}[${i}]`)));
  }
  if (typeof v === "object") {
    const out: JsonObject = {};
    for (const [k, e] of Object.entries(v)) {
      if (e !== undefined) {
        out[k] = toJson(e, `${where}.${k}`);
      }
    }
    return out;
  }
  throw new TypeError(`${where}: ${typeof v} is not JSON`);
}

export function toJsonObject(v: unknown, where = "value"): JsonObject {
  const j = toJson(v, where);
  if (!isJsonObject(j)) {
    throw new TypeError(`${where}: expected a JSON object`);
  }
  return j;
}

export function clone<T extends Json>(v: T): T {
  return structuredClone(v);
}

/** True when the value is, or contains, the unknown sentinel (or an output value without a value). */
export function containsUnknown(v: Json | undefined): boolean {
  if (v === UNKNOWN) {
    return true;
  }
  if (Array.isArray(v)) {
    return v.some(containsUnknown);
  }
  if (isJsonObject(v)) {
    if (v[SIG_KEY] === OUTPUT_VALUE_SIG && !("value" in v)) {
      return true;
    }
    return Object.values(v).some(containsUnknown);
  }
  return false;
}

/** True when the value is, or contains, a secret (or a secret output value). */
export function containsSecret(v: Json | undefined): boolean {
  if (Array.isArray(v)) {
    return v.some(containsSecret);
  }
  if (isJsonObject(v)) {
    if (v[SIG_KEY] === SECRET_SIG) {
      return true;
    }
    if (v[SIG_KEY] === OUTPUT_VALUE_SIG && v.secret === true) {
      return true;
    }
    return Object.values(v).some(containsSecret);
  }
  return false;
}

/**
 * Strips the Pulumi wire wrappers: secrets become their plain value, output values their value
 * (or UNKNOWN when they have none), resource references their id (else their URN).
 */
export function unwrap(v: Json): Json {
  if (Array.isArray(v)) {
    return v.map(unwrap);
  }
  if (!isJsonObject(v)) {
    return v;
  }
  const sig = v[SIG_KEY];
  if (sig === SECRET_SIG) {
    return unwrap(v.value ?? null);
  }
  if (sig === OUTPUT_VALUE_SIG) {
    return "value" in v ? unwrap(v.value ?? null) : UNKNOWN;
  }
  if (sig === RESOURCE_REF_SIG) {
    const id = v.id;
    if (typeof id === "string" && id !== "") {
      return id;
    }
    return typeof v.urn === "string" ? v.urn : null;
  }
  const out: JsonObject = {};
  for (const [k, e] of Object.entries(v)) {
    out[k] = unwrap(e);
  }
  return out;
}

export function makeSecret(v: Json): JsonObject {
  return { [SIG_KEY]: SECRET_SIG, value: v };
}

/** Canonical JSON (object keys sorted) so that equal values print equally. */
export function canonical(v: Json | undefined): string {
  if (v === undefined) {
    return "undefined";
  }
  if (Array.isArray(v)) {
    return `[${v.map(canonical).join(",")}]`;
  }
  if (isJsonObject(v)) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

export function deepEqual(a: Json | undefined, b: Json | undefined): boolean {
  return canonical(a) === canonical(b);
}
