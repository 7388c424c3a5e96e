/**
 * The inputs each GCE resource type is declared with `ignoreChanges` (the components say why at
 * each declaration). `up` never enforces them, so the drift pass (drift/declared.ts) never compares them.
 */
export const IGNORED_CHANGES = {
  "gcp:compute/instanceGroup:InstanceGroup": ["description", "network"],
  "gcp:compute/route:Route": ["nextHopInstanceZone"],
  "gcp:compute/address:Address": ["purpose"],
  "gcp:compute/regionBackendService:RegionBackendService": ["network"],
} as const satisfies Readonly<Record<string, readonly string[]>>;

/** The ignoreChanges option of a type, as a fresh list (Pulumi's option type is mutable). */
export function ignoredChanges(type: keyof typeof IGNORED_CHANGES): string[] {
  return [...IGNORED_CHANGES[type]];
}
