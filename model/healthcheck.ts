import type { HttpHealthCheckSpec } from "./types";

/** Google's health-checker ranges (legacy and current). */
export const HEALTH_CHECK_SOURCE_RANGES: readonly string[] = ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"];

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
