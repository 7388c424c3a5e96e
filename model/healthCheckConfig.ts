/** The health-check keys of the config: the checkers' source ranges and the node probe. */
import {
  HEALTH_CHECK_SOURCE_RANGES,
  HEALTH_CHECK_SOURCE_RANGES_IPV6,
  NODE_HEALTH_CHECK_PATH,
  NODE_HEALTH_CHECK_PORT,
  requestPathProblem,
} from "./healthcheck";
import { parseCidr, type IpFamily } from "./net";
import type { Config } from "./types";

type HealthCheckKeys = Pick<
  Config,
  "healthCheckSourceRanges" | "healthCheckSourceRangesIPv6" | "nodeHealthCheckPort" | "nodeHealthCheckPath"
>;

/** CIDRs of one family, canonical, sorted, without repeats; undefined when unset or the default list. */
type Key = "healthCheckSourceRanges" | "healthCheckSourceRangesIPv6" | "nodeHealthCheckPort" | "nodeHealthCheckPath";
/** model/config.ts's raw record, seen through the keys read here (it passes its own list reader: no cycle). */
type RawConfig = Partial<Record<Key, unknown>>;
type ListReader = (raw: RawConfig, key: Key, problems: string[]) => string[] | undefined;

function ranges(
  list: ListReader,
  raw: RawConfig,
  key: Key,
  family: IpFamily,
  fallback: readonly string[],
  problems: string[],
): string[] | undefined {
  const written = list(raw, key, problems);
  if (written === undefined) return undefined;
  if (written.length === 0) {
    problems.push(`${key}: at least one ${family} CIDR (unset: Google's health-checker ranges)`);
    return undefined;
  }
  const canonical = new Set<string>();
  for (const text of written) {
    const parsed = parseCidr(text);
    if (!parsed.ok) problems.push(`${key}: ${parsed.reason}`);
    else if (parsed.family !== family) problems.push(`${key}: "${text}" is not an ${family} CIDR`);
    else canonical.add(parsed.canonical);
  }
  const sorted = [...canonical].sort();
  // The default list written out is the default: the config holds no key, so the desired state is unchanged.
  const isDefault = sorted.length === fallback.length && [...fallback].sort().every((cidr, i) => cidr === sorted[i]);
  return isDefault ? undefined : sorted;
}

function port(raw: RawConfig, problems: string[]): number | undefined {
  const value = raw.nodeHealthCheckPort;
  if (value === undefined || value === null || value === "") return undefined;
  const number =
    typeof value === "number" ? value : typeof value === "string" && /^\s*[0-9]+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(number) || number < 1 || number > 65535) {
    problems.push(`nodeHealthCheckPort: expected a port number from 1 to 65535, got ${JSON.stringify(value)}`);
    return undefined;
  }
  return number === NODE_HEALTH_CHECK_PORT ? undefined : number;
}

function path(raw: RawConfig, problems: string[]): string | undefined {
  const value = raw.nodeHealthCheckPath;
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") {
    problems.push(`nodeHealthCheckPath: expected a string, got ${JSON.stringify(value)}`);
    return undefined;
  }
  const problem = requestPathProblem(value.trim());
  if (problem !== undefined) {
    problems.push(`nodeHealthCheckPath: ${problem}`);
    return undefined;
  }
  return value.trim() === NODE_HEALTH_CHECK_PATH ? undefined : value.trim();
}

/** Each key only when it differs from today's constant, so a default config's desired state is unchanged. */
export function healthCheckKeys(raw: RawConfig, problems: string[], list: ListReader): Partial<HealthCheckKeys> {
  const v4 = ranges(list, raw, "healthCheckSourceRanges", "IPv4", HEALTH_CHECK_SOURCE_RANGES, problems);
  const v6 = ranges(list, raw, "healthCheckSourceRangesIPv6", "IPv6", HEALTH_CHECK_SOURCE_RANGES_IPV6, problems);
  const probePort = port(raw, problems);
  const probePath = path(raw, problems);
  return {
    ...(v4 !== undefined ? { healthCheckSourceRanges: v4 } : {}),
    ...(v6 !== undefined ? { healthCheckSourceRangesIPv6: v6 } : {}),
    ...(probePort !== undefined ? { nodeHealthCheckPort: probePort } : {}),
    ...(probePath !== undefined ? { nodeHealthCheckPath: probePath } : {}),
  };
}
