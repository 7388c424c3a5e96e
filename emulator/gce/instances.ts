// VM instances: seeded by tests (dccm never creates one), with their interfaces' internal,
// external and alias IPs allocated as GCE does, and their status changed as stop/start/suspend do.

import * as net from "node:net";

import { GceError } from "./errors";
import { cidrsOverlap, inRange, isCidr4 } from "./ipam";
import { isJsonObject, type Json, type JsonObject } from "./json";
import { invalidNameMessage, NAME_RE, normalizeRef, regionOfZone } from "./kinds";
import type { StoredSubnetwork } from "./networks";
import type { RuleEnv } from "./rules/rules";
import { fingerprintOf, keyString, type ResourceKey, type StoredResource } from "./store";

export interface NetworkInterfaceSpec {
  readonly networkIP?: string;
  readonly ipv6Address?: string;
  readonly network?: string;
  /**
   * The interface's subnetwork (a name in the instance's region, or a link), which must belong to
   * its network. Default: the network's subnetwork in the region (the one an auto-mode network has).
   */
  readonly subnetwork?: string;
  /** One entry per external IP; an entry without natIP gets an ephemeral one. */
  readonly accessConfigs?: ReadonlyArray<{ readonly natIP?: string }>;
  /**
   * Alias IP ranges (VPC-native pods): an explicit IPv4 CIDR (or one address, a /32) from the
   * interface's subnet, its primary range or the secondary range `subnetworkRangeName`.
   */
  readonly aliasIpRanges?: ReadonlyArray<{ readonly ipCidrRange: string; readonly subnetworkRangeName?: string }>;
}

/**
 * Compute v1 Instance.status values (instances resource reference). A stopped VM is TERMINATED
 * (after STOPPING), a suspended one SUSPENDED (after SUSPENDING); starting goes through
 * PROVISIONING/STAGING to RUNNING (compute/docs/instances/instance-life-cycle).
 */
export const INSTANCE_STATUSES: readonly string[] = [
  "PROVISIONING",
  "STAGING",
  "RUNNING",
  "STOPPING",
  "STOPPED",
  "SUSPENDING",
  "SUSPENDED",
  "REPAIRING",
  "TERMINATED",
  "DEPROVISIONING",
];

export interface InstanceSpec {
  /** Short name ("e2-standard-2") or URL. Default e2-standard-2. */
  readonly machineType?: string;
  /** Default RUNNING. */
  readonly status?: string;
  /** Default: one interface with an allocated internal IP and no external IP. */
  readonly networkInterfaces?: readonly NetworkInterfaceSpec[];
  readonly tags?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
}

/** What seeding an instance needs of the emulator's state besides the rules' view of it. */
export interface InstanceEnv extends RuleEnv {
  readonly now: () => Date;
  /** The network of seeded instances whose interfaces name none. */
  readonly instanceNetwork: string;
}

/**
 * One alias IP range of an interface (cloud.google.com/vpc/docs/alias-ip): from the primary range
 * of the interface's subnet, or from the secondary range `subnetworkRangeName`, which must exist;
 * "Alias IP ranges ... must not conflict with" the ranges of other VMs in the subnet (nor, in the
 * primary range, the VM's own address). GCE also allocates a range from a netmask ("/24"); the
 * emulator is given explicit ranges. Messages are the emulator's (GCE's exact text is not documented).
 */
function aliasRange(
  alias: { readonly ipCidrRange: string; readonly subnetworkRangeName?: string },
  subnet: StoredSubnetwork | undefined,
  field: string,
  inUse: { cidr: string; owner: string }[],
  networkIP: string,
  owner: string,
): JsonObject {
  const cidr = net.isIP(alias.ipCidrRange) === 4 ? `${alias.ipCidrRange}/32` : alias.ipCidrRange;
  if (!isCidr4(cidr)) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.ipCidrRange': '${alias.ipCidrRange}'. The emulator needs an explicit IPv4 range.`,
      "invalid",
    );
  }
  if (subnet === undefined) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}': the interface has no subnetwork to take an alias IP range from.`,
      "invalid",
    );
  }
  const name = alias.subnetworkRangeName;
  const from =
    name === undefined ? subnet.ipCidrRange : subnet.secondaryIpRanges.find((r) => r.rangeName === name)?.ipCidrRange;
  if (from === undefined) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.subnetworkRangeName': '${name ?? ""}'. Subnetwork '${subnet.name}' has no secondary range of that name.`,
      "invalid",
    );
  }
  if (!inRange(cidr.split("/")[0] ?? "", from) || Number(cidr.split("/")[1]) < Number(from.split("/")[1])) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.ipCidrRange': '${cidr}'. It is not within ${name === undefined ? "the primary range" : `secondary range '${name}'`} ${from} of subnetwork '${subnet.name}'.`,
      "invalid",
    );
  }
  const clash = inUse.find((u) => cidrsOverlap(u.cidr, cidr));
  if (clash !== undefined || (name === undefined && inRange(networkIP, cidr))) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.ipCidrRange': '${cidr}'. It overlaps ${clash === undefined ? `the interface's address ${networkIP}` : `alias range ${clash.cidr} of instance '${clash.owner}'`}.`,
      "invalid",
    );
  }
  inUse.push({ cidr, owner });
  return name === undefined ? { ipCidrRange: cidr } : { ipCidrRange: cidr, subnetworkRangeName: name };
}

