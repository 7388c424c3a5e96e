/**
 * What one Pulumi stack declares for a scope: `all` (cluster and every Service, one stack),
 * `cluster`, or `service:<namespace>/<name>`. Used by index.ts (CI) and the daemon alike.
 */
import * as pulumi from "@pulumi/pulumi";
import {
  CLUSTER_STACK,
  FIREWALL_PRIORITY_DEFAULT,
  instanceGroupKey,
  type DesiredState,
  type OwnerMarker,
  type PublishedFirewall,
  type Rejection,
  type ServiceDesired,
  Scope,
} from "../model";
import { adoptionTransformations, type Adoption } from "./adoption";
import { ClusterNetwork } from "./clusterNetwork";
import { globalLink, regionalLink, zonalLink } from "./links";
import {
  ServiceLoadBalancer,
  type AddressPin,
  type ClusterRefs,
  type LoadBalancerResources,
} from "./serviceLoadBalancer";

export interface LoadBalancerOutput {
  ingress: string[];
  resources: LoadBalancerResources;
  /** model/ruleShape.ts forwardingRuleShape of the Service as declared. */
  forwardingRuleShape: string;
  /**
   * config `firewallManagement: manual` only: the rules the Service's stack would have declared,
   * sorted by name, for the Event `LoadBalancerManualChange`. Absent otherwise (outputs as before).
   */
  publishedFirewalls?: PublishedFirewall[];
}

export interface StackOutputs {
  loadBalancers: Record<string, pulumi.Output<LoadBalancerOutput>>;
  /** instanceGroupKey → self link: the zone for its first group, `<zone>/<name>` for the others. */
  instanceGroups: Record<string, pulumi.Output<string>>;
  /** Cluster scopes only: `<zone>/<name>` → instance names of every group, read back as ObservedCloud.groupMembers. */
  instanceGroupMembers?: Record<string, string[]>;
  routes: Record<string, pulumi.Output<string>>;
  /** Self link of the legacy HTTP health check target pools use, while one is declared. */
  legacyNodeHealthCheck?: pulumi.Output<string>;
  /**
   * Cluster scopes, only when not GCE's default: the node health-check firewall's priority (999
   * with the deny rules on), so that a Service stack creates its deny rule only once it is applied
   * (controllers/cluster/controller.ts clusterReadyFor).
   */
  nodeHealthCheckFirewallPriority?: number;
  /** Cluster scopes with config `firewallManagement: manual` only: the node health-check firewall, not declared. */
  publishedFirewalls?: PublishedFirewall[];
}

/** References to the cluster stack's resources by name, for a Service stack that cannot see them. */
export function clusterRefsByName(desired: DesiredState): ClusterRefs {
  const { cluster } = desired;
  const instanceGroups: Record<string, string> = {};
  for (const group of cluster.instanceGroups)
    instanceGroups[instanceGroupKey(group)] = zonalLink(cluster.project, group.zone, "instanceGroups", group.name);
  return {
    nodeHealthCheck: regionalLink(cluster.project, cluster.region, "healthChecks", cluster.nodeHealthCheck.name),
    legacyNodeHealthCheck: globalLink(cluster.project, "httpHealthChecks", cluster.nodeHealthCheck.name),
    instanceGroups,
  };
}

/**
 * Who keeps a `neg` Service's NEG endpoints: the daemon's NEG controller (controllers/neg/), or the
 * stack itself, as NetworkEndpointList resources, when the stack program runs from CI without one.
 */
export type NegEndpointsKeeper = "controller" | "stack";

