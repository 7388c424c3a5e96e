/**
 * Pure: what a stack declared of each GCE resource, and whether a listed resource still matches it.
 *
 * The drift pass (drift/scanner.ts) compares GCE's listing with each stack's applied state instead
 * of running `up --refresh` on every stack: a stack whose resources are all there and unchanged
 * needs no engine run. What is compared is exactly what `up` enforces, the program's inputs as last
 * applied (the engine's state), minus what `up` does not enforce: the resource's identity (project,
 * location, name) and the fields the components ignore (IGNORED_CHANGES, shared with them).
 *
 * @pulumi/gcp's inputs name most fields as the Compute API does; the few that differ are renamed
 * here (REST_NAMES). Values are compared in a canonical form: a link and the path it names are the
 * same (`https://compute.googleapis.com/compute/v1/projects/p/…` = `projects/p/…`), a bare name
 * equals a link ending in it (the provider expands `network: default`), lists are sets (GCE keeps
 * no order dccm relies on), an empty value equals an absent one (GCE omits false, empty and zero
 * defaults), a one-element list equals its element (the provider's single `healthChecks` is the
 * API's list of one), and a port range `80` equals `80-80` (GCE stores the range form; the
 * provider suppresses that diff, terraform-provider-google resource_compute_forwarding_rule.go
 * portRangeDiffSuppress). Anything else that differs is drift: a false alarm costs one refresh of
 * that stack, which is what every pass cost before.
 */
import { isDeclaredGceType } from "../gce/ids";
import { IGNORED_CHANGES } from "../components/ignored";

import { isRecord } from "../runtime/guards";
import { resourceIdOfPath } from "../gce/resources";

/** The resource's identity: where and under which name it lives, never drift. */
const IDENTITY = new Set(["project", "region", "zone", "name"]);

/** @pulumi/gcp input name → Compute API field name, per type (nested fields as `outer.inner`). */
const REST_NAMES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "gcp:compute/forwardingRule:ForwardingRule": { ipAddress: "IPAddress", ipProtocol: "IPProtocol" },
  "gcp:compute/firewall:Firewall": {
    allows: "allowed",
    "allows.protocol": "IPProtocol",
    denies: "denied",
    "denies.protocol": "IPProtocol",
  },
};

/** One GCE resource as a stack last applied it: its id (`kind/scope/name`) and its declared fields, canonical. */
export interface AppliedResource {
  id: string;
  /** JSON of the canonical declared fields under their Compute API names (compact: kept for every stack). */
  declared: string;
}

type Canonical = string | number | boolean | Canonical[] | { [key: string]: Canonical };

function isEmpty(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    value === false ||
    value === "" ||
    (Array.isArray(value) && value.length === 0) ||
    (isRecord(value) && Object.keys(value).length === 0)
  );
}

/** `…/projects/p/regions/r/x/y` → `projects/p/regions/r/x/y`; any other string as it is. */
function canonicalString(value: string): string {
  const at = value.indexOf("projects/");
  return at > 0 && value.slice(0, at).includes("/") ? value.slice(at) : value;
}

function canonical(value: unknown, type: string, path: string): Canonical | undefined {
  if (isEmpty(value)) return undefined;
  if (typeof value === "string") return canonicalString(value);
  if (typeof value === "number" || typeof value === "boolean") return value;
  if (Array.isArray(value)) {
    const items = value
      .map((item) => canonical(item, type, path))
      .filter((item): item is Canonical => item !== undefined);
    items.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    return items.length === 1 && typeof items[0] !== "object" ? items[0] : items;
  }
  if (isRecord(value)) {
    const renamed = new Map<string, Canonical>();
    for (const key of Object.keys(value)) {
      const inner = canonical(value[key], type, path === "" ? key : `${path}.${key}`);
      if (inner !== undefined) renamed.set(REST_NAMES[type]?.[path === "" ? key : `${path}.${key}`] ?? key, inner);
    }
    if (renamed.size === 0) return undefined;
    const out: Record<string, Canonical> = {};
    for (const key of [...renamed.keys()].sort()) out[key] = renamed.get(key) as Canonical;
    return out;
  }
  return undefined;
}