/** Alias ranges of every instance but `except` (a replaced instance gives its own back), by subnet network. */
function aliasRangesInUse(env: RuleEnv, except: string): { cidr: string; owner: string }[] {
  const out: { cidr: string; owner: string }[] = [];
  for (const r of env.store.ofKind("instances")) {
    if (keyString(r) === except) continue;
    const nics = Array.isArray(r.properties.networkInterfaces) ? r.properties.networkInterfaces : [];
    for (const n of nics) {
      const aliases = isJsonObject(n) && Array.isArray(n.aliasIpRanges) ? n.aliasIpRanges : [];
      for (const a of aliases) {
        if (isJsonObject(a) && typeof a.ipCidrRange === "string") out.push({ cidr: a.ipCidrRange, owner: r.name });
      }
    }
  }
  return out;
}

/** The internal (`networkIP`) or external (`natIP`) IPs of an instance's interfaces. */
export function nicIps(instance: StoredResource, field: "networkIP" | "natIP"): string[] {
  const nics = Array.isArray(instance.properties.networkInterfaces) ? instance.properties.networkInterfaces : [];
  const out: string[] = [];
  for (const nic of nics) {
    if (!isJsonObject(nic)) {
      continue;
    }
    const configs = field === "natIP" && Array.isArray(nic.accessConfigs) ? nic.accessConfigs : [nic];
    for (const c of configs) {
      const v = isJsonObject(c) ? c[field] : undefined;
      if (typeof v === "string") {
        out.push(v);
      }
    }
  }
  return out;
}

function requireStatus(status: string): void {
  if (!INSTANCE_STATUSES.includes(status)) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.status': '${status}'. Expected one of ${INSTANCE_STATUSES.join(", ")}.`,
      "invalid",
    );
  }
}

/** Creates or replaces an instance (test seeding); returns its key. */
export function putInstance(
  env: InstanceEnv,
  project: string,
  zone: string,
  name: string,
  spec: InstanceSpec,
): ResourceKey {
  if (!NAME_RE.test(name)) {
    throw new GceError(400, invalidNameMessage(name), "invalid");
  }
  if (spec.status !== undefined) {
    requireStatus(spec.status);
  }
  const key: ResourceKey = { kind: "instances", project, scope: zone, name };
  const prev = env.store.find(key);
  const ctx = env.refContext(key);
  const machineType = spec.machineType ?? "e2-standard-2";
  const aliasesInUse = aliasRangesInUse(env, keyString(key));
  const inUse = env.ipsInUse(prev === undefined ? undefined : key);
  const nics: Json[] = (spec.networkInterfaces ?? [{}]).map((nic, i) => {
    const network = normalizeRef(nic.network ?? env.instanceNetwork, { collection: "networks", scope: "global" }, ctx);
    const subnet =
      nic.subnetwork === undefined
        ? env.networks.subnetIn(network, regionOfZone(zone))
        : env.networks.requireSubnetwork(
            normalizeRef(nic.subnetwork, { collection: "subnetworks", scope: "region" }, ctx),
            network,
          );
    const networkIP = nic.networkIP ?? (subnet?.pool ?? env.ipam.internal).allocate(inUse);
    inUse.add(networkIP);
    // instances resource reference, networkInterfaces[].subnetwork: "The URL of the Subnetwork
    // resource for this instance": GCE returns it on every interface of a VPC network.
    const out: JsonObject = {
      name: `nic${i}`,
      network,
      ...(subnet === undefined
        ? {}
        : { subnetwork: `${env.scopeLink(subnet.project, "region", subnet.region)}/subnetworks/${subnet.name}` }),
      networkIP,
    };

    if (nic.ipv6Address !== undefined) {
      out.ipv6Address = nic.ipv6Address;
    }
    if (nic.aliasIpRanges !== undefined && nic.aliasIpRanges.length > 0) {
      out.aliasIpRanges = nic.aliasIpRanges.map((alias, j) =>
        aliasRange(alias, subnet, `networkInterfaces[${i}].aliasIpRanges[${j}]`, aliasesInUse, networkIP, name),
      );
    }
    out.accessConfigs = (nic.accessConfigs ?? []).map((ac) => {
      const natIP = ac.natIP ?? env.ipam.external.allocate(inUse);
      inUse.add(natIP);
      return { kind: "compute#accessConfig", type: "ONE_TO_ONE_NAT", name: "External NAT", natIP };
    });
    return out;
  });
  const tags: JsonObject = { fingerprint: fingerprintOf([...(spec.tags ?? [])]) };
  if (spec.tags !== undefined && spec.tags.length > 0) {
    tags.items = [...spec.tags];
  }
  const properties: JsonObject = {
    kind: "compute#instance",
    id: prev !== undefined ? (prev.properties.id ?? env.store.newId()) : env.store.newId(),
    creationTimestamp: prev?.properties.creationTimestamp ?? env.now().toISOString(),
    name,
    zone: env.scopeLink(project, "zone", zone),
    machineType: /^https?:\/\//.test(machineType)
      ? machineType
      : `${env.scopeLink(project, "zone", zone)}/machineTypes/${machineType}`,
    status: spec.status ?? "RUNNING",
    networkInterfaces: nics,
    tags,
    selfLink: env.selfLink(key),
  };
  if (spec.labels !== undefined) {
    properties.labels = { ...spec.labels };
  }
  env.store.put(key, properties, prev === undefined ? "create" : "update");
  return key;
}

/**
 * A stop, start, suspend or resume (instances.stop/start/suspend/resume): the status changes,
 * nothing else (addresses and alias ranges stay, as they do for a VM that keeps its interfaces).
 */
export function setInstanceStatus(
  env: RuleEnv,
  project: string,
  zone: string,
  name: string,
  status: string,
): ResourceKey {
  requireStatus(status);
  const key: ResourceKey = { kind: "instances", project, scope: zone, name };
  const prev = env.store.find(key);
  if (prev === undefined) {
    throw new GceError(
      404,
      `The resource 'projects/${project}/zones/${zone}/instances/${name}' was not found`,
      "notFound",
    );
  }
  env.store.put(key, { ...prev.properties, status }, "update");
  return key;
}
