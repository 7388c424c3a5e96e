import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import {
  backendGroupKeys,
  forwardingRuleShape,
  ipv6Name,
  ownedDescription,
  type DenyFirewallSpec,
  type FirewallDestination,
  type FirewallSpec,
  type PublishedFirewall,
  type FrontendSpec,
  type Ipv6Desired,
  type NegSpec,
  type OwnerMarker,
  type ServiceDesired,
} from "../model";
import { networkUrl, subnetworkUrl } from "../model";
import { instanceLink, negKey, sharedNetwork, sharedSubnetwork } from "./links";
import { ignoredChanges } from "./ignored";
import { denyFirewall, firewall, legacyHealthCheck, regionHealthCheck } from "./primitives";

/** What a Service's load balancer uses from the cluster stack. */
export interface ClusterRefs {
  /** Self link of the shared regional node health check. */
  nodeHealthCheck: pulumi.Input<string>;
  /** Self link of the shared legacy HTTP health check (target-pool mode). */
  legacyNodeHealthCheck: pulumi.Input<string>;
  /** instanceGroupKey (the zone for its first group, `<zone>/<name>` for the others) → self link. */
  instanceGroups: Record<string, pulumi.Input<string>>;
}

/**
 * A run's hold on a transient Service's IPv4 address (controllers/service/addressPins.ts): its
 * forwarding rules are declared on `ip`, so a rule the run replaces is created again on it.
 * `reserve`: the address `<lb>` is declared holding `ip` (reserved before the run, imported by it);
 * otherwise `<lb>` is not declared, and a run of a stack holding it deletes it last, after every
 * replacement: GCE then leaves the IP on the rules as ephemeral.
 */
export interface AddressPin {
  ip: string;
  reserve: boolean;
}

export interface ServiceLoadBalancerArgs {
  service: ServiceDesired;
  project: string;
  region: string;
  network: string;
  cluster: ClusterRefs;
  /** Written into the description of every resource created (model/names.ts OwnerMarker); none without it. */
  owner?: OwnerMarker;
  /**
   * model/firewallCommands.ts firewallsPublished: no firewall is declared; the rules it would have
   * declared are the component's `publishedFirewalls`, for someone else to write. Absent: declared.
   */
  firewallsPublished?: true;
  /** A transient Service's IPv4 address held for this run; none: its rules keep whatever IP they have. */
  pin?: AddressPin;
  /**
   * Backend `neg`, from the stack program run by CI (no daemon, so no NEG controller): its NEGs'
   * endpoints, declared as a NetworkEndpointList per NEG. Absent in the daemon, whose NEG controller
   * keeps them in no stack.
   */
  negEndpoints?: readonly NegSpec[];
}

export interface LoadBalancerResources {
  address?: string;
  forwardingRules: string[];
  backendServices: string[];
  targetPool?: string;
  healthCheck: string;
  firewalls: string[];
  /** IPv6 Services only: the address `<lb>-ipv6` (unless a user-owned IPv6 loadBalancerIP). */
  ipv6Address?: string;
  /** Backend `neg` only, once its backend services list its NEGs (`<zone>/<name>`, filled by the NEG controller). */
  networkEndpointGroups?: string[];
}

/**
 * One LoadBalancer Service: address, health check (ETP=Local only), backend service per protocol
 * (or target pool), forwarding rule per protocol, firewalls; backend `neg`: its zonal GCE_VM_IP
 * NEGs, without endpoints (the NEG controller's, controllers/neg/).
 */
export class ServiceLoadBalancer extends pulumi.ComponentResource {
  /** The IPs to publish in status.loadBalancer.ingress. */
  readonly ingressIPs: pulumi.Output<string[]>;
  readonly resources: LoadBalancerResources;
  /** model/ruleShape.ts: recorded, so that the next run knows whether it may replace a forwarding rule. */
  readonly forwardingRuleShape: string;
  /** With `firewallsPublished`: the rules dccm would have declared, sorted by name; otherwise none. */
  readonly publishedFirewalls: pulumi.Output<PublishedFirewall[]>;

