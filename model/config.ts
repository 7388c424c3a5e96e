/** Config validation: a plain record (file, flags or Pulumi config) → Config, or errors naming each key. */
import { DEFAULT_LOAD_BALANCER_CLASS } from "./annotations";
import { healthCheckKeys } from "./healthCheckConfig";
import { INSTANCE_GROUP_MAX_INSTANCES } from "./limits";
import { instanceGroupName, isValidGceName, nodeHealthCheckFirewallName, routeName } from "./names";
import { parseCidr4 } from "./net";
import {
  ADDRESS_RESERVATIONS,
  type BackendMode,
  type Config,
  FIREWALL_MANAGEMENTS,
  type FirewallManagement,
  POD_CIDR_SOURCES,
  POD_CIDR_STACKS,
} from "./types";

/** config `backendMode`'s values, in the order its error lists them. */
export const BACKEND_MODES: readonly BackendMode[] = ["backend-service", "target-pool", "neg"];

export const CONFIG_KEYS = [
  "project",
  "region",
  "network",
  "subnetwork",
  "nodeTags",
  "clusterName",
  "clusterId",
  "clusterCIDR",
  "backendMode",
  "configureRoutes",
  "podCIDRSource",
  "podCIDRStack",
  "loadBalancerClasses",
  "instanceGroupLimit",
  "enableL4DenyFirewall",
  "instanceGroupZones",
  "addressReservation",
  "healthCheckSourceRanges",
  "healthCheckSourceRangesIPv6",
  "nodeHealthCheckPort",
  "nodeHealthCheckPath",
  "networkProject",
  "firewallManagement",
] as const;

export type ConfigKey = (typeof CONFIG_KEYS)[number];
export type RawConfig = Partial<Record<ConfigKey, unknown>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
  }
}

const REQUIRED = ["project", "region", "network", "nodeTags", "clusterName", "clusterId"] as const;

function text(raw: RawConfig, key: ConfigKey, problems: string[]): string | undefined {
  const value = raw[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") {
    problems.push(`${key}: expected a string, got ${JSON.stringify(value)}`);
    return undefined;
  }
  return value.trim();
}

function list(raw: RawConfig, key: ConfigKey, problems: string[]): string[] | undefined {
  const value = raw[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "string")
    return value
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
  if (Array.isArray(value) && value.every((item): item is string => typeof item === "string"))
    return value.map((item) => item.trim()).filter((item) => item !== "");
  problems.push(`${key}: expected a list of strings or a comma-separated string, got ${JSON.stringify(value)}`);
  return undefined;
}

function bool(raw: RawConfig, key: ConfigKey, fallback: boolean, problems: string[]): boolean {
  const value = raw[key];
  if (value === undefined || value === null || value === "") return fallback;
  if (typeof value === "boolean") return value;
  if (value === "true" || value === "false") return value === "true";
  problems.push(`${key}: expected true or false, got ${JSON.stringify(value)}`);
  return fallback;
}

/** One of the listed words, exactly (case matters: they are the stock CCM's). */
function oneOf<T extends string>(
  raw: RawConfig,
  key: ConfigKey,
  allowed: readonly T[],
  problems: string[],
): T | undefined {
  const value = text(raw, key, problems);
  if (value === undefined) return undefined;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  problems.push(`${key}: "${value}" is not one of ${allowed.join(", ")}`);
  return undefined;
}

/** configureRoutes, podCIDRSource and podCIDRStack, which decide together how pods are reached. */
function podCIDRKeys(
  raw: RawConfig,
  problems: string[],
): Pick<Config, "configureRoutes" | "podCIDRSource" | "podCIDRStack"> {
  const podCIDRSource = oneOf(raw, "podCIDRSource", POD_CIDR_SOURCES, problems) ?? "none";
  const podCIDRStack = oneOf(raw, "podCIDRStack", POD_CIDR_STACKS, problems);
  // Alias IP ranges are routed by the VPC itself (subnet routes of the secondary ranges), and GCE
  // refuses a custom route as specific as a subnet route: in `cloud` mode there are no routes.
  const configureRoutes = bool(raw, "configureRoutes", podCIDRSource !== "cloud", problems);
  if (podCIDRSource === "cloud" && configureRoutes)
    problems.push("configureRoutes: must be false with podCIDRSource cloud (the VPC routes alias IP ranges itself)");
  if (podCIDRStack !== undefined && podCIDRSource !== "cloud")
    problems.push("podCIDRStack: only used with podCIDRSource cloud, which is not set");
  return {
    configureRoutes,
    ...(podCIDRSource === "cloud" ? { podCIDRSource } : {}),
    ...(podCIDRStack !== undefined && podCIDRStack !== "IPv4" ? { podCIDRStack } : {}),
  };
}

