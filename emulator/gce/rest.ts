// The Compute REST representation of the emulator's resources: a stored resource as GCE returns it
// and a request body as the stored inputs, GCE's list paging and filter, and the test listing rows.

import { type ListFilter, matchesFilter, parseFilter } from "./filter";
import { GceError } from "./errors";
import { isJsonObject, type Json, type JsonObject } from "./json";
import { type GceKind, specOf } from "./kinds";
import { badRequest } from "./router";
import { NEG_ENDPOINTS } from "./rules";
import type { GceState } from "./state";
import type { StoredResource } from "./store";

const DEFAULT_MAX_RESULTS = 500;
/** Fields of a REST resource GCE computes: a request may carry them back (an update sends what a get returned); they are not inputs. */
const REST_OUTPUT_ONLY = new Set([
  "kind",
  "id",
  "selfLink",
  "creationTimestamp",
  "fingerprint",
  "labelFingerprint",
  "region",
  "zone",
  "type",
  "size",
]);
/** REST field names that differ from the stored (@pulumi/gcp) ones: toRest's renames. */
const REST_RENAMES: Partial<Record<GceKind, Readonly<Record<string, string>>>> = {
  forwardingRules: { IPAddress: "ipAddress", IPProtocol: "ipProtocol" },
  firewalls: { allowed: "allows", denied: "denies" },
};

/** One row of GET /emulator/resources. */
export interface ResourceListing {
  readonly kind: GceKind;
  readonly project: string;
  readonly scope: string;
  readonly name: string;
  readonly properties: JsonObject;
}

/** Plain `{ kind, project, scope, name, properties }` rows, sorted. */
export function toListing(r: StoredResource): ResourceListing {
  return { kind: r.kind, project: r.project, scope: r.scope, name: r.name, properties: r.properties };
}

/** GCE's `maxResults`/`pageToken` paging over an already sorted list. */
export function page<T>(
  items: readonly T[],
  query: URLSearchParams,
): { items: T[]; nextPageToken: string | undefined } {
  const rawMax = query.get("maxResults");
  let max = DEFAULT_MAX_RESULTS;
  if (rawMax !== null) {
    if (!/^\d+$/.test(rawMax) || Number(rawMax) < 1 || Number(rawMax) > 500) {
      throw badRequest(`Invalid value for field 'maxResults': '${rawMax}'. Must be in the range [0, 500].`);
    }
    max = Number(rawMax);
  }
  const token = query.get("pageToken");
  let offset = 0;
  if (token !== null && token !== "") {
    const decoded = Buffer.from(token, "base64url").toString("utf8");
    const m = /^offset:(\d+)$/.exec(decoded);
    if (m?.[1] === undefined) {
      throw badRequest(`Invalid value for field 'pageToken': '${token}'. Invalid page token.`);
    }
    offset = Number(m[1]);
  }
  const slice = items.slice(offset, offset + max);
  const next = offset + max < items.length ? Buffer.from(`offset:${offset + max}`).toString("base64url") : undefined;
  return { items: slice, nextPageToken: next };
}

/** The items whose REST representation (`view`) GCE's list `filter` keeps (filter.ts: the grammar and its source). */
export function applyFilter<T>(items: readonly T[], query: URLSearchParams, view: (item: T) => JsonObject): T[] {
  const text = query.get("filter");
  if (text === null || text.trim() === "") {
    return [...items];
  }
  let filter: ListFilter;
  try {
    filter = parseFilter(text);
  } catch (cause) {
    throw new GceError(400, cause instanceof Error ? cause.message : String(cause), "invalid", { cause });
  }
  return items.filter((item) => matchesFilter(filter, view(item)));
}

/** The Compute REST representation of a stored resource. */
export function toRest(state: GceState, r: StoredResource): JsonObject {
  if (r.kind === "instances") {
    return r.properties;
  }
  const spec = specOf(r.kind);
  const { project: _project, deletionPolicy: _deletionPolicy, ...p } = r.properties;
  const out: JsonObject = { kind: spec.restKind, ...p };
  if (spec.scope === "region") {
    out.region = state.scopeLink(r.project, "region", r.scope);
  } else if (spec.scope === "zone") {
    out.zone = state.scopeLink(r.project, "zone", r.scope);
  }
  const rename = (from: string, to: string): void => {
    if (from in out) {
      const v = out[from];
      delete out[from];
      if (v !== undefined) {
        out[to] = v;
      }
    }
  };
  switch (r.kind) {
    case "forwardingRules":
      rename("ipAddress", "IPAddress");
      rename("ipProtocol", "IPProtocol");
      break;
    case "firewalls":
      for (const [from, to] of [
        ["allows", "allowed"],
        ["denies", "denied"],
      ] as const) {
        const rules = out[from];
        if (Array.isArray(rules)) {
          out[from] = rules.map((rule) => {
            if (!isJsonObject(rule)) {
              return rule;
            }
            const { protocol, ...rest } = rule;
            return protocol === undefined ? rest : { IPProtocol: protocol, ...rest };
          });
        }
        rename(from, to);
      }
      break;
    case "backendServices":
    case "targetPools":
      if (typeof out.healthChecks === "string") {
        out.healthChecks = [out.healthChecks];
      }
      break;
    case "instanceGroups":
      delete out.instances;
      break;
    case "networkEndpointGroups":
      delete out[NEG_ENDPOINTS];
      break;
    default:
      break;
  }
  return out;
}

/**
 * A Compute REST request body as the stored (@pulumi/gcp-named) inputs of `kind`: toRest's
 * renames undone, fields GCE computes dropped, a list of one health check as the one link the
 * stored form holds. A field the kind does not have is GCE's 400 for an unknown JSON name.
 */
export function fromRest(kind: GceKind, body: Json | undefined): JsonObject {
  const spec = specOf(kind);
  if (!isJsonObject(body)) {
    throw badRequest(`Invalid JSON payload received. The request body must be a Compute ${spec.typeName}.`);
  }
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(body)) {
    if (REST_OUTPUT_ONLY.has(k) || v === null) {
      continue;
    }
    const name = REST_RENAMES[kind]?.[k] ?? k;
    if (name !== "name" && (name === "deletionPolicy" || !spec.inputs.includes(name))) {
      throw badRequest(`Invalid JSON payload received. Unknown name "${k}" at 'resource': Cannot find field.`);
    }
    out[name] = v;
  }
  if (kind === "firewalls") {
    for (const field of ["allows", "denies"]) {
      const rules = out[field];
      if (Array.isArray(rules)) {
        out[field] = rules.map((rule) => {
          if (!isJsonObject(rule)) {
            return rule;
          }
          const { IPProtocol, ...rest } = rule;
          return IPProtocol === undefined ? rest : { protocol: IPProtocol, ...rest };
        });
      }
    }
  }
  if ((kind === "backendServices" || kind === "targetPools") && Array.isArray(out.healthChecks)) {
    // A target pool and a passthrough backend service take one health check (targetPools and
    // backendServices resource references, healthChecks: "Only one health check may be specified").
    if (out.healthChecks.length > 1) {
      throw badRequest(
        `Invalid value for field 'resource.healthChecks': ${JSON.stringify(out.healthChecks)}. Only one health check may be specified.`,
      );
    }
    const [only] = out.healthChecks;
    if (only === undefined) {
      delete out.healthChecks;
    } else {
      out.healthChecks = only;
    }
  }
  return out;
}
