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
              // Every internal address is reserved as SHARED_LOADBALANCER_VIP, even for one protocol:
              // GCE lets several INTERNAL forwarding rules share an IP only through such an address,
              // and `purpose` forces a replacement (a new IP) once set, so a Service that gains a
              // second protocol must already hold one.
              ...(internal ? { subnetwork: service.subnetwork, purpose: "SHARED_LOADBALANCER_VIP" } : { networkTier: service.networkTier }),
            },
            // Stacks of earlier dccm versions hold single-protocol internal addresses with purpose
            // GCE_ENDPOINT: replacing them would change the Service's IP on upgrade, which users
            // must never see, so an existing address keeps its purpose (see README "Known limits").
            { ...childOpts, ignoreChanges: ["purpose"] },
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
    const protocols = service.frontends.map((frontend) => frontend.protocol);
    const forwardingRules = service.frontends.map((frontend) => {
      const suffix = frontend.protocol.toLowerCase();
      // The first frontend keeps the bare GCE name whatever its protocol, but its Pulumi name carries
      // the protocol: a Service switched from TCP to UDP would make the engine create `backend-udp`
      // (same GCE name) before deleting `backend-tcp`, and GCE answers 409 alreadyExists forever.
      // Aliasing the other protocol's Pulumi name (only when no frontend of that protocol is still
      // declared) turns the switch into a change of the same resources.
      const aliases: pulumi.Input<pulumi.Alias>[] =
        frontend.name === service.lbName ? otherProtocols(protocols).map((other) => ({ name: `${name}:backend-${other.toLowerCase()}` })) : [];
      const ruleAliases: pulumi.Input<pulumi.Alias>[] =
        frontend.name === service.lbName
          ? otherProtocols(protocols).map((other) => ({ name: `${name}:forwarding-rule-${other.toLowerCase()}` }))
          : [];
      let target: { target: pulumi.Input<string> } | { backendService: pulumi.Input<string> };
      let replaceWith: pulumi.Resource[];
      if (targetPool !== undefined) {
        target = { target: targetPool.selfLink };
        // A target pool's sessionAffinity and description force its replacement, but a forwarding
        // rule's target is updated in place (terraform-provider-google-beta resource_compute_forwarding_rule.go
        // `target` has no ForceNew; setTarget). With delete-before-replace (the pool's name is fixed)
        // the engine would delete the pool while the rule still points at it: resourceInUseByAnotherResource
        // on every retry. So the rule is replaced with the pool: deleted first, created after. Re-pointing
        // the rule instead would need a second pool under another name, which the stock CCM's naming
        // (and adoption of its load balancers) does not allow. The IP stays: it is the reserved address
        // `<lb>` (or the user's loadBalancerIP), which outlives the rule.
        replaceWith = [targetPool];
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
          // A new protocol replaces the backend service (delete first: the name is fixed) rather than
          // updating it under a forwarding rule of the old protocol; its forwarding rule, whose
          // backendService forces a replacement, is deleted before it and created after it.
          { ...childOpts, aliases, replaceOnChanges: ["protocol"] },
        );
        backendServices.push(frontend.name);
        target = { backendService: backendService.selfLink };
        replaceWith = [backendService];
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
        { ...childOpts, aliases: ruleAliases, replaceWith },
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

/** TCP/UDP minus the protocols still declared: the Pulumi names a first frontend may inherit. */
function otherProtocols(declared: readonly string[]): string[] {
  return ["TCP", "UDP"].filter((protocol) => !declared.includes(protocol));
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