/** A whole number from 1 to the documented GCE limit (a number, or its decimal text from a flag). */
function groupLimit(raw: RawConfig, problems: string[]): number | undefined {
  const value = raw.instanceGroupLimit;
  if (value === undefined || value === null || value === "") return undefined;
  const number =
    typeof value === "number" ? value : typeof value === "string" && /^\s*[0-9]+\s*$/.test(value) ? Number(value) : NaN;
  if (Number.isInteger(number) && number >= 1 && number <= INSTANCE_GROUP_MAX_INSTANCES) return number;
  problems.push(
    `instanceGroupLimit: expected a whole number from 1 to ${INSTANCE_GROUP_MAX_INSTANCES}, got ${JSON.stringify(value)}`,
  );
  return undefined;
}

/** Every GCE name made of clusterName or clusterId stays valid at their longest. */
function checkClusterNames(clusterName: string, clusterId: string, problems: string[]): void {
  if (clusterName !== "" && !isValidGceName(routeName(clusterName, "0"))) {
    problems.push(`clusterName: "${clusterName}" must be lowercase letters, digits and dashes, starting with a letter`);
  }
  if (
    clusterId !== "" &&
    !(
      isValidGceName(instanceGroupName(clusterId)) &&
      isValidGceName(instanceGroupName(clusterId, 999_999)) &&
      isValidGceName(nodeHealthCheckFirewallName(clusterId))
    )
  ) {
    problems.push(`clusterId: "${clusterId}" must be lowercase letters, digits and dashes, at most 46 characters`);
  }
}

/** Each a zone of the region (a group elsewhere could not serve the region's load balancers); sorted, without repeats. */
function instanceGroupZonesOf(raw: RawConfig, region: string, problems: string[]): string[] | undefined {
  const zones = list(raw, "instanceGroupZones", problems);
  if (zones === undefined || zones.length === 0) return undefined;
  for (const zone of zones) {
    if (!/^[a-z]+-[a-z]+[0-9]+-[a-z]$/.test(zone))
      problems.push(`instanceGroupZones: "${zone}" is not a GCP zone (like us-central1-a)`);
    else if (region !== "" && zone.slice(0, zone.lastIndexOf("-")) !== region)
      problems.push(`instanceGroupZones: "${zone}" is not in region ${region}`);
  }
  return [...new Set(zones)].sort();
}

function checkClusterCidr(clusterCIDR: string | undefined, problems: string[]): void {
  if (clusterCIDR === undefined) return;
  const parsed = parseCidr4(clusterCIDR);
  if (!parsed.ok) problems.push(`clusterCIDR: ${parsed.reason}`);
}

