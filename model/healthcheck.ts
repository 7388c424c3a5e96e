/**
 * Health checks: Google's checker ranges, the node probe dccm points them at, and the per-Service
 * tuning of a Service's own check (docs/guides/services.md#health-checks).
 */
import {
  ANNOTATION_HC_HEALTHY_THRESHOLD,
  ANNOTATION_HC_INTERVAL,
  ANNOTATION_HC_PATH,
  ANNOTATION_HC_PORT,
  ANNOTATION_HC_TIMEOUT,
  ANNOTATION_HC_UNHEALTHY_THRESHOLD,
} from "./annotations";
import type { ProblemSink } from "./ipv6";
import type { Config, HttpHealthCheckSpec } from "./types";

/** Google's health-checker ranges (legacy and current); config `healthCheckSourceRanges` replaces them. */
export const HEALTH_CHECK_SOURCE_RANGES: readonly string[] = [
  "130.211.0.0/22",
  "35.191.0.0/16",
  "209.85.152.0/22",
  "209.85.204.0/22",
];

/**
 * Google's IPv6 health-checker ranges for passthrough load balancers: 2600:1901:8001::/48 for
 * regional external passthrough Network Load Balancers, 2600:2d00:1:b029::/64 for internal ones
 * (cloud.google.com/load-balancing/docs/firewall-rules and .../docs/health-check-concepts, "Probe
 * IP ranges and firewall rules"). Both, like the IPv4 list, so one list serves either scheme.
 * Config `healthCheckSourceRangesIPv6` replaces them.
 */
export const HEALTH_CHECK_SOURCE_RANGES_IPV6: readonly string[] = ["2600:1901:8001::/48", "2600:2d00:1:b029::/64"];

/** kube-proxy's health server (`--healthz-bind-address`, :10256 `/healthz`), the stock CCM's node probe. */
export const NODE_HEALTH_CHECK_PORT = 10256;
export const NODE_HEALTH_CHECK_PATH = "/healthz";

/** The timings of a check dccm makes: the stock CCM's (gce_loadbalancer_external.go gceHc* constants). */
export interface HealthCheckTimings {
  checkIntervalSec: number;
  timeoutSec: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
}

export const DEFAULT_HEALTH_CHECK_TIMINGS: HealthCheckTimings = {
  checkIntervalSec: 8,
  timeoutSec: 1,
  healthyThreshold: 1,
  unhealthyThreshold: 3,
};

/**
 * What GCE accepts (compute/docs/reference/rest/v1/regionHealthChecks and httpHealthChecks:
 * checkIntervalSec and timeoutSec 1–300, healthyThreshold and unhealthyThreshold 1–10, "It is
 * invalid for timeoutSec to have greater value than checkIntervalSec"), the ranges the emulator
 * enforces (emulator/gce/validation.ts, healthChecks and httpHealthChecks).
 */
export const HEALTH_CHECK_LIMITS: Readonly<Record<keyof HealthCheckTimings, { min: number; max: number }>> = {
  checkIntervalSec: { min: 1, max: 300 },
  timeoutSec: { min: 1, max: 300 },
  healthyThreshold: { min: 1, max: 10 },
  unhealthyThreshold: { min: 1, max: 10 },
};

export function healthCheckSpec(
  name: string,
  port: number,
  description: string,
  requestPath: string = NODE_HEALTH_CHECK_PATH,
  timings: HealthCheckTimings = DEFAULT_HEALTH_CHECK_TIMINGS,
): HttpHealthCheckSpec {
  return {
    name,
    port,
    requestPath,
    checkIntervalSec: timings.checkIntervalSec,
    timeoutSec: timings.timeoutSec,
    healthyThreshold: timings.healthyThreshold,
    unhealthyThreshold: timings.unhealthyThreshold,
    description,
  };
}

/** The node probe every ETP=Cluster load balancer's check asks, from config or kube-proxy's. */
export function nodeProbe(config: Pick<Config, "nodeHealthCheckPort" | "nodeHealthCheckPath">): {
  port: number;
  path: string;
} {
  return {
    port: config.nodeHealthCheckPort ?? NODE_HEALTH_CHECK_PORT,
    path: config.nodeHealthCheckPath ?? NODE_HEALTH_CHECK_PATH,
  };
}

export function healthCheckSourceRanges(config: Pick<Config, "healthCheckSourceRanges">): string[] {
  return [...(config.healthCheckSourceRanges ?? HEALTH_CHECK_SOURCE_RANGES)];
}

export function healthCheckSourceRangesIPv6(config: Pick<Config, "healthCheckSourceRangesIPv6">): string[] {
  return [...(config.healthCheckSourceRangesIPv6 ?? HEALTH_CHECK_SOURCE_RANGES_IPV6)];
}