  constructor(name: string, args: ServiceLoadBalancerArgs, opts?: pulumi.ComponentResourceOptions) {
    super("dccm:gcp:ServiceLoadBalancer", name, {}, opts);
    const service = ownedService(args.service, args.owner);
    // GCE names are fixed, so a replacement must delete the old resource before creating the new one.
    const childOpts: pulumi.CustomResourceOptions = { parent: this, deleteBeforeReplace: true };
    const negs =
      service.backend === "neg" ? declareNegs(name, { ...args, service }, childOpts) : { links: {}, lists: [] };
    const children: Children = {
      name,
      args: { ...args, service },
      opts: childOpts,
      negs: negs.links,
      negLists: negs.lists,
      published: [],
    };
    // A SingleStack IPv6 Service declares no IPv4 address, forwarding rule or firewall.
    const ipv4 = service.ipv6Only !== true;
    const address = ipv4 ? declareAddress(children) : undefined;
    // Undefined: an ephemeral IP, GCE's (or the one the rule already has: the field is Optional and Computed).
    const ipAddress: pulumi.Input<string> | undefined = address?.address ?? service.userIP ?? args.pin?.ip;
    const healthCheck = declareHealthCheck(children);
    const targetPool = service.backend === "target-pool" ? declareTargetPool(children, healthCheck) : undefined;
    const protocols = service.frontends.map((frontend) => frontend.protocol);
    const frontends = service.frontends.map((frontend) =>
      declareFrontend(children, frontend, protocols, ipv4 ? { ipAddress } : undefined, healthCheck, targetPool),
    );
    // The firewalls open towards the load balancer's IP: its address's, or its first rule's.
    const ownIp = ipAddress ?? frontends[0]?.rule?.ipAddress;
    const firewalls = ipv4 ? declareFirewalls(children, ownIp) : [];
    const ipv6 = service.ipv6 !== undefined ? declareIpv6(children, service.ipv6, frontends, protocols) : undefined;

    const rules = [
      ...frontends.flatMap((frontend) => (frontend.rule !== undefined ? [frontend.rule] : [])),
      ...(ipv6?.rules ?? []),
    ];
    this.ingressIPs = pulumi.all(rules.map((rule) => rule.ipAddress)).apply(ingressOrder);
    this.forwardingRuleShape = forwardingRuleShape(service);
    this.publishedFirewalls = pulumi
      .all(children.published)
      .apply((rules) => [...rules].sort((a, b) => a.spec.name.localeCompare(b.spec.name)));
    this.resources = {
      ...(address !== undefined ? { address: service.lbName } : {}),
      forwardingRules: [
        ...(ipv4 ? service.frontends.map((frontend) => frontend.name) : []),
        ...(ipv6?.ruleNames ?? []),
      ],
      backendServices: frontends.flatMap((frontend) => (frontend.backend !== undefined ? [frontend.name] : [])),
      ...(targetPool !== undefined ? { targetPool: service.lbName } : {}),
      healthCheck: service.healthCheck.spec.name,
      firewalls: [...firewalls, ...(ipv6?.firewalls ?? [])],
      ...(ipv6?.address !== undefined ? { ipv6Address: ipv6.address } : {}),
      ...(service.backend === "neg" && service.negsPending !== true
        ? { networkEndpointGroups: (service.backendNegs ?? []).map(negKey) }
        : {}),
    };
    this.registerOutputs({
      ingressIPs: this.ingressIPs,
      resources: this.resources,
      forwardingRuleShape: this.forwardingRuleShape,
    });
  }
}

/**
 * The Service with the owner marker in every description it declares. Here, not in the model: the
 * stack's hash (of the ServiceDesired) stays, so no existing stack runs for it, and resources that
 * exist keep their description (ignoreChanges).
 */
