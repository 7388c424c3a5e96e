/**
 * The GCE resources dccm creates, as every listing names them: their collection (kind), scope
 * (region, zone or "global") and name, and the `kind/scope/name` resource ID the drift pass, the
 * leak check, `dccm gc` and `dccm adopt` match on.
 */

/** The collections dccm creates resources in, in an order that deletes users before what they use. */
export const RESOURCE_KINDS = [
  "forwardingRules",
  "targetPools",
  "backendServices",
  "healthChecks",
  "httpHealthChecks",
  "addresses",
  "instanceGroups",
  "firewalls",
  "routes",
] as const;

export type ResourceKind = (typeof RESOURCE_KINDS)[number];

export function isResourceKind(value: string): value is ResourceKind {
  return (RESOURCE_KINDS as readonly string[]).includes(value);
}

/** A GCE resource as listed: its collection, region / zone / "global", name and description. */
export interface ObservedResource {
  kind: ResourceKind;
  scope: string;
  name: string;
  /** "" when the resource has none. */
  description: string;
}

/** `kind/scope/name`: how leaks are printed, named on the `dccm gc` command line and matched against stack ownership. */
export function resourceId(resource: Pick<ObservedResource, "kind" | "scope" | "name">): string {
  return `${resource.kind}/${resource.scope}/${resource.name}`;
}

/** `projects/p/regions/r/forwardingRules/n` (a Pulumi ID or self link) → `forwardingRules/r/n`. */
export function resourceIdOfPath(path: string): string | undefined {
  const match = /(?:^|\/)projects\/[^/]+\/(?:(global)|regions\/([^/]+)|zones\/([^/]+))\/([^/]+)\/([^/?#]+)$/.exec(path);
  if (match === null) return undefined;
  const [, global, region, zone, collection, name] = match;
  if (collection === undefined || name === undefined || !isResourceKind(collection)) return undefined;
  const scope = global ?? region ?? zone;
  return scope === undefined ? undefined : resourceId({ kind: collection, scope, name });
}