/**
 * Pure: the resource a stack's state records (type, id, inputs), as the drift pass compares it;
 * undefined for anything that is not a GCE resource dccm declares (the stack, components, the provider).
 */
export function appliedResource(
  type: string,
  id: unknown,
  inputs: Record<string, unknown>,
): AppliedResource | undefined {
  if (!isDeclaredGceType(type) || typeof id !== "string") return undefined;
  const resourceId = resourceIdOfPath(id);
  if (resourceId === undefined) return undefined;
  const ignored = new Set<string>((IGNORED_CHANGES as Readonly<Record<string, readonly string[]>>)[type] ?? []);
  const declared: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(inputs))
    if (!IDENTITY.has(key) && !ignored.has(key) && !key.startsWith("__")) declared[key] = value;
  return { id: resourceId, declared: JSON.stringify(canonical(withPortRangeForm(declared), type, "") ?? {}) };
}

/** A single port `80` as GCE stores it, `80-80`. */
function withPortRangeForm(fields: Record<string, unknown>): Record<string, unknown> {
  const range = fields.portRange;
  return typeof range === "string" && /^\d+$/.test(range) ? { ...fields, portRange: `${range}-${range}` } : fields;
}

/** A link's last segment: what a bare name is compared with. */
function lastSegment(value: string): string {
  return value.slice(value.lastIndexOf("/") + 1);
}

function sameValue(declared: Canonical, found: Canonical | undefined): boolean {
  if (found === undefined) return false;
  if (typeof declared === "string" && typeof found === "string") {
    if (declared === found) return true;
    // A bare name (`default`) against the link GCE stores for it.
    return (
      (!declared.includes("/") && found.startsWith("projects/") && lastSegment(found) === declared) ||
      (!found.includes("/") && declared.startsWith("projects/") && lastSegment(declared) === found)
    );
  }
  if (Array.isArray(declared)) {
    if (!Array.isArray(found) || found.length !== declared.length) return false;
    // Both are sorted; a bare name may sort apart from its link, so each declared item claims one found item.
    const left = [...found];
    return declared.every((item) => {
      const at = left.findIndex((candidate) => sameValue(item, projectOnto(item, candidate)));
      if (at < 0) return false;
      left.splice(at, 1);
      return true;
    });
  }
  if (typeof declared === "object")
    return typeof found === "object" && !Array.isArray(found) && differences(declared, found).length === 0;
  return declared === found;
}

/** The found value reduced to the keys the declared one has (GCE adds its own defaults to objects). */
function projectOnto(declared: Canonical, found: Canonical): Canonical {
  if (typeof declared !== "object" || Array.isArray(declared) || typeof found !== "object" || Array.isArray(found))
    return found;
  const out: Record<string, Canonical> = {};
  for (const key of Object.keys(declared)) if (found[key] !== undefined) out[key] = found[key];
  return out;
}

export interface FieldDifference {
  field: string;
  declared: Canonical;
  found: Canonical | undefined;
}

function differences(declared: Record<string, Canonical>, found: Record<string, Canonical>): FieldDifference[] {
  const out: FieldDifference[] = [];
  for (const [field, value] of Object.entries(declared)) {
    const there = found[field];
    if (!sameValue(value, there === undefined ? undefined : projectOnto(value, there)))
      out.push({ field, declared: value, found: there });
  }
  return out;
}

/**
 * Pure: how a listed resource (the Compute API's JSON; an instance group with `instances` filled
 * from listInstances) differs from what its stack declared; empty when it matches.
 */
export function driftOf(applied: AppliedResource, listed: Record<string, unknown>): FieldDifference[] {
  const declared: unknown = JSON.parse(applied.declared);
  if (!isRecord(declared)) return [];
  const found = canonical(withPortRangeForm(listed), "", "");
  const foundRecord = typeof found === "object" && !Array.isArray(found) ? found : {};
  return differences(declared as Record<string, Canonical>, foundRecord);
}

/** `field: declared X, found Y` for a log line or an Event. */
export function describeDifference(difference: FieldDifference): string {
  return `${difference.field}: declared ${JSON.stringify(difference.declared)}, found ${difference.found === undefined ? "nothing" : JSON.stringify(difference.found)}`;
}