function ownedService(service: ServiceDesired, owner: OwnerMarker | undefined): ServiceDesired {
  if (owner === undefined) return service;
  const owned = <T extends { description: string }>(spec: T): T => ({
    ...spec,
    description: ownedDescription(spec.description, owner),
  });
  const firewalls = (ipv6: Ipv6Desired): Ipv6Desired => ({
    ...ipv6,
    firewall: owned(ipv6.firewall),
    healthCheckFirewall: owned(ipv6.healthCheckFirewall),
    ...(ipv6.denyFirewall !== undefined ? { denyFirewall: owned(ipv6.denyFirewall) } : {}),
  });
  return {
    ...owned(service),
    healthCheck: { ...service.healthCheck, spec: owned(service.healthCheck.spec) },
    firewall: owned<FirewallSpec>(service.firewall),
    ...(service.healthCheckFirewall !== undefined ? { healthCheckFirewall: owned(service.healthCheckFirewall) } : {}),
    ...(service.denyFirewall !== undefined ? { denyFirewall: owned(service.denyFirewall) } : {}),
    ...(service.ipv6 !== undefined ? { ipv6: firewalls(service.ipv6) } : {}),
  };
}

/** What every child of one ServiceLoadBalancer is declared with. */
interface Children {
  /** The component's name: children are named `<name>:<part>`. */
  name: string;
  args: ServiceLoadBalancerArgs;
  opts: pulumi.CustomResourceOptions;
  /** Backend `neg`: `<zone>/<name>` → self link of each NEG this component declares. */
  negs: Record<string, pulumi.Output<string>>;
  /** Their endpoint lists, when declared here (ServiceLoadBalancerArgs.negEndpoints): the backend services wait for them. */
  negLists: pulumi.Resource[];
  /** With `firewallsPublished`: the rules not declared, their destination resolved. */
  published: pulumi.Output<PublishedFirewall>[];
}

/**
 * Per NEG of a `neg` Service (ServiceDesired.backendNegs): a zonal GCE_VM_IP NetworkEndpointGroup in
 * its subnetwork, as ingress-gce's NEG controller creates one per zone (pkg/neg/syncers); here,
 * beside the backend services that list it, so it is created before them and deleted after them.
 */
function declareNegs(
  name: string,
  args: ServiceLoadBalancerArgs,
  opts: pulumi.CustomResourceOptions,
): { links: Record<string, pulumi.Output<string>>; lists: pulumi.Resource[] } {
  const { service, project, region, network } = args;
  const host = service.networkProject ?? project;
  const links: Record<string, pulumi.Output<string>> = {};
  const lists: pulumi.Resource[] = [];
  const endpointsOf = new Map((args.negEndpoints ?? []).map((spec) => [negKey(spec), spec.endpoints]));
  for (const neg of service.backendNegs ?? []) {
    const group = new gcp.compute.NetworkEndpointGroup(
      `${name}:neg-${neg.zone}-${neg.name}`,
      {
        project,
        zone: neg.zone,
        name: neg.name,
        description: service.description,
        networkEndpointType: "GCE_VM_IP",
        network: networkUrl(host, network),
        subnetwork: subnetworkUrl(host, region, neg.subnetwork),
      },
      // A NEG has no update method: every input forces a replacement, which GCE refuses while a
      // backend service lists it; the owner marker is written at creation only.
      { ...opts, ignoreChanges: ignoredChanges("gcp:compute/networkEndpointGroup:NetworkEndpointGroup") },
    );
    links[negKey(neg)] = group.selfLink;
    const endpoints = endpointsOf.get(negKey(neg));
    if (args.negEndpoints === undefined) continue;
    // Updated in place (google_compute_network_endpoints detaches the endpoints that left and
    // attaches those that came): a node's entry or exit never replaces the group.
    lists.push(
      new gcp.compute.NetworkEndpointList(
        `${name}:neg-${neg.zone}-${neg.name}-endpoints`,
        {
          project,
          zone: neg.zone,
          networkEndpointGroup: group.name,
          networkEndpoints: (endpoints ?? []).map(({ instance, ipAddress }) => ({ instance, ipAddress })),
        },
        { parent: group, deleteBeforeReplace: true },
      ),
    );
  }
  return { links, lists };
}

/**
 * `<lb>`, when the Service reserves it for life or a run holds it (`pin.reserve`: on the IP its
 * rules have, which the run imports). A user-owned loadBalancerIP is used as is; it is never
 * reserved, so never released.
 */
