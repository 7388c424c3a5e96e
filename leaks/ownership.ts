/**
 * What the stacks own: the GCE resources recorded in each stack's exported deployment (resources
 * and the pending creates of a killed run, which reached GCE or may have), read after GCE was
 * listed, so anything a running `up` created before the listing is found in its stack.
 */
import { gceResourceId } from "../gce/ids";
import { CLUSTER_STACK } from "../model";
import { isRecord } from "../runtime/guards";
import { resourceIdOfPath } from "../gce/resources";
import { checkStackIdentity, recordedClusterUid } from "../stacks/identity";
import type { StackReader } from "../stacks/reader";

/** The resourceIds one exported deployment records, and the cluster identity it records. */
export function deploymentOwnership(deployment: unknown): { owned: string[]; clusterUid: string | undefined } {
  if (!isRecord(deployment)) return { owned: [], clusterUid: undefined };
  const owned = new Set<string>();
  const take = (resource: unknown): void => {
    if (!isRecord(resource) || typeof resource.type !== "string") return;
    const inputs = isRecord(resource.inputs) ? resource.inputs : {};
    // Both spellings: the ID the provider returned, and the one its inputs derive (gce/ids.ts).
    for (const path of [resource.id, gceResourceId(resource.type, inputs)]) {
      const id = typeof path === "string" ? resourceIdOfPath(path) : undefined;
      if (id !== undefined) owned.add(id);
    }
  };
  for (const resource of Array.isArray(deployment.resources) ? deployment.resources : []) take(resource);
  for (const operation of Array.isArray(deployment.pending_operations) ? deployment.pending_operations : []) {
    if (isRecord(operation)) take(operation.resource);
  }
  return { owned: [...owned].sort(), clusterUid: recordedClusterUid(deployment) };
}

export interface Ownership {
  /** resourceIds of every GCE resource a stack of this project records. */
  owned: Set<string>;
  stacks: string[];
  /** The cluster identity the cluster stack records; undefined when it has none (absent, never applied). */
  clusterStackUid: string | undefined;
}

const EXPORTS_AT_ONCE = 2;

/**
 * Exports every stack of the project. A stack recording another cluster's identity means the
 * backend or config is another cluster's: nothing it says can be trusted, so this throws
 * ForeignStackError rather than return a partial answer.
 */
export async function readOwnership(
  reader: Pick<StackReader, "listStacks" | "exportStack">,
  clusterUid: string,
  signal?: AbortSignal,
): Promise<Ownership> {
  const stacks = [...(await reader.listStacks())].sort();
  const owned = new Set<string>();
  let clusterStackUid: string | undefined;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < stacks.length) {
      signal?.throwIfAborted();
      const stack = stacks[next++];
      let deployment: unknown;
      try {
        deployment = (await reader.exportStack(stack)).deployment;
      } catch (error) {
        throw new Error(`exporting stack ${stack}`, { cause: error });
      }
      const read = deploymentOwnership(deployment);
      checkStackIdentity(stack, read.clusterUid, clusterUid);
      for (const id of read.owned) owned.add(id);
      if (stack === CLUSTER_STACK) clusterStackUid = read.clusterUid;
    }
  };
  await Promise.all(Array.from({ length: Math.min(EXPORTS_AT_ONCE, stacks.length) }, worker));
  return { owned, stacks, clusterStackUid };
}
