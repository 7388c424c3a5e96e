// The rules of unmanaged instance groups: their network, their members (zone, network, how many),
// the size GCE computes, and who uses them.

import { GceError } from "../errors";
import { isJsonObject, type Json } from "../json";
import type { ResourceKey } from "../store";
import type { KindRules, RuleEnv } from "./rules";
import { requireUrl } from "./urls";

/**
 * VM instances in one instance group: 1,000 (Compute Engine: "A managed instance group can have up
 * to 1000 VM instances per group", compute/docs/reference/rest/v1/instanceGroupManagers/insert; the
 * same 1,000 as the stock CCM's maxInstancesPerInstanceGroup, gce_loadbalancer_internal.go; dccm's
 * model/limits.ts cites the same sources).
 */
export const INSTANCE_GROUP_MAX_INSTANCES = 1000;

/**
 * An instance group holds at most INSTANCE_GROUP_MAX_INSTANCES instances (see there for the
 * documentation). GCE's message for this refusal is not documented: the form here is that of
 * GCE's other fixed-limit errors ("Exceeded limit '<LIMIT>' on resource '<name>'. Limit: <n>").
 */
function requireGroupSize(env: RuleEnv, key: ResourceKey, instances: Json | undefined): void {
  const count = Array.isArray(instances) ? new Set(instances).size : 0;
  if (count > env.groupMaxInstances) {
    throw new GceError(
      400,
      `Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource '${key.name}'. Limit: ${env.groupMaxInstances}.0`,
      "limitExceeded",
    );
  }
}

/**
 * An instance of an unmanaged group must exist, be in the group's zone and in the group's
 * network (instanceGroups.addInstances: "instances ... must be in the same zone and network").
 */
function requireGroupMember(
  env: RuleEnv,
  key: ResourceKey,
  network: Json | undefined,
  link: Json,
  index: number,
): void {
  if (typeof link !== "string") {
    return;
  }
  const member = env.keyOfPath(link);
  if (member !== undefined && member.scope !== key.scope) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.instances[${index}]': '${link}'. Instance must be in zone '${key.scope}' of the instance group.`,
      "invalid",
    );
  }
  env.requireExists(link);
  const instance = member === undefined ? undefined : env.store.peek(member);
  const nics = instance?.properties.networkInterfaces;
  const nic = Array.isArray(nics) ? nics[0] : undefined;
  const instanceNetwork = isJsonObject(nic) ? nic.network : undefined;
  if (typeof network === "string" && typeof instanceNetwork === "string" && instanceNetwork !== network) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.instances[${index}]': '${link}'. Instance is in network '${instanceNetwork}', not in the network of the instance group '${network}'.`,
      "invalid",
    );
  }
}

/** The subnetwork link of an instance's first interface, if it has one. */
function subnetworkOf(env: RuleEnv, link: Json): string | undefined {
  const key = typeof link === "string" ? env.keyOfPath(link) : undefined;
  const nics = key === undefined ? undefined : env.store.peek(key)?.properties.networkInterfaces;
  const nic = Array.isArray(nics) ? nics[0] : undefined;
  return isJsonObject(nic) && typeof nic.subnetwork === "string" ? nic.subnetwork : undefined;
}

/** `projects/…/regions/…/subnetworks/…` of a subnetwork link, as GCE's message names it. */
function relativeLink(link: string): string {
  const at = link.indexOf("projects/");
  return at < 0 ? link : link.slice(at);
}

/**
 * "An unmanaged instance group is a collection of virtual machines (VMs) that reside in a single
 * zone, VPC network, and subnet" (cloud.google.com/compute/docs/instance-groups/creating-groups-of-unmanaged-instances):
 * every member's interface is in the subnetwork of the group's first member. GCE's refusal, as
 * kubernetes/ingress-gce#282 quotes it: "Error 400: Resource 'projects/…/zones/us-central1-b/instances/…'
 * is expected to be in the subnetwork 'projects/…/regions/us-central1/subnetworks/…' but is in the
 * subnetwork 'projects/…/regions/us-central1/subnetworks/…'., wrongSubnetwork".
 */
function requireOneSubnetwork(env: RuleEnv, instances: Json | undefined): void {
  if (!Array.isArray(instances)) {
    return;
  }
  let expected: string | undefined;
  for (const link of instances) {
    const subnetwork = subnetworkOf(env, link);
    if (subnetwork === undefined || typeof link !== "string") {
      continue;
    }
    if (expected === undefined) {
      expected = subnetwork;
    } else if (subnetwork !== expected) {
      throw new GceError(
        400,
        `Resource '${relativeLink(link)}' is expected to be in the subnetwork '${relativeLink(expected)}' but is in the subnetwork '${relativeLink(subnetwork)}'.`,
        "wrongSubnetwork",
      );
    }
  }
}

export const INSTANCE_GROUP_RULES: KindRules = {
  requireUrls(props) {
    requireUrl("network", props.network);
  },
  materialize(env, key, props) {
    env.networks.requireNetwork(props.network);
    requireGroupSize(env, key, props.instances);
    if (Array.isArray(props.instances)) {
      props.instances.forEach((i, index) => requireGroupMember(env, key, props.network, i, index));
    }
    requireOneSubnetwork(env, props.instances);
    props.size = Array.isArray(props.instances) ? props.instances.length : 0;
  },
  usedBy: (link, user) =>
    user.kind === "backendServices" &&
    Array.isArray(user.properties.backends) &&
    user.properties.backends.some((b) => isJsonObject(b) && b.group === link),
};
