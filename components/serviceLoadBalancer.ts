import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { FrontendSpec, ServiceDesired } from "../model";
import { instanceLink } from "./links";
import { firewall, legacyHealthCheck, regionHealthCheck } from "./primitives";

/** What a Service's load balancer uses from the cluster stack. */
export interface ClusterRefs {
  /** Self link of the shared regional node health check. */
  nodeHealthCheck: pulumi.Input<string>;
  /** Self link of the shared legacy HTTP health check (target-pool mode). */
  legacyNodeHealthCheck: pulumi.Input<string>;
  /** zone → instance group self link. */
  instanceGroups: Record<string, pulumi.Input<string>>;
}

export interface ServiceLoadBalancerArgs {
  service: ServiceDesired;
  project: string;
  region: string;
  network: string;
  cluster: ClusterRefs;
}

export interface LoadBalancerResources {
  address?: string;
  forwardingRules: string[];
  backendServices: string[];
  targetPool?: string;
  healthCheck: string;
  firewalls: string[];
}

/**
 * One LoadBalancer Service: address, health check (ETP=Local only), backend service per protocol
 * (or target pool), forwarding rule per protocol, firewalls.
 */
export class ServiceLoadBalancer extends pulumi.ComponentResource {
  /** The IPs to publish in status.loadBalancer.ingress. */
  readonly ingressIPs: pulumi.Output<string[]>;
  readonly resources: LoadBalancerResources;

  constructor(name: string, args: ServiceLoadBalancerArgs, opts?: pulumi.ComponentResourceOptions) {
    super("dccm:gcp:ServiceLoadBalancer", name, {}, opts);
    const { service, project, region, network, cluster } = args;
    // GCE names are fixed, so a replacement must delete the old resource before creating the new one.
    const childOpts: pulumi.CustomResourceOptions = { parent: this, deleteBeforeReplace: true };
    const internal = service.scheme === "INTERNAL";
    const dedicated = service.healthCheck.kind === "dedicated";
    const targetPoolMode = service.backend === "target-pool";

    // A user-owned loadBalancerIP is used as is; it is never reserved, so never released.
    const address =
      service.userIP === undefined
        ? new gcp.compute.Address(
            `${name}:address`,
            {
              project,
              region,
              name: service.lbName,
              description: service.description,
              addressType: service.scheme,
              // An internal IP shared by several forwarding rules (mixed protocols) must say so.
              ...(internal
                ? { subnetwork: service.subnetwork, purpose: service.frontends.length > 1 ? "SHARED_LOADBALANCER_VIP" : "GCE_ENDPOINT" }
                : { networkTier: service.networkTier }),
            },
            childOpts,
          )
        : undefined;
    const ipAddress: pulumi.Input<string> = address !== undefined ? address.address : (service.userIP ?? "");

    let healthCheckLink: pulumi.Input<string>;
    if (targetPoolMode) {
      healthCheckLink = dedicated
        ? legacyHealthCheck(`${name}:hc`, project, service.healthCheck.spec, childOpts).selfLink
        : cluster.legacyNodeHealthCheck;
    } else {
      healthCheckLink = dedicated
        ? regionHealthCheck(`${name}:hc`, project, region, service.healthCheck.spec, childOpts).selfLink
        : cluster.nodeHealthCheck;
    }

    let targetPool: gcp.compute.TargetPool | undefined;
    if (targetPoolMode) {
      targetPool = new gcp.compute.TargetPool(
        `${name}:target-pool`,
        {
          project,
          region,
          name: service.lbName,
          description: service.description,
          sessionAffinity: service.sessionAffinity,
          healthChecks: healthCheckLink,
          instances: service.backendInstances.map((instance) => instanceLink(project, instance.zone, instance.name)),
        },
        childOpts,
      );
    }

    const backendServices: string[] = [];
    const forwardingRules = service.frontends.map((frontend) => {
      const suffix = frontend.protocol.toLowerCase();
      let target: { target: pulumi.Input<string> } | { backendService: pulumi.Input<string> };
      if (targetPool !== undefined) {
        target = { target: targetPool.selfLink };
      } else {
        const backendService = new gcp.compute.RegionBackendService(
          `${name}:backend-${suffix}`,
          {
            project,
            region,
            name: frontend.name,
            description: service.description,
            protocol: frontend.protocol,
            loadBalancingScheme: service.scheme,
            sessionAffinity: service.sessionAffinity,
            healthChecks: healthCheckLink,
            ...(internal ? { network } : {}),
            backends: service.backendZones.map((zone) => ({
              group: instanceGroupLink(cluster, zone),
              balancingMode: "CONNECTION",
            })),
          },
          childOpts,
        );
        backendServices.push(frontend.name);
        target = { backendService: backendService.selfLink };
      }
      return new gcp.compute.ForwardingRule(
        `${name}:forwarding-rule-${suffix}`,
        {
          project,
          region,
          name: frontend.name,
          description: service.description,
          ipAddress,
          ipProtocol: frontend.protocol,
          loadBalancingScheme: service.scheme,
          ...portFields(frontend),
          ...(internal
            ? { network, subnetwork: service.subnetwork, allowGlobalAccess: service.allowGlobalAccess }
            : { networkTier: service.networkTier }),
          ...target,
        },
        childOpts,
      );
    });

    const firewalls = [service.firewall.name];
    firewall(`${name}:firewall`, project, network, service.firewall, childOpts);
    if (service.healthCheckFirewall !== undefined) {
      firewall(`${name}:hc-firewall`, project, network, service.healthCheckFirewall, childOpts);
      firewalls.push(service.healthCheckFirewall.name);
    }

    this.ingressIPs = pulumi
      .all(forwardingRules.map((rule) => rule.ipAddress))
      .apply((ips) => [...new Set(ips)].sort());
    this.resources = {
      ...(address !== undefined ? { address: service.lbName } : {}),
      forwardingRules: service.frontends.map((frontend) => frontend.name),
      backendServices,
      ...(targetPool !== undefined ? { targetPool: service.lbName } : {}),
      healthCheck: service.healthCheck.spec.name,
      firewalls,
    };
    this.registerOutputs({ ingressIPs: this.ingressIPs, resources: this.resources });
  }
}

function instanceGroupLink(cluster: ClusterRefs, zone: string): pulumi.Input<string> {
  const link = cluster.instanceGroups[zone];
  if (link === undefined) throw new Error(`no instance group for zone ${zone} in the cluster references`);
  return link;
}

function portFields(frontend: FrontendSpec): { ports: string[] } | { portRange: string } | { allPorts: boolean } {
  switch (frontend.portSelection.kind) {
    case "ports":
      return { ports: frontend.portSelection.ports };
    case "range":
      return { portRange: frontend.portSelection.portRange };
    case "all":
      return { allPorts: true };
  }
}
