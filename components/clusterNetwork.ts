import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import {
  instanceGroupKey,
  networkProjectOf,
  networkUrl,
  ownedDescription,
  type ClusterDesired,
  type OwnerMarker,
  type PublishedFirewall,
} from "../model";
import { instanceLink } from "./links";
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
 * and its firewall, one route per node podCIDR.
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

    this.registerOutputs({
      instanceGroups: this.instanceGroups,
      instanceGroupMembers: this.instanceGroupMembers,
      nodeHealthCheck: this.nodeHealthCheck,
      legacyNodeHealthCheck: this.legacyNodeHealthCheck,
      routes: this.routes,
    });
  }
}

/**
 * The cluster with the owner marker in the descriptions of its groups, health check and firewall
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
  };
}