function declareAddress({ name, args, opts }: Children): gcp.compute.Address | undefined {
  const { service, project, region, pin } = args;
  if (service.userIP !== undefined) return undefined;
  const held = pin?.reserve === true ? pin.ip : undefined;
  if (service.reserveAddress !== true && held === undefined) return undefined;
  return new gcp.compute.Address(
    `${name}:address`,
    {
      project,
      region,
      name: service.lbName,
      description: service.description,
      ...(held !== undefined ? { address: held } : {}),
      addressType: service.scheme,
      // Every internal address is reserved as SHARED_LOADBALANCER_VIP, even for one protocol:
      // GCE lets several INTERNAL forwarding rules share an IP only through such an address,
      // and `purpose` forces a replacement (a new IP) once set, so a Service that gains a
      // second protocol must already hold one.
      ...(service.scheme === "INTERNAL"
        ? { subnetwork: subnetworkOf(args, service.subnetwork), purpose: "SHARED_LOADBALANCER_VIP" }
        : { networkTier: service.networkTier }),
    },
    // Stacks of earlier dccm versions hold single-protocol internal addresses with purpose
    // GCE_ENDPOINT: replacing them would change the Service's IP on upgrade, which users
    // must never see, so an existing address keeps its purpose (see docs/operations/known-limits.md).
    { ...opts, ignoreChanges: ignoredChanges("gcp:compute/address:Address") },
  );
}

/** The dedicated health check (ETP=Local) or the cluster's shared one, legacy in target-pool mode. */
function declareHealthCheck({ name, args, opts }: Children): pulumi.Input<string> {
  const { service, project, region, cluster } = args;
  const dedicated = service.healthCheck.kind === "dedicated";
  if (service.backend === "target-pool")
    return dedicated
      ? legacyHealthCheck(`${name}:hc`, project, service.healthCheck.spec, opts).selfLink
      : cluster.legacyNodeHealthCheck;
  return dedicated
    ? regionHealthCheck(`${name}:hc`, project, region, service.healthCheck.spec, opts).selfLink
    : cluster.nodeHealthCheck;
}

function declareTargetPool({ name, args, opts }: Children, healthCheck: pulumi.Input<string>): gcp.compute.TargetPool {
  const { service, project, region } = args;
  return new gcp.compute.TargetPool(
    `${name}:target-pool`,
    {
      project,
      region,
      name: service.lbName,
      description: service.description,
      sessionAffinity: service.sessionAffinity,
      healthChecks: healthCheck,
      instances: service.backendInstances.map((instance) => instanceLink(project, instance.zone, instance.name)),
    },
    { ...opts, ignoreChanges: ignoredChanges("gcp:compute/targetPool:TargetPool") },
  );
}

/**
 * IPv4 ascending, then IPv6 ascending: status.loadBalancer.ingress lists the IPv4 address first.
 * An IPv6 rule's IPAddress may read back as its /96 range: the status carries the address.
 */
function ingressOrder(ips: string[]): string[] {
  const unique = [...new Set(ips.map((ip) => ip.replace(/\/\d+$/, "")))];
  return [...unique.filter((ip) => !ip.includes(":")).sort(), ...unique.filter((ip) => ip.includes(":")).sort()];
}

/** A frontend as declared: its name, its IPv4 forwarding rule (none for IPv6-only), its backend service (none on a target pool). */
interface DeclaredFrontend {
  name: string;
  protocol: string;
  rule?: gcp.compute.ForwardingRule;
  backend?: gcp.compute.RegionBackendService;
}

/**
 * The first frontend keeps the bare GCE name whatever its protocol, but its Pulumi name carries
 * the protocol: a Service switched from TCP to UDP would make the engine create `backend-udp`
 * (same GCE name) before deleting `backend-tcp`, and GCE answers 409 alreadyExists forever.
 * Aliasing the other protocol's Pulumi name (only when no frontend of that protocol is still
 * declared) turns the switch into a change of the same resources.
 */
function inheritedProtocols(
  service: ServiceDesired,
  frontend: { name: string },
  protocols: readonly string[],
): string[] {
  return frontend.name === service.lbName ? otherProtocols(protocols).map((other) => other.toLowerCase()) : [];
}

