import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import {
  instanceGroupKey,
  networkProjectOf,
  ownedDescription,
  type ClusterDesired,
  type OwnerMarker,
  type PublishedFirewall,
} from "../model";
import { instanceLink, negKey, networkUrl, subnetworkUrl } from "./links";
import { ignoredChanges } from "./ignored";
import { firewall, legacyHealthCheck, regionHealthCheck } from "./primitives";

export interface ClusterNetworkArgs {
  cluster: ClusterDesired;
  /** Written into the description of every group, health check and firewall created (model/names.ts OwnerMarker); none without it. */
  owner?: OwnerMarker;
  /** model/firewallCommands.ts firewallsPublished: the node health-check firewall is not declared but published. */
  firewallsPublished?: true;
}

/**
 * The cluster stack: per-zone instance groups of the backend nodes, the shared node health check
 * and its firewall, one route per node podCIDR, and the `neg` Services' GCE_VM_IP NEGs with their
 * endpoints (here, not in the Service stacks: a node's entry or exit is one run of this stack).
 */
export class ClusterNetwork extends pulumi.ComponentResource {
  /** instanceGroupKey (the zone for its first group, `<zone>/<name>` for the others) → self link. */
  readonly instanceGroups: Record<string, pulumi.Output<string>>;
  /** `<zone>/<name>` → instance names, of every group: what the next run keeps in place (model/groups.ts). */
  readonly instanceGroupMembers: Record<string, string[]>;
  readonly nodeHealthCheck: pulumi.Output<string>;
  readonly legacyNodeHealthCheck: pulumi.Output<string> | undefined;
  /** node name → route name, for the routes this stack declares. */
  readonly routes: Record<string, pulumi.Output<string>>;
  /** `<zone>/<name>` → self link of every NEG of a `neg` Service. */
  readonly networkEndpointGroups: Record<string, pulumi.Output<string>>;
  /** `<zone>/<name>` → instance names of every NEG: read back as ObservedCloud.negMembers (subsets stay stable). */
  readonly networkEndpointGroupMembers: Record<string, string[]>;
  /** With `firewallsPublished`: the node health-check firewall, for someone else to write; otherwise none. */
  readonly publishedFirewalls: PublishedFirewall[];

  constructor(name: string, args: ClusterNetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super("dccm:gcp:ClusterNetwork", name, {}, opts);
    const cluster = ownedCluster(args.cluster, args.owner);
    // GCE names are fixed, so a replacement must delete the old resource before creating the new one.
    const childOpts: pulumi.CustomResourceOptions = { parent: this, deleteBeforeReplace: true };

    this.instanceGroups = {};
    this.instanceGroupMembers = {};
    for (const group of cluster.instanceGroups) {
      // The first group keeps the Pulumi name it had when a zone had one group; another
      // subnetwork's groups carry its hash, as their GCE names do.
      const subnetworkPart = group.subnetworkHash === undefined ? "" : `-${group.subnetworkHash}`;
      const resource = new gcp.compute.InstanceGroup(
        `${name}:ig-${group.zone}${subnetworkPart}${group.index === undefined ? "" : `-${group.index}`}`,
        {
          project: cluster.project,
          zone: group.zone,
          name: group.name,
          description: group.description,
          network: networkUrl(networkProjectOf(cluster), cluster.network),
          instances: group.instances.map((instance) => instanceLink(cluster.project, group.zone, instance)),
        },
        // Both force a replacement (terraform-provider-google resource_compute_instance_group.go:
        // description and network are ForceNew), which can never succeed while a backend service
        // uses the group (GCE refuses to delete it), and neither changes for a group dccm created.
        // Groups adopted from the stock CCM have neither (it creates them with a name only,
        // gce_instancegroup.go CreateInstanceGroup): they keep what they have.
        { ...childOpts, ignoreChanges: ignoredChanges("gcp:compute/instanceGroup:InstanceGroup") },
      );
      this.instanceGroups[instanceGroupKey(group)] = resource.selfLink;
      this.instanceGroupMembers[`${group.zone}/${group.name}`] = [...group.instances];
    }

    this.nodeHealthCheck = regionHealthCheck(
      `${name}:node-hc`,
      cluster.project,
      cluster.region,
      cluster.nodeHealthCheck,
      childOpts,
    ).selfLink;
    this.legacyNodeHealthCheck = cluster.legacyNodeHealthCheck
      ? legacyHealthCheck(`${name}:node-legacy-hc`, cluster.project, cluster.nodeHealthCheck, childOpts).selfLink
      : undefined;
    if (args.firewallsPublished === true)
      this.publishedFirewalls = [{ action: "allow", spec: cluster.nodeHealthCheckFirewall, destinationRanges: [] }];
    else {
      // Firewalls and routes live in the network's project (cloud-provider-gcp v0.28.2 support.go:
      // the Firewalls and Routes calls go to NetworkProjectID, everything else to ProjectID).
      firewall(
        `${name}:node-hc-fw`,
        networkProjectOf(cluster),
        cluster.network,
        cluster.nodeHealthCheckFirewall,
        childOpts,
      );
      this.publishedFirewalls = [];
    }

    this.routes = {};
    for (const route of cluster.routes) {
      const resource = new gcp.compute.Route(
        `${name}:route-${route.node}`,
        {
          project: networkProjectOf(cluster),
          name: route.name,
          network: cluster.network,
          destRange: route.destRange,
          // The instance's link, as GCE stores it (and as the stock CCM's routes hold it): the same
          // instance as a bare name with its zone, so routes applied by earlier dccm versions stay.
          nextHopInstance: instanceLink(cluster.project, route.nextHopInstanceZone, route.nextHopInstance),
          nextHopInstanceZone: route.nextHopInstanceZone,
          priority: route.priority,
          description: route.description,
        },
        // GCE stores no zone on a route: nextHopInstanceZone is the provider's way to qualify a bare
        // instance name (resource_compute_route.go), so a route read back or adopted from the stock
        // CCM (nextHopInstance `zones/<z>/instances/<n>`) has none, and the field is ForceNew. The
        // zone is in the instance's link either way; the route's name holds the Node's UID.
        { ...childOpts, ignoreChanges: ignoredChanges("gcp:compute/route:Route") },
      );
      this.routes[route.node] = resource.name;
    }

    const negs = declareNegs(name, cluster, childOpts);
    this.networkEndpointGroups = negs.links;
    this.networkEndpointGroupMembers = negs.members;

    this.registerOutputs({
      instanceGroups: this.instanceGroups,
      instanceGroupMembers: this.instanceGroupMembers,
      // Only with NEGs: a cluster without `neg` Services records what it did before.
      ...(cluster.networkEndpointGroups !== undefined
        ? {
            networkEndpointGroups: this.networkEndpointGroups,
            networkEndpointGroupMembers: this.networkEndpointGroupMembers,
          }
        : {}),
      nodeHealthCheck: this.nodeHealthCheck,
      legacyNodeHealthCheck: this.legacyNodeHealthCheck,
      routes: this.routes,
    });
  }
}