function declareService(
  service: ServiceDesired,
  desired: DesiredState,
  refs: ClusterRefs,
  opts: pulumi.ComponentResourceOptions,
  owner: OwnerMarker | undefined,
  pin: AddressPin | undefined,
  negEndpoints: NegEndpointsKeeper,
): pulumi.Output<LoadBalancerOutput> {
  const { cluster } = desired;
  const ownEndpoints = (desired.networkEndpointGroups ?? []).filter((neg) => neg.service === service.key);
  const lb = new ServiceLoadBalancer(
    service.key,
    {
      service,
      project: cluster.project,
      region: cluster.region,
      network: cluster.network,
      cluster: refs,
      ...(owner !== undefined ? { owner } : {}),
      ...(pin !== undefined ? { pin } : {}),
      ...(negEndpoints === "stack" && service.backend === "neg" ? { negEndpoints: ownEndpoints } : {}),
      ...(service.firewallManagement === "manual" ? { firewallsPublished: true as const } : {}),
    },
    opts,
  );
  return pulumi.all([lb.ingressIPs, lb.publishedFirewalls]).apply(([ingress, published]) => ({
    ingress,
    resources: lb.resources,
    forwardingRuleShape: lb.forwardingRuleShape,
    ...(service.firewallManagement === "manual" ? { publishedFirewalls: published } : {}),
  }));
}

export interface DeclaredStack {
  outputs: StackOutputs;
  /** Rejections of Services in this scope; the caller must fail the run so that nothing is deleted. */
  rejected: Rejection[];
}

/**
 * Declares the scope's valid resources. A single-Service scope whose Service is rejected throws
 * before declaring anything: declaring nothing would make `up` delete its load balancer.
 * `adoption`: existing GCE resources the children import (components/adoption.ts). `owner`: the
 * marker every created resource's description carries (the daemon's clusterId and cluster UID);
 * none from CI, which has no cluster UID (its resources are never proven leaks). `negEndpoints`: who
 * keeps the NEGs' endpoints (the stack program from CI: `stack`).
 */
export function declareStack(
  desired: DesiredState,
  scope: Scope,
  adoption?: Adoption,
  owner?: OwnerMarker,
  negEndpoints: NegEndpointsKeeper = "controller",
): DeclaredStack {
  const opts: pulumi.ComponentResourceOptions = { transformations: adoptionTransformations(adoption) };
  for (const warning of desired.warnings) void pulumi.log.warn(warning);
  const outputs: StackOutputs = { loadBalancers: {}, instanceGroups: {}, routes: {} };
  let refs = clusterRefsByName(desired);
  if (scope.kind === "all" || scope.kind === "cluster") {
    const network = new ClusterNetwork(
      CLUSTER_STACK,
      {
        cluster: desired.cluster,
        ...(owner !== undefined ? { owner } : {}),
        ...(desired.cluster.firewallManagement === "manual" ? { firewallsPublished: true as const } : {}),
      },
      opts,
    );
    if (desired.cluster.firewallManagement === "manual") outputs.publishedFirewalls = network.publishedFirewalls;
    outputs.instanceGroups = network.instanceGroups;
    outputs.instanceGroupMembers = network.instanceGroupMembers;
    outputs.routes = network.routes;
    if (network.legacyNodeHealthCheck !== undefined) outputs.legacyNodeHealthCheck = network.legacyNodeHealthCheck;
    const priority = desired.cluster.nodeHealthCheckFirewall.priority;
    if (priority !== FIREWALL_PRIORITY_DEFAULT) outputs.nodeHealthCheckFirewallPriority = priority;
    refs = {
      nodeHealthCheck: network.nodeHealthCheck,
      legacyNodeHealthCheck: network.legacyNodeHealthCheck ?? refs.legacyNodeHealthCheck,
      instanceGroups: network.instanceGroups,
    };
  }
  if (scope.kind === "cluster") return { outputs, rejected: [] };

  const inScope = (key: string): boolean => scope.kind === "all" || key === `${scope.namespace}/${scope.name}`;
  const rejected = desired.rejected.filter((rejection) => inScope(rejection.service));
  if (scope.kind === "service" && rejected.length > 0)
    throw new Error(rejected.map((rejection) => rejection.message).join("\n"));
  for (const service of desired.services) {
    if (inScope(service.key))
      outputs.loadBalancers[service.key] = declareService(
        service,
        desired,
        refs,
        opts,
        owner,
        adoption?.addressPins?.get(service.key),
        negEndpoints,
      );
  }
  return { outputs, rejected };
}
