/**
 * The leak detector's Compute adapter: lists the collections dccm creates resources in (the
 * region's regional ones, its zones' instance groups, the global ones), and gets or deletes one
 * resource. Names and descriptions are all the classification reads.
 */
import type { CallOptions, ComputeApi, ComputeResourceApi } from ".";

import {
  kindRow,
  projectOfKind,
  resourcePath,
  type Projects,
  RESOURCE_KINDS,
  scopePath,
  type ResourceKind,
  type ObservedResource,
} from "./resources";

export type LeakCompute = Pick<ComputeApi, "getRegion"> & ComputeResourceApi;

/** Where a resource of `kind` lives: the region, or `global`; undefined for a zonal kind (its zone is the resource's own). */
export function regionalOrGlobalScope(kind: ResourceKind, region: string): string | undefined {
  const scope = kindRow(kind).scope;
  return scope === "region" ? region : scope === "global" ? "global" : undefined;
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

/**
 * Every resource of the collections dccm uses, in the region, its zones and globally, as Compute
 * lists them: each kind in its own project (a Shared VPC's firewalls and routes in the host's).
 */
export async function listCollections(
  compute: LeakCompute,
  projects: Projects,
  region: string,
  opts?: CallOptions,
): Promise<ListedItem[]> {
  const zones = (await compute.getRegion(projects.project, region, opts)).zones;
  const lists = RESOURCE_KINDS.flatMap((kind) => {
    const where = kindRow(kind).scope;
    const scopes = where === "region" ? [region] : where === "zone" ? zones : ["global"];
    return scopes.map(async (scope) => {
      const collection = `projects/${projectOfKind(kind, projects)}/${scopePath(kind, scope)}/${kind}`;
      const items = await compute.listCollection(`${kindRow(kind).call}.list`, collection, opts);
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
  projects: Projects,
  region: string,
  opts?: CallOptions,
): Promise<ObservedResource[]> {
  return (await listCollections(compute, projects, region, opts))
    .map(({ kind, scope, item }) => observed(kind, scope, item))
    .filter((resource): resource is ObservedResource => resource !== undefined);
}

/** Whether the resource still exists (a run may have deleted it since the listing). */
export async function exists(
  compute: Pick<LeakCompute, "getResource">,
  projects: Projects,
  resource: ObservedResource,
  opts?: CallOptions,
): Promise<boolean> {
  const path = resourcePath(projectOfKind(resource.kind, projects), resource);
  return (await compute.getResource(`${kindRow(resource.kind).call}.get`, path, opts)) !== undefined;
}

export async function deleteObserved(
  compute: LeakCompute,
  projects: Projects,
  resource: ObservedResource,
  opts?: CallOptions,
): Promise<"deleted" | "absent"> {
  const path = resourcePath(projectOfKind(resource.kind, projects), resource);
  return compute.deleteResource(`${kindRow(resource.kind).call}.delete`, path, opts);
}