/**
 * One frontend: its IPv4 forwarding rule (none when `ipv4` is undefined: an IPv6-only Service) on
 * `ipv4.ipAddress` (undefined: ephemeral), and its backend service unless the load balancer uses a target pool.
 */
function declareFrontend(
  children: Children,
  frontend: FrontendSpec,
  protocols: readonly string[],
  ipv4: { ipAddress: pulumi.Input<string> | undefined } | undefined,
  healthCheck: pulumi.Input<string>,
  targetPool: gcp.compute.TargetPool | undefined,
): DeclaredFrontend {
  const { name, args, opts } = children;
  const { service, project, region, network } = args;
  const internal = service.scheme === "INTERNAL";
  const suffix = frontend.protocol.toLowerCase();
  const inherited = inheritedProtocols(service, frontend, protocols);
  let target: { target: pulumi.Input<string> } | { backendService: pulumi.Input<string> };
  let replaceWith: pulumi.Resource[];
  let backend: gcp.compute.RegionBackendService | undefined;
  if (targetPool !== undefined) {
    target = { target: targetPool.selfLink };
    // A target pool's sessionAffinity and description force its replacement, but a forwarding
    // rule's target is updated in place (terraform-provider-google-beta resource_compute_forwarding_rule.go
    // `target` has no ForceNew; setTarget). With delete-before-replace (the pool's name is fixed)
    // the engine would delete the pool while the rule still points at it: resourceInUseByAnotherResource
    // on every retry. So the rule is replaced with the pool: deleted first, created after. Re-pointing
    // the rule instead would need a second pool under another name, which the stock CCM's naming
    // (and adoption of its load balancers) does not allow. The IP stays: it is reserved while the
    // rule is replaced (`<lb>`, for life or pinned for the run; or the user's loadBalancerIP).
    replaceWith = [targetPool];
  } else {
    backend = declareBackendService(children, frontend, healthCheck, inherited);
    target = { backendService: backend.selfLink };
    replaceWith = [backend];
  }
  const declared = { name: frontend.name, protocol: frontend.protocol, ...(backend !== undefined ? { backend } : {}) };
  if (ipv4 === undefined) return declared;
  const rule = new gcp.compute.ForwardingRule(
    `${name}:forwarding-rule-${suffix}`,
    {
      project,
      region,
      name: frontend.name,
      description: service.description,
      ...(ipv4.ipAddress !== undefined ? { ipAddress: ipv4.ipAddress } : {}),
      ipProtocol: frontend.protocol,
      loadBalancingScheme: service.scheme,
      ...portFields(frontend),
      ...(internal
        ? {
            network: sharedNetwork(service.networkProject, network),
            subnetwork: subnetworkOf(args, service.subnetwork),
            allowGlobalAccess: service.allowGlobalAccess,
          }
        : { networkTier: service.networkTier }),
      ...target,
    },
    {
      ...opts,
      aliases: inherited.map((other) => ({ name: `${name}:forwarding-rule-${other}` })),
      replaceWith,
      ignoreChanges: ignoredChanges("gcp:compute/forwardingRule:ForwardingRule"),
    },
  );
  return { ...declared, rule };
}

