// Compute response bodies → typed values. Pure (no I/O, no clock): every rule here is table-tested
// in test/unit/gce/parse.test.ts, and the transport (transport.ts) and the client
// (client.ts) only move bytes.

import { isRecord } from "../runtime/guards";
import {
  type AliasIpRange,
  ComputeError,
  type ComputeCall,
  type Instance,
  type NetworkInterface,
  type Region,
} from "./types";

/** Where a body came from: parse errors name the call and the resource like transport errors. */
export interface Origin {
  readonly call: ComputeCall;
  readonly resource: string;
}

/** Google's JSON error body: `error.message`, and the first `error.errors[].reason` (else `error.status`). */
export function parseGoogleError(text: string): { message?: string; reason?: string } {
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    return {};
  }
  const err = isRecord(body) ? body["error"] : undefined;
  if (!isRecord(err)) {
    return {};
  }
  const out: { message?: string; reason?: string } = {};
  if (typeof err["message"] === "string") {
    out.message = err["message"];
  }
  const errors = err["errors"];
  if (Array.isArray(errors) && isRecord(errors[0]) && typeof errors[0]["reason"] === "string") {
    out.reason = errors[0]["reason"];
  } else if (typeof err["status"] === "string") {
    out.reason = err["status"];
  }
  return out;
}

/**
 * Google returns 404 both for a missing resource and for a missing zone, region or project. Only
 * the first means "this resource is gone", so the body must name the resource we asked for.
 * Bodies without a message (seen from some proxies) are taken at the status code's word. Callers
 * decide which calls may answer "absent" at all (the transport's typed notFound result).
 */
export function namesResource(resource: string, message: string | undefined): boolean {
  if (message === undefined) {
    return true;
  }
  const m = /resource '([^']+)' was not found/.exec(message);
  if (m === null) {
    return true;
  }
  const named = m[1] ?? "";
  return named === resource || named.endsWith(`/${resource}`);
}

/** `Retry-After` in seconds or as an HTTP date (relative to `nowMs`); undefined when absent or unreadable. */
export function parseRetryAfter(v: string | null, nowMs: number): number | undefined {
  if (v === null) {
    return undefined;
  }
  const secs = Number(v);
  if (Number.isFinite(secs) && secs >= 0) {
    return secs * 1000;
  }
  const when = Date.parse(v);
  return Number.isNaN(when) ? undefined : Math.max(0, when - nowMs);
}

/** A DONE operation's failure: its first error, with the HTTP status it maps to. */
export function operationFailure(
  op: unknown,
): { status: number | undefined; reason: string; message: string } | undefined {
  const error = isRecord(op) ? op["error"] : undefined;
  const first = arrayField(error, "errors")[0];
  if (!isRecord(first)) {
    return undefined;
  }
  const status = isRecord(op) && typeof op["httpErrorStatusCode"] === "number" ? op["httpErrorStatusCode"] : undefined;
  return {
    status,
    reason: typeof first["code"] === "string" ? first["code"] : "operationFailed",
    message: typeof first["message"] === "string" ? first["message"] : "the operation failed",
  };
}