export function parseConfig(raw: RawConfig): Config {
  const problems: string[] = [];
  for (const key of Object.keys(raw)) {
    if (!(CONFIG_KEYS as readonly string[]).includes(key))
      problems.push(`${key}: unknown key (known: ${CONFIG_KEYS.join(", ")})`);
  }
  const project = text(raw, "project", problems) ?? "";
  const region = text(raw, "region", problems) ?? "";
  const network = text(raw, "network", problems) ?? "";
  const subnetwork = text(raw, "subnetwork", problems);
  const nodeTags = list(raw, "nodeTags", problems) ?? [];
  const clusterName = text(raw, "clusterName", problems) ?? "";
  const clusterId = text(raw, "clusterId", problems) ?? "";
  const clusterCIDR = text(raw, "clusterCIDR", problems);
  const backendText = text(raw, "backendMode", problems) ?? "backend-service";
  const podNetwork = podCIDRKeys(raw, problems);
  const loadBalancerClasses = list(raw, "loadBalancerClasses", problems) ?? [DEFAULT_LOAD_BALANCER_CLASS];
  const instanceGroupLimit = groupLimit(raw, problems);
  const enableL4DenyFirewall = bool(raw, "enableL4DenyFirewall", false, problems);
  const instanceGroupZones = instanceGroupZonesOf(raw, region, problems);
  const addressReservation = oneOf(raw, "addressReservation", ADDRESS_RESERVATIONS, problems);
  const healthChecks = healthCheckKeys(raw, problems, list);
  const networkProject = text(raw, "networkProject", problems);
  const firewallManagement = firewallManagementOf(raw, problems);
  // Checked after trimming, so "  " or " , " counts as missing.
  const present: Record<(typeof REQUIRED)[number], boolean> = {
    project: project !== "",
    region: region !== "",
    network: network !== "",
    nodeTags: nodeTags.length > 0,
    clusterName: clusterName !== "",
    clusterId: clusterId !== "",
  };
  for (const key of REQUIRED)
    if (!present[key] && !problems.some((problem) => problem.startsWith(`${key}:`))) problems.push(`${key}: required`);

  for (const [key, value] of [
    ["project", project],
    ["networkProject", networkProject ?? ""],
  ] as const)
    if (value !== "" && !/^(?:[a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$/.test(value))
      problems.push(`${key}: "${value}" is not a GCP project ID`);
  if (region !== "" && !/^[a-z]+-[a-z]+[0-9]+$/.test(region))
    problems.push(`region: "${region}" is not a GCP region (like us-central1)`);
  for (const [key, value] of [
    ["network", network],
    ["subnetwork", subnetwork],
  ] as const) {
    if (value !== undefined && value !== "" && !isValidGceName(value))
      problems.push(`${key}: "${value}" is not a valid GCE name`);
  }
  for (const tag of nodeTags) if (!isValidGceName(tag)) problems.push(`nodeTags: "${tag}" is not a valid network tag`);
  checkClusterNames(clusterName, clusterId, problems);
  checkClusterCidr(clusterCIDR, problems);
  if (!(BACKEND_MODES as readonly string[]).includes(backendText))
    problems.push(`backendMode: "${backendText}" is not backend-service, target-pool or neg`);
  else if (backendText === "neg" && subnetwork === undefined)
    problems.push("subnetwork: required with backendMode neg (the subnetwork of the nodes' network endpoint groups)");
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    project,
    region,
    network,
    ...(subnetwork !== undefined ? { subnetwork } : {}),
    nodeTags,
    clusterName,
    clusterId,
    ...(clusterCIDR !== undefined ? { clusterCIDR } : {}),
    backendMode: backendText as BackendMode,
    ...podNetwork,
    loadBalancerClasses,
    ...(instanceGroupLimit !== undefined ? { instanceGroupLimit } : {}),
    ...(enableL4DenyFirewall ? { enableL4DenyFirewall } : {}),
    ...(instanceGroupZones !== undefined ? { instanceGroupZones } : {}),
    ...(addressReservation === "always" ? { addressReservation } : {}),
    ...healthChecks,
    // The service project named again is no Shared VPC: one spelling of "no host project".
    ...(networkProject !== undefined && networkProject !== project ? { networkProject } : {}),
    ...(firewallManagement === "manual" ? { firewallManagement } : {}),
  };
}

/** `firewallManagement`: `auto` is named apart, so that its refusal says it is known but not built. */
function firewallManagementOf(raw: RawConfig, problems: string[]): FirewallManagement | undefined {
  if (text(raw, "firewallManagement", []) === "auto") {
    problems.push("firewallManagement: auto is not built yet (managed or manual)");
    return undefined;
  }
  return oneOf(raw, "firewallManagement", FIREWALL_MANAGEMENTS, problems);
}

/** Where firewalls and routes live, and the project network and subnetwork references name: the Shared VPC host, else `project`. */
export function networkProjectOf(config: Pick<Config, "project" | "networkProject">): string {
  return config.networkProject ?? config.project;
}