/** A frontend's backend service: the Service's backend instance groups (or NEGs) behind the health check. */
function declareBackendService(
  { name, args, opts, negs, negLists }: Children,
  frontend: FrontendSpec,
  healthCheck: pulumi.Input<string>,
  inherited: string[],
): gcp.compute.RegionBackendService {
  const { service, project, region, network } = args;
  return new gcp.compute.RegionBackendService(
    `${name}:backend-${frontend.protocol.toLowerCase()}`,
    {
      project,
      region,
      name: frontend.name,
      description: service.description,
      protocol: frontend.protocol,
      loadBalancingScheme: service.scheme,
      sessionAffinity: service.sessionAffinity,
      healthChecks: healthCheck,
      ...(service.scheme === "INTERNAL" ? { network: sharedNetwork(service.networkProject, network) } : {}),
      // Until its NEGs are filled, a `neg` Service's backend service is an instance-group one (negsPending).
      ...(service.backend === "neg" && service.negsPending !== true
        ? negBackendFields(service, frontend, negs)
        : {
            backends: backendGroupKeys(service).map((key) => ({
              group: instanceGroupLink(args.cluster, key),
              balancingMode: "CONNECTION",
            })),
          }),
    },
    // A new protocol replaces the backend service (delete first: the name is fixed) rather than
    // updating it under a forwarding rule of the old protocol; its forwarding rule, whose
    // backendService forces a replacement, is deleted before it and created after it.
    // `network` forces a replacement too (resource_compute_region_backend_service.go) and never
    // changes for a backend service dccm created (the cluster's network); the stock CCM's internal
    // backend services, which dccm adopts, were created without it (gce_loadbalancer_internal.go
    // ensureInternalBackendService): replacing one would take its forwarding rule down.
    {
      ...opts,
      // Declared endpoints (CI) are attached before a backend service lists their NEGs.
      ...(negLists.length > 0 && service.backend === "neg" ? { dependsOn: negLists } : {}),
      aliases: inherited.map((other) => ({ name: `${name}:backend-${other}` })),
      replaceOnChanges: ["protocol"],
      ignoreChanges: ignoredChanges("gcp:compute/regionBackendService:RegionBackendService"),
    },
  );
}

/** The IP a firewall's destination names: the reserved address's, or the user's. */
function destinationIP(
  destination: FirewallDestination,
  address: pulumi.Input<string> | undefined,
): pulumi.Input<string> {
  if (destination.kind === "ip") return destination.ip;
  if (address === undefined) throw new Error(`a firewall towards the reserved address, but no address is declared`);
  return address;
}

/** An allow rule's destination: undefined (every IP of the target nodes) when its spec names none. */
function allowDestinationIP(
  spec: FirewallSpec,
  address: pulumi.Input<string> | undefined,
): pulumi.Input<string> | undefined {
  return spec.destination === undefined ? undefined : destinationIP(spec.destination, address);
}

/**
 * One family's firewalls: the traffic firewall, the health-check firewall when there is one, and
 * the deny rule (`enableL4DenyFirewall`). The deny rule depends on the allow rules, so that it is
 * created only once they sit above it (999): created first, it would deny the Service's own traffic
 * until they moved, which the stock CCM's order avoids too (ensureExternalLoadBalancer: "We can
 * create deny firewall rule only after making sure that the allow firewalls ... are created/updated
 * to 999 priority"). Returns their GCE names.
 */
function declareFamilyFirewalls(
  { name, args, opts, published }: Children,
  suffix: string,
  specs: { firewall: FirewallSpec; healthCheckFirewall?: FirewallSpec; denyFirewall?: DenyFirewallSpec },
  address: pulumi.Input<string> | undefined,
): string[] {
  const { network } = args;
  if (args.firewallsPublished === true) {
    publishFamilyFirewalls(published, specs, address);
    return [];
  }
  // Firewalls live in the network's project (cloud-provider-gcp v0.28.2 support.go: the Firewalls
  // calls go to NetworkProjectID); their bare network name is then expanded there.
  const project = args.service.networkProject ?? args.project;
  const allows = [
    firewall(
      `${name}:firewall${suffix}`,
      project,
      network,
      specs.firewall,
      opts,
      allowDestinationIP(specs.firewall, address),
    ),
  ];
  if (specs.healthCheckFirewall !== undefined) {
    allows.push(
      firewall(
        `${name}:hc-firewall${suffix}`,
        project,
        network,
        specs.healthCheckFirewall,
        opts,
        allowDestinationIP(specs.healthCheckFirewall, address),
      ),
    );
  }
  const names = [
    specs.firewall.name,
    ...(specs.healthCheckFirewall !== undefined ? [specs.healthCheckFirewall.name] : []),
  ];
  if (specs.denyFirewall === undefined) return names;
  const deny = specs.denyFirewall;
  denyFirewall(
    `${name}:deny-firewall${suffix}`,
    project,
    network,
    deny,
    { ...opts, dependsOn: allows },
    destinationIP(deny.destination, address),
  );
  return [...names, deny.name];
}