/** The path of an operation from its selfLink, and the wait call of its scope. */
export function operationPath(op: unknown): { path: string; call: ComputeCall } | undefined {
  const link = stringField(op, "selfLink");
  const m =
    link === undefined
      ? null
      : /(projects\/[^/]+\/(regions\/[^/]+|zones\/[^/]+|global)\/operations\/[^/?#]+)$/.exec(link);
  if (m?.[1] === undefined || m[2] === undefined) {
    return undefined;
  }
  const call: ComputeCall = m[2].startsWith("regions/")
    ? "regionOperations.wait"
    : m[2].startsWith("zones/")
      ? "zoneOperations.wait"
      : "globalOperations.wait";
  return { path: m[1], call };
}

/** regions.get → the region's name (the asked one when the body has none) and its zone names. */
export function parseRegion(body: unknown, asked: string): Region {
  const zones = arrayField(body, "zones")
    .filter((z): z is string => typeof z === "string")
    .map(lastSegment);
  return { name: stringField(body, "name") ?? asked, zones };
}

/** The `items` of a list page, as the API returned them. */
export function listItems(body: unknown): unknown[] {
  return arrayField(body, "items");
}

/** The page token of a list page; undefined on the last page. */
export function nextPageToken(body: unknown): string | undefined {
  const token = stringField(body, "nextPageToken");
  return token === "" ? undefined : token;
}

/** Status of an Operation body (`PENDING`, `RUNNING`, `DONE`). */
export function operationStatus(op: unknown): string | undefined {
  return stringField(op, "status");
}

/** One instances.list page. */
export function parseInstanceList(body: unknown, project: string, zone: string, origin: Origin): Instance[] {
  return listItems(body).map((raw) => parseInstance(raw, { project, zone }, origin));
}

/** One instances.aggregatedList page: every zone's instances; scopes without instances carry a warning only. */
export function parseAggregatedInstances(body: unknown, project: string, origin: Origin): Instance[] {
  const out: Instance[] = [];
  for (const [scope, scoped] of Object.entries(objectField(body, "items"))) {
    // Keys look like `zones/us-central1-a`.
    const zone = scope.startsWith("zones/") ? scope.slice("zones/".length) : undefined;
    for (const raw of arrayField(scoped, "instances")) {
      out.push(parseInstance(raw, { project, zone }, origin));
    }
  }
  return out;
}

/**
 * An instance body → Instance. Project and zone come from its selfLink / zone URL, else from where
 * it was asked for; a body without a name or a zone is a ComputeError (status 200, badResponse).
 */
export function parseInstance(
  raw: unknown,
  fallback: { project: string; zone: string | undefined },
  origin: Origin,
): Instance {
  if (!isRecord(raw) || typeof raw["name"] !== "string") {
    throw new ComputeError({
      ...origin,
      status: 200,
      reason: "badResponse",
      detail: "instance without a name",
      attempts: 1,
    });
  }
  const selfLink = typeof raw["selfLink"] === "string" ? raw["selfLink"] : "";
  const fromLink = /\/projects\/([^/]+)\/zones\/([^/]+)\/instances\//.exec(selfLink);
  const zoneUrl = typeof raw["zone"] === "string" ? raw["zone"] : undefined;
  const zone = zoneUrl !== undefined ? lastSegment(zoneUrl) : (fromLink?.[2] ?? fallback.zone);
  if (zone === undefined || zone === "") {
    throw new ComputeError({
      ...origin,
      status: 200,
      reason: "badResponse",
      detail: `instance ${raw["name"]} without a zone`,
      attempts: 1,
    });
  }
  const nics = Array.isArray(raw["networkInterfaces"]) ? raw["networkInterfaces"] : [];
  const base = {
    name: raw["name"],
    project: fromLink?.[1] ?? fallback.project,
    zone,
    machineType: typeof raw["machineType"] === "string" ? lastSegment(raw["machineType"]) : "",
    networkInterfaces: nics.filter(isRecord).map(parseNic),
  };
  const status = stringField(raw, "status");
  const id = typeof raw["id"] === "string" || typeof raw["id"] === "number" ? String(raw["id"]) : undefined;
  return { ...base, ...(status === undefined ? {} : { status }), ...(id === undefined ? {} : { id }) };
}

function parseNic(raw: Record<string, unknown>): NetworkInterface {
  const accessConfigs = arrayField(raw, "accessConfigs")
    .filter(isRecord)
    .map((a) => (typeof a["natIP"] === "string" ? { natIP: a["natIP"] } : {}));
  const ipv6AccessConfigs = arrayField(raw, "ipv6AccessConfigs")
    .filter(isRecord)
    .map((a) => (typeof a["externalIpv6"] === "string" ? { externalIpv6: a["externalIpv6"] } : {}));
  const aliasIpRanges = arrayField(raw, "aliasIpRanges")
    .filter(isRecord)
    .flatMap((a): AliasIpRange[] => {
      const range = a["ipCidrRange"];
      if (typeof range !== "string" || range === "") {
        return [];
      }
      const rangeName = a["subnetworkRangeName"];
      return [
        typeof rangeName === "string" && rangeName !== ""
          ? { ipCidrRange: range, subnetworkRangeName: rangeName }
          : { ipCidrRange: range },
      ];
    });
  const nic: { name?: string; networkIP?: string; ipv6Address?: string; stackType?: string } = {};
  for (const key of ["name", "networkIP", "ipv6Address", "stackType"] as const) {
    const v = raw[key];
    if (typeof v === "string" && v !== "") {
      nic[key] = v;
    }
  }
  const subnetwork = raw["subnetwork"];
  return {
    ...nic,
    ...(typeof subnetwork === "string" && subnetwork !== "" ? { subnetwork: lastSegment(subnetwork) } : {}),
    accessConfigs,
    ipv6AccessConfigs,
    ...(aliasIpRanges.length > 0 ? { aliasIpRanges } : {}),
  };
}

export function lastSegment(url: string): string {
  const trimmed = url.endsWith("/") ? url.slice(0, -1) : url;
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

function arrayField(v: unknown, key: string): unknown[] {
  const f = isRecord(v) ? v[key] : undefined;
  return Array.isArray(f) ? f : [];
}

function objectField(v: unknown, key: string): Record<string, unknown> {
  const f = isRecord(v) ? v[key] : undefined;
  return isRecord(f) ? f : {};
}

function stringField(v: unknown, key: string): string | undefined {
  const f = isRecord(v) ? v[key] : undefined;
  return typeof f === "string" ? f : undefined;
}

/** A GCE project quota a request would have gone over (403 quotaExceeded). */
export interface QuotaExceeded {
  /** The quota's metric name, as GCE names it: `STATIC_ADDRESSES`, `ROUTES`, … */
  readonly quota: string;
  readonly limit: number;
  /** The region of a regional quota; absent for a project-wide one ("globally"). */
  readonly region?: string;
}

/**
 * GCE's quota refusal in any text that carries it (a Compute error body, the provider's "Error
 * creating Address: googleapi: Error 403: Quota 'STATIC_ADDRESSES' exceeded. Limit: 8.0 in
 * region us-central1., quotaExceeded", gcloud's "… Limit: 1.0 globally."); undefined otherwise.
 * A per-minute rate quota ("Quota exceeded for quota metric …") is not one: it refills by itself.
 */
export function parseQuotaExceeded(text: string): QuotaExceeded | undefined {
  const m = /Quota '([A-Z0-9_]+)' exceeded\.\s+Limit: (\d+(?:\.\d+)?) (?:in region ([a-z0-9-]+)|globally)/.exec(text);
  if (m?.[1] === undefined || m[2] === undefined) {
    return undefined;
  }
  return m[3] === undefined ? { quota: m[1], limit: Number(m[2]) } : { quota: m[1], limit: Number(m[2]), region: m[3] };
}

/** "STATIC_ADDRESSES (limit 8 in region us-central1)", "ROUTES (limit 250 in the project)". */
export function describeQuota(q: QuotaExceeded): string {
  return `${q.quota} (limit ${q.limit} ${q.region === undefined ? "in the project" : `in region ${q.region}`})`;
}