/**
 * Per NEG of a `neg` Service: the GCE_VM_IP NetworkEndpointGroup and its NetworkEndpointList.
 * Returns their self links and members by `<zone>/<name>`.
 */
function declareNegs(
  name: string,
  cluster: ClusterDesired,
  childOpts: pulumi.CustomResourceOptions,
): { links: Record<string, pulumi.Output<string>>; members: Record<string, string[]> } {
  const links: Record<string, pulumi.Output<string>> = {};
  const members: Record<string, string[]> = {};
  for (const neg of cluster.networkEndpointGroups ?? []) {
    const key = negKey(neg);
    const group = new gcp.compute.NetworkEndpointGroup(
      `${name}:neg-${neg.zone}-${neg.name}`,
      {
        project: cluster.project,
        zone: neg.zone,
        name: neg.name,
        description: neg.description,
        networkEndpointType: "GCE_VM_IP",
        network: networkUrl(networkProjectOf(cluster), cluster.network),
        subnetwork: subnetworkUrl(networkProjectOf(cluster), cluster.region, neg.subnetwork),
      },
      // A NEG has no update method: every input forces a replacement, which GCE refuses while a
      // backend service lists it; the owner marker is written at creation only.
      { ...childOpts, ignoreChanges: ignoredChanges("gcp:compute/networkEndpointGroup:NetworkEndpointGroup") },
    );
    // One list per NEG, updated in place (google_compute_network_endpoints detaches the endpoints
    // that left and attaches those that came): a node's entry or exit never replaces the group a
    // backend service lists.
    new gcp.compute.NetworkEndpointList(
      `${name}:neg-${neg.zone}-${neg.name}-endpoints`,
      {
        project: cluster.project,
        zone: neg.zone,
        networkEndpointGroup: group.name,
        networkEndpoints: neg.endpoints.map((endpoint) => ({
          instance: endpoint.instance,
          ipAddress: endpoint.ipAddress,
        })),
      },
      { parent: group, deleteBeforeReplace: true },
    );
    links[key] = group.selfLink;
    members[key] = neg.endpoints.map((endpoint) => endpoint.instance);
  }
  return { links, members };
}

/**
 * The cluster with the owner marker in the descriptions of its groups, NEGs, health check and firewall
 * (not its routes: their description is the stock CCM's). Here, not in the model, so the stack's
 * hash stays; resources that exist keep their description (ignoreChanges).
 */
function ownedCluster(cluster: ClusterDesired, owner: OwnerMarker | undefined): ClusterDesired {
  if (owner === undefined) return cluster;
  const owned = <T extends { description: string }>(spec: T): T => ({
    ...spec,
    description: ownedDescription(spec.description, owner),
  });
  return {
    ...cluster,
    instanceGroups: cluster.instanceGroups.map(owned),
    nodeHealthCheck: owned(cluster.nodeHealthCheck),
    nodeHealthCheckFirewall: owned(cluster.nodeHealthCheckFirewall),
    ...(cluster.networkEndpointGroups !== undefined
      ? { networkEndpointGroups: cluster.networkEndpointGroups.map(owned) }
      : {}),
  };
}
