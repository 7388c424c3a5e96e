/**
 * The inputs each GCE resource type is declared with `ignoreChanges` (the components say why at
 * each declaration). `up` never enforces them, so the drift pass (drift/declared.ts) never compares them.
 */
/**
 * `description` everywhere dccm writes its owner marker (model/names.ts ownedDescription): it is
 * written at creation only. An address's, forwarding rule's, target pool's and instance group's
 * description forces a replacement in GCE (a forwarding rule replaced can change its IP), and a
 * marker added to what dccm did not create (adopted, or made by an older dccm) would claim it.
 * Routes carry no marker (their description is the stock CCM's `k8s-node-route`).
 */
export const IGNORED_CHANGES = {
  "gcp:compute/instanceGroup:InstanceGroup": ["description", "network"],
  "gcp:compute/route:Route": ["nextHopInstanceZone"],
  "gcp:compute/address:Address": ["description", "purpose"],
  "gcp:compute/regionBackendService:RegionBackendService": ["description", "network"],
  "gcp:compute/forwardingRule:ForwardingRule": ["description"],
  "gcp:compute/targetPool:TargetPool": ["description"],
  "gcp:compute/regionHealthCheck:RegionHealthCheck": ["description"],
  "gcp:compute/httpHealthCheck:HttpHealthCheck": ["description"],
  "gcp:compute/firewall:Firewall": ["description"],
  "gcp:compute/networkEndpointGroup:NetworkEndpointGroup": ["description"],
} as const satisfies Readonly<Record<string, readonly string[]>>;

/** The ignoreChanges option of a type, as a fresh list (Pulumi's option type is mutable). */
export function ignoredChanges(type: keyof typeof IGNORED_CHANGES): string[] {
  return [...IGNORED_CHANGES[type]];
}
