/**
 * The leak detector's Compute adapter: lists the collections dccm creates resources in (the
 * region's regional ones, its zones' instance groups, the global ones), and gets or deletes one
 * resource. Names and descriptions are all the classification reads.
 */
import type { CallOptions, CollectionCall, ComputeApi, ComputeResourceApi } from ".";

import { RESOURCE_KINDS, type ResourceKind, type ObservedResource } from "./resources";

const COLLECTIONS: Record<ResourceKind, { call: CollectionCall; scope: "region" | "zone" | "global" }> = {
  forwardingRules: { call: "forwardingRules", scope: "region" },
  targetPools: { call: "targetPools", scope: "region" },
  backendServices: { call: "regionBackendServices", scope: "region" },
  healthChecks: { call: "regionHealthChecks", scope: "region" },
  httpHealthChecks: { call: "httpHealthChecks", scope: "global" },
  addresses: { call: "addresses", scope: "region" },
  instanceGroups: { call: "instanceGroups", scope: "zone" },
  firewalls: { call: "firewalls", scope: "global" },
  routes: { call: "routes", scope: "global" },
};

export type LeakCompute = Pick<ComputeApi, "getRegion"> & ComputeResourceApi;

function scopePath(kind: ResourceKind, scope: string): string {
  switch (COLLECTIONS[kind].scope) {
    case "region":
      return `regions/${scope}`;
    case "zone":
      return `zones/${scope}`;
    case "global":
      return "global";
  }
}

/** Where a resource of `kind` lives: the region, or `global`; undefined for a zonal kind (its zone is the resource's own). */
export function regionalOrGlobalScope(kind: ResourceKind, region: string): string | undefined {
  const scope = COLLECTIONS[kind].scope;
  return scope === "region" ? region : scope === "global" ? "global" : undefined;
}

/** `projects/p/regions/r/forwardingRules/n`: the API path of a resource. */
export function resourcePath(project: string, resource: Pick<ObservedResource, "kind" | "scope" | "name">): string {
  return `projects/${project}/${scopePath(resource.kind, resource.scope)}/${resource.kind}/${resource.name}`;
}

function observed(kind: ResourceKind, scope: string, item: Record<string, unknown>): ObservedResource | undefined {
  const { name, description } = item;
  if (typeof name !== "string") return undefined;
  return { kind, scope, name, description: typeof description === "string" ? description : "" };
}

/** One listed resource: its kind, scope (region, zone or `global`) and the Compute JSON item. */
export interface ListedItem {
  kind: ResourceKind;
  scope: string;
  item: Record<string, unknown>;
}

/** Every resource of the collections dccm uses, in the region, its zones and globally, as Compute lists them. */
export async function listCollections(
  compute: LeakCompute,
  project: string,
  region: string,
  opts?: CallOptions,
): Promise<ListedItem[]> {
  const zones = (await compute.getRegion(project, region, opts)).zones;
  const lists = RESOURCE_KINDS.flatMap((kind) => {
    const scopes =
      COLLECTIONS[kind].scope === "region" ? [region] : COLLECTIONS[kind].scope === "zone" ? zones : ["global"];
    return scopes.map(async (scope) => {
      const collection = `projects/${project}/${scopePath(kind, scope)}/${kind}`;
      const items = await compute.listCollection(`${COLLECTIONS[kind].call}.list`, collection, opts);
      return items
        .filter(
          (item): item is Record<string, unknown> => typeof item === "object" && item !== null && !Array.isArray(item),
        )
        .map((item) => ({ kind, scope, item }));
    });
  });
  return (await Promise.all(lists)).flat();
}

/** Every resource of the collections dccm uses, in the region, its zones and globally. */
export async function listObserved(
  compute: LeakCompute,
  project: string,
  region: string,
  opts?: CallOptions,
): Promise<ObservedResource[]> {
  return (await listCollections(compute, project, region, opts))
    .map(({ kind, scope, item }) => observed(kind, scope, item))
    .filter((resource): resource is ObservedResource => resource !== undefined);
}

/** Whether the resource still exists (a run may have deleted it since the listing). */
export async function exists(
  compute: Pick<LeakCompute, "getResource">,
  project: string,
  resource: ObservedResource,
  opts?: CallOptions,
): Promise<boolean> {
  return (
    (await compute.getResource(`${COLLECTIONS[resource.kind].call}.get`, resourcePath(project, resource), opts)) !==
    undefined
  );
}

export async function deleteObserved(
  compute: LeakCompute,
  project: string,
  resource: ObservedResource,
  opts?: CallOptions,
): Promise<"deleted" | "absent"> {
  return compute.deleteResource(`${COLLECTIONS[resource.kind].call}.delete`, resourcePath(project, resource), opts);
}
