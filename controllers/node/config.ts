// Config keys of the node controller (flags of the same names, `--nodeWorkers 4`, except
// computeEndpoint: `--compute-endpoint`), parsed into NodeControllerOptions fields. Kept here so the
// daemon's config (daemon/config.ts) merges them into its problem list without knowing their
// rules; problems name the key, like model/config.ts. Durations follow runtime/durations.ts.

import { optionalDuration } from "../../runtime/durations";

export const NODE_CONFIG_KEYS = [
  "computeEndpoint",
  "nodeAddressRefreshPeriod",
  "nodeLifecyclePeriod",
  "nodeWorkers",
  "nodeZones",
] as const;

export type NodeConfigKey = (typeof NODE_CONFIG_KEYS)[number];

export interface NodeConfig {
  /** Compute v1 base URL; undefined = compute.googleapis.com with ADC. */
  readonly computeEndpoint: string | undefined;
  readonly addressRefreshMs: number;
  readonly lifecycleCheckMs: number;
  readonly workers: number;
  /** Zones searched for Nodes without providerID; undefined = the region's zones. */
  readonly zones: readonly string[] | undefined;
}

export const NODE_CONFIG_DEFAULTS = {
  addressRefreshMs: 5 * 60_000,
  lifecycleCheckMs: 30_000,
  workers: 10,
} as const;

/** Below a second, the periodic refresh and lifecycle passes would hammer Compute and the apiserver. */
export const NODE_DURATION_MIN_MS = 1000;

/** Parses the node keys of a raw config record; `problems` gets one line per bad key. */
export function parseNodeConfig(raw: Readonly<Record<string, unknown>>, problems: string[]): NodeConfig {
  const endpoint = raw["computeEndpoint"];
  let computeEndpoint: string | undefined;
  if (endpoint !== undefined && endpoint !== null && endpoint !== "") {
    if (typeof endpoint !== "string" || !/^https?:\/\/[^/]+/.test(endpoint)) {
      problems.push(
        `computeEndpoint: expected an http(s) URL such as https://compute.googleapis.com/compute/v1/, got ${JSON.stringify(endpoint)}`,
      );
    } else {
      computeEndpoint = endpoint.endsWith("/") ? endpoint : `${endpoint}/`;
    }
  }
  const bounds = { minMs: NODE_DURATION_MIN_MS };
  const addressRefreshMs = optionalDuration(
    raw["nodeAddressRefreshPeriod"],
    "nodeAddressRefreshPeriod",
    NODE_CONFIG_DEFAULTS.addressRefreshMs,
    problems,
    bounds,
  );
  const lifecycleCheckMs = optionalDuration(
    raw["nodeLifecyclePeriod"],
    "nodeLifecyclePeriod",
    NODE_CONFIG_DEFAULTS.lifecycleCheckMs,
    problems,
    bounds,
  );
  let workers: number = NODE_CONFIG_DEFAULTS.workers;
  const w = raw["nodeWorkers"];
  if (w !== undefined && w !== null && w !== "") {
    const n = typeof w === "number" ? w : typeof w === "string" ? Number(w) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > 100) {
      problems.push(`nodeWorkers: expected an integer from 1 to 100, got ${JSON.stringify(w)}`);
    } else {
      workers = n;
    }
  }
  let zones: string[] | undefined;
  const z = raw["nodeZones"];
  if (z !== undefined && z !== null && z !== "") {
    const list = typeof z === "string" ? z.split(",") : Array.isArray(z) ? z : undefined;
    const clean = list?.map((x) => (typeof x === "string" ? x.trim() : "")).filter((x) => x !== "");
    if (clean === undefined || clean.length === 0 || clean.some((x) => !/^[a-z]+-[a-z]+[0-9]+-[a-z]$/.test(x))) {
      problems.push(
        `nodeZones: expected zone names like us-central1-a (list or comma-separated), got ${JSON.stringify(z)}`,
      );
    } else {
      zones = clean;
    }
  }
  return { computeEndpoint, addressRefreshMs, lifecycleCheckMs, workers, zones };
}
