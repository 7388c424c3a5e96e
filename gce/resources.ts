/**
 * The GCE resources dccm creates, as every listing names them: their collection (kind), scope
 * (region, zone or "global") and name, and the `kind/scope/name` resource ID the drift pass, the
 * leak check, `dccm gc` and `dccm adopt` match on.
 */
import { networkProjectOf } from "../model";
import type { CollectionCall } from "./types";

/** Where a kind's resources live: a region's collection, a zone's, or the project's global one. */
export type KindScope = "region" | "zone" | "global";

/** One kind of GCE resource dccm creates. */
export interface KindRow {
  /** The collection, as in the API path and the resource ID. */
  readonly kind: string;
  readonly scope: KindScope;
  /** The Compute call family that lists, gets and deletes it (gce/client.ts). */
  readonly call: CollectionCall;
  /** The @pulumi/gcp type that declares it. */
  readonly pulumiType: string;
  /**
   * Set for the kinds a Shared VPC keeps in its host project: cloud-provider-gcp v0.28.2
   * providers/gce/support.go sends the Firewalls and Routes calls to NetworkProjectID and every
   * other call to ProjectID (gce.go: `onXPN` when the two differ).
   */
  readonly inNetworkProject?: true;
}

/** The projects dccm's resources live in: `project`, and a Shared VPC host's (config `networkProject`). */
export interface Projects {
  readonly project: string;
  /** Absent: `project` (no Shared VPC). */
  readonly networkProject?: string;
}

/**
 * Every kind of GCE resource dccm creates, one row each: the table the resource IDs (ids.ts), the
 * listings of the leak check and `dccm adopt` (listing.ts) and the kind checks here derive from.
 * In an order that deletes users before what they use.
 */
export const KINDS = [
  {
    kind: "forwardingRules",
    scope: "region",
    call: "forwardingRules",
    pulumiType: "gcp:compute/forwardingRule:ForwardingRule",
  },
  { kind: "targetPools", scope: "region", call: "targetPools", pulumiType: "gcp:compute/targetPool:TargetPool" },
  {
    kind: "backendServices",
    scope: "region",
    call: "regionBackendServices",
    pulumiType: "gcp:compute/regionBackendService:RegionBackendService",
  },
  {
    kind: "healthChecks",
    scope: "region",
    call: "regionHealthChecks",
    pulumiType: "gcp:compute/regionHealthCheck:RegionHealthCheck",
  },
  {
    kind: "httpHealthChecks",
    scope: "global",
    call: "httpHealthChecks",
    pulumiType: "gcp:compute/httpHealthCheck:HttpHealthCheck",
  },
  { kind: "addresses", scope: "region", call: "addresses", pulumiType: "gcp:compute/address:Address" },
  {
    kind: "instanceGroups",
    scope: "zone",
    call: "instanceGroups",
    pulumiType: "gcp:compute/instanceGroup:InstanceGroup",
  },
  {
    kind: "networkEndpointGroups",
    scope: "zone",
    call: "networkEndpointGroups",
    pulumiType: "gcp:compute/networkEndpointGroup:NetworkEndpointGroup",
  },
  {
    kind: "firewalls",
    scope: "global",
    call: "firewalls",
    pulumiType: "gcp:compute/firewall:Firewall",
    inNetworkProject: true,
  },
  { kind: "routes", scope: "global", call: "routes", pulumiType: "gcp:compute/route:Route", inNetworkProject: true },
] as const satisfies readonly KindRow[];

export type ResourceKind = (typeof KINDS)[number]["kind"];

/** The collections dccm creates resources in, in the table's order (users before what they use). */
export const RESOURCE_KINDS: readonly ResourceKind[] = KINDS.map((row) => row.kind);

const BY_KIND = new Map<string, KindRow>(KINDS.map((row) => [row.kind, row]));
const BY_PULUMI_TYPE = new Map<string, KindRow & { kind: ResourceKind }>(KINDS.map((row) => [row.pulumiType, row]));

export function isResourceKind(value: string): value is ResourceKind {
  return BY_KIND.has(value);
}

/** The row of a kind. */
export function kindRow(kind: ResourceKind): KindRow {
  const row = BY_KIND.get(kind);
  if (row === undefined) throw new Error(`GCE resource kind ${kind} is not in gce/resources.ts KINDS`);
  return row;
}

/** The row of the kind a @pulumi/gcp type declares; undefined for a type dccm does not declare. */
export function kindOfPulumiType(type: string): (KindRow & { kind: ResourceKind }) | undefined {
  return BY_PULUMI_TYPE.get(type);
}

/** The project a resource of `kind` lives in: the Shared VPC host for firewalls and routes, else `project`. */
export function projectOfKind(kind: ResourceKind, projects: Projects): string {
  const row: KindRow = kindRow(kind);
  return row.inNetworkProject === true ? networkProjectOf(projects) : projects.project;
}

/** `regions/<r>`, `zones/<z>` or `global`: where a resource of `kind` in `scope` sits in the API path. */
export function scopePath(kind: ResourceKind, scope: string): string {
  switch (kindRow(kind).scope) {
    case "region":
      return `regions/${scope}`;
    case "zone":
      return `zones/${scope}`;
    case "global":
      return "global";
  }
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

/** `projects/p/regions/r/forwardingRules/n`: the API path of a resource. */
export function resourcePath(project: string, resource: Pick<ObservedResource, "kind" | "scope" | "name">): string {
  return `projects/${project}/${scopePath(resource.kind, resource.scope)}/${resource.kind}/${resource.name}`;
}