/** The rules declareFamilyFirewalls would declare, as rules for someone else to write. */
function publishFamilyFirewalls(
  published: pulumi.Output<PublishedFirewall>[],
  specs: { firewall: FirewallSpec; healthCheckFirewall?: FirewallSpec; denyFirewall?: DenyFirewallSpec },
  address: pulumi.Input<string> | undefined,
): void {
  const allow = (spec: FirewallSpec): pulumi.Output<PublishedFirewall> =>
    pulumi.output(allowDestinationIP(spec, address)).apply((ip) => ({
      action: "allow" as const,
      spec,
      destinationRanges: ip === undefined ? [] : [ip],
    }));
  published.push(allow(specs.firewall));
  if (specs.healthCheckFirewall !== undefined) published.push(allow(specs.healthCheckFirewall));
  const deny = specs.denyFirewall;
  if (deny !== undefined)
    published.push(
      pulumi
        .output(destinationIP(deny.destination, address))
        .apply((ip) => ({ action: "deny" as const, spec: deny, destinationRanges: [ip] })),
    );
}

/** The IPv4 traffic firewall, the health-check firewall when the Service has its own, the deny rule. Returns their GCE names. */
function declareFirewalls(children: Children, address: pulumi.Input<string> | undefined): string[] {
  const { service } = children.args;
  return declareFamilyFirewalls(
    children,
    "",
    {
      firewall: service.firewall,
      ...(service.healthCheckFirewall !== undefined ? { healthCheckFirewall: service.healthCheckFirewall } : {}),
      ...(service.denyFirewall !== undefined ? { denyFirewall: service.denyFirewall } : {}),
    },
    address,
  );
}

/** What the IPv6 half declared: its forwarding rules and their GCE names, its firewalls, its address. */
interface DeclaredIpv6 {
  rules: gcp.compute.ForwardingRule[];
  ruleNames: string[];
  firewalls: string[];
  address?: string;
}

/**
 * The IPv6 half (docs/guides/services.md#service-semantics, "IP families"): an IPv6 address from the
 * dual-stack subnet, one IPv6 forwarding rule per frontend on the same backend service, and the
 * IPv6 firewalls (a GCE firewall holds ranges of one family).
 */
function declareIpv6(
  children: Children,
  ipv6: Ipv6Desired,
  frontends: DeclaredFrontend[],
  protocols: readonly string[],
): DeclaredIpv6 {
  const { args } = children;
  const address = ipv6.userIP === undefined ? declareIpv6Address(children, ipv6) : undefined;
  const ipAddress: pulumi.Input<string> = address?.address ?? ipv6.userIP ?? "";
  const rules = frontends.map((frontend) => declareIpv6Rule(children, ipv6, frontend, ipAddress, protocols));
  const firewalls = declareFamilyFirewalls(children, "-ipv6", ipv6, address?.address);
  return {
    rules,
    ruleNames: frontends.map((frontend) => ipv6Name(frontend.name)),
    firewalls,
    ...(address !== undefined ? { address: ipv6Name(args.service.lbName) } : {}),
  };
}

/**
 * `<lb>-ipv6`: external, a /96 of the subnet's external IPv6 range for a Network Load Balancer
 * (ipv6EndpointType NETLB, Premium tier); internal, from the subnet's internal IPv6 range, reserved
 * as SHARED_LOADBALANCER_VIP like the IPv4 one so TCP and UDP rules can share it.
 */
function declareIpv6Address({ name, args, opts }: Children, ipv6: Ipv6Desired): gcp.compute.Address {
  const { service, project, region } = args;
  const internal = service.scheme === "INTERNAL";
  return new gcp.compute.Address(
    `${name}:address-ipv6`,
    {
      project,
      region,
      name: ipv6Name(service.lbName),
      description: service.description,
      addressType: service.scheme,
      ipVersion: "IPV6",
      subnetwork: subnetworkOf(args, ipv6.subnetwork),
      ...(internal ? { purpose: "SHARED_LOADBALANCER_VIP" } : { ipv6EndpointType: "NETLB", networkTier: "PREMIUM" }),
    },
    { ...opts, ignoreChanges: ignoredChanges("gcp:compute/address:Address") },
  );
}