/**
 * An HTTP request path GCE takes (`requestPath`: "The request path of the HTTP health check
 * request", an absolute path): `/` then printable ASCII without spaces, at most 1024 characters.
 * Undefined when it is one, else why not.
 */
export function requestPathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return `"${path}" must start with "/"`;
  if (path.length > 1024) return `must be at most 1024 characters (got ${path.length})`;
  if (!/^[\x21-\x7e]+$/.test(path)) return `"${path}" must be printable ASCII without spaces`;
  return undefined;
}

/** What a Service asks of its own health check, each field only when its annotation is set. */
export interface HealthCheckTuning {
  timings: Partial<HealthCheckTimings>;
  port?: number;
  path?: string;
}

const TIMING_ANNOTATIONS: readonly (readonly [keyof HealthCheckTimings, string])[] = [
  ["checkIntervalSec", ANNOTATION_HC_INTERVAL],
  ["timeoutSec", ANNOTATION_HC_TIMEOUT],
  ["healthyThreshold", ANNOTATION_HC_HEALTHY_THRESHOLD],
  ["unhealthyThreshold", ANNOTATION_HC_UNHEALTHY_THRESHOLD],
];

function field(key: string): string {
  return `metadata.annotations[${key}]`;
}

function wholeNumber(value: string): number | undefined {
  return /^[0-9]{1,6}$/.test(value) ? Number(value) : undefined;
}

/**
 * The health-check annotations of a Service, checked against GCE's ranges. `annotation` reads one
 * (trimmed; undefined when absent). Port and path are for an ETP=Cluster Service only: an
 * ETP=Local Service's check must ask kube-proxy's healthCheckNodePort, which answers per node
 * whether a ready endpoint runs there.
 */
export function readHealthCheckTuning(
  annotation: (key: string) => string | undefined,
  local: boolean,
  problems: ProblemSink,
): HealthCheckTuning {
  const timings: Partial<HealthCheckTimings> = {};
  for (const [name, key] of TIMING_ANNOTATIONS) {
    const value = annotation(key);
    if (value === undefined) continue;
    const { min, max } = HEALTH_CHECK_LIMITS[name];
    const number = wholeNumber(value);
    if (number === undefined || number < min || number > max)
      problems.add(field(key), `"${value}" is not a whole number from ${min} to ${max}`);
    else timings[name] = number;
  }
  const interval = timings.checkIntervalSec ?? DEFAULT_HEALTH_CHECK_TIMINGS.checkIntervalSec;
  const timeout = timings.timeoutSec ?? DEFAULT_HEALTH_CHECK_TIMINGS.timeoutSec;
  if (timeout > interval)
    problems.add(
      field(ANNOTATION_HC_TIMEOUT),
      `${timeout}s is longer than the check interval of ${interval}s (${field(ANNOTATION_HC_INTERVAL)}); GCE refuses a timeout above the interval`,
    );
  const tuning: HealthCheckTuning = { timings };
  const port = annotation(ANNOTATION_HC_PORT);
  const path = annotation(ANNOTATION_HC_PATH);
  for (const [key, value] of [
    [ANNOTATION_HC_PORT, port],
    [ANNOTATION_HC_PATH, path],
  ] as const) {
    if (value !== undefined && local)
      problems.add(
        field(key),
        "an externalTrafficPolicy Local Service is checked on its spec.healthCheckNodePort; set it on a Cluster one",
      );
  }
  if (port !== undefined && !local) {
    const number = wholeNumber(port);
    if (number === undefined || number < 1 || number > 65535)
      problems.add(field(ANNOTATION_HC_PORT), `"${port}" is not a port number (1-65535)`);
    else tuning.port = number;
  }
  if (path !== undefined && !local) {
    const problem = requestPathProblem(path);
    if (problem !== undefined) problems.add(field(ANNOTATION_HC_PATH), problem);
    else tuning.path = path;
  }
  return tuning;
}

/**
 * A Service's own check on `port`: its annotated timings over the defaults, declared on every run
 * when any is annotated (HttpHealthCheckSpec.timingsDeclared); `tuning.path`, else `/healthz`.
 */
export function tunedHealthCheck(
  name: string,
  port: number,
  description: string,
  tuning: HealthCheckTuning,
): HttpHealthCheckSpec {
  const declared = Object.keys(tuning.timings).length > 0;
  return {
    ...healthCheckSpec(name, port, description, tuning.path ?? NODE_HEALTH_CHECK_PATH, {
      ...DEFAULT_HEALTH_CHECK_TIMINGS,
      ...tuning.timings,
    }),
    ...(declared ? { timingsDeclared: true as const } : {}),
  };
}
