/**
 * Self links for references that cross stacks (a Service stack points at the cluster stack's health
 * check and instance groups by name, since it cannot read another stack's resources).
 */
import { networkUrl, subnetworkUrl } from "../model";

const COMPUTE_V1 = "https://www.googleapis.com/compute/v1";

export function regionalLink(project: string, region: string, collection: string, name: string): string {
  return `${COMPUTE_V1}/projects/${project}/regions/${region}/${collection}/${name}`;
}

export function zonalLink(project: string, zone: string, collection: string, name: string): string {
  return `${COMPUTE_V1}/projects/${project}/zones/${zone}/${collection}/${name}`;
}

export function globalLink(project: string, collection: string, name: string): string {
  return `${COMPUTE_V1}/projects/${project}/global/${collection}/${name}`;
}

export function instanceLink(project: string, zone: string, name: string): string {
  return zonalLink(project, zone, "instances", name);
}

/**
 * A network reference from a resource of the service project. Under a Shared VPC it names the host
 * project (`projects/<host>/global/networks/<net>`): a bare name would be expanded in the resource's
 * own project (ParseNetworkFieldValue), where the network is not. Without one, the value as declared
 * today, so existing stacks see no diff.
 */
export function sharedNetwork(networkProject: string | undefined, network: string): string {
  return networkProject === undefined ? network : networkUrl(networkProject, network);
}

/** A subnetwork reference from a resource of the service project, as `sharedNetwork`. */
export function sharedSubnetwork(networkProject: string | undefined, region: string, subnetwork: string): string {
  return networkProject === undefined ? subnetwork : subnetworkUrl(networkProject, region, subnetwork);
}

/** A NEG's key in outputs and observations: `<zone>/<name>` (ObservedCloud.negMembers). */
export function negKey(neg: { zone: string; name: string }): string {
  return `${neg.zone}/${neg.name}`;
}