/** `<frontend>-ipv6`: the frontend's backend service, over IPv6. GCE needs the subnetwork on every IPv6 rule. */
function declareIpv6Rule(
  children: Children,
  ipv6: Ipv6Desired,
  frontend: DeclaredFrontend,
  ipAddress: pulumi.Input<string>,
  protocols: readonly string[],
): gcp.compute.ForwardingRule {
  const { name, args, opts } = children;
  const { service, project, region, network } = args;
  const internal = service.scheme === "INTERNAL";
  const inherited = inheritedProtocols(service, frontend, protocols);
  const spec = service.frontends.find((candidate) => candidate.name === frontend.name);
  if (frontend.backend === undefined || spec === undefined)
    throw new Error(`Service ${service.key}: IPv6 frontend ${frontend.name} has no backend service`);
  return new gcp.compute.ForwardingRule(
    `${name}:forwarding-rule-${frontend.protocol.toLowerCase()}-ipv6`,
    {
      project,
      region,
      name: ipv6Name(frontend.name),
      description: service.description,
      ipAddress,
      ipProtocol: frontend.protocol,
      ipVersion: "IPV6",
      loadBalancingScheme: service.scheme,
      subnetwork: subnetworkOf(args, ipv6.subnetwork),
      ...portFields(spec),
      ...(internal
        ? { network: sharedNetwork(service.networkProject, network), allowGlobalAccess: service.allowGlobalAccess }
        : { networkTier: "PREMIUM" }),
      backendService: frontend.backend.selfLink,
    },
    {
      ...opts,
      aliases: inherited.map((other) => ({ name: `${name}:forwarding-rule-${other}-ipv6` })),
      replaceWith: [frontend.backend],
      ignoreChanges: ignoredChanges("gcp:compute/forwardingRule:ForwardingRule"),
    },
  );
}

/** A subnetwork the Service's address or forwarding rule names: the host project's under a Shared VPC. */
function subnetworkOf(args: ServiceLoadBalancerArgs, subnetwork: string | undefined): string | undefined {
  return subnetwork === undefined ? undefined : sharedSubnetwork(args.service.networkProject, args.region, subnetwork);
}

/** TCP/UDP minus the protocols still declared: the Pulumi names a first frontend may inherit. */
function otherProtocols(declared: readonly string[]): string[] {
  return ["TCP", "UDP"].filter((protocol) => !declared.includes(protocol));
}

/**
 * A `neg` backend service's own fields: its NEGs as CONNECTION backends, the connection draining
 * GKE's L4 controllers set (kubernetes/ingress-gce pkg/l4/backends/backends.go: 30 s for TCP, 0
 * for UDP), zonal affinity (internal, spec.trafficDistribution) and WEIGHTED_MAGLEV (external,
 * pods-per-node). Only here: instance-group backend services keep what they had.
 */
function negBackendFields(
  service: ServiceDesired,
  frontend: FrontendSpec,
  negs: Record<string, pulumi.Output<string>>,
): Pick<
  gcp.compute.RegionBackendServiceArgs,
  "backends" | "connectionDrainingTimeoutSec" | "networkPassThroughLbTrafficPolicy" | "localityLbPolicy"
> {
  return {
    backends: (service.backendNegs ?? []).map((neg) => ({
      group: negLink(negs, negKey(neg)),
      balancingMode: "CONNECTION",
    })),
    connectionDrainingTimeoutSec: frontend.protocol === "UDP" ? 0 : 30,
    ...(service.zonalAffinity === true
      ? { networkPassThroughLbTrafficPolicy: { zonalAffinity: { spillover: "ZONAL_AFFINITY_SPILL_CROSS_ZONE" } } }
      : {}),
    ...(service.weightedLoadBalancing === true ? { localityLbPolicy: "WEIGHTED_MAGLEV" } : {}),
  };
}

function negLink(negs: Record<string, pulumi.Output<string>>, key: string): pulumi.Output<string> {
  const link = negs[key];
  if (link === undefined) throw new Error(`no NEG ${key} declared for the backend service`);
  return link;
}

function instanceGroupLink(cluster: ClusterRefs, key: string): pulumi.Input<string> {
  const link = cluster.instanceGroups[key];
  if (link === undefined) throw new Error(`no instance group ${key} in the cluster references`);
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
