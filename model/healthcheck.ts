import type { HttpHealthCheckSpec } from "./types";

/** Google's health-checker ranges (legacy and current). */
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
 */
export const HEALTH_CHECK_SOURCE_RANGES_IPV6: readonly string[] = ["2600:1901:8001::/48", "2600:2d00:1:b029::/64"];

export function healthCheckSpec(name: string, port: number, description: string): HttpHealthCheckSpec {
  return {
    name,
    port,
    requestPath: "/healthz",
    checkIntervalSec: 8,
    timeoutSec: 1,
    healthyThreshold: 1,
    unhealthyThreshold: 3,
    description,
  };
}
