/**
 * The NEG controller: keeps each `neg` Service's network endpoint groups holding the endpoints the
 * desired state gives them (DesiredState.networkEndpointGroups), through Compute's attach and
 * detach calls, as ingress-gce's NEG syncers do (kubernetes/ingress-gce pkg/neg/syncers). The NEGs
 * themselves are declared in the Service's stack; their endpoints are in no stack, so a node's entry
 * or exit costs one call per NEG it enters or leaves and no engine run, whatever the number of
 * Services.
 *
 * One key per Service (`<namespace>/<name>`), on a queue of its own. A sync lists what each NEG
 * holds and tells it (ObservedCloud.negMembers) before it reads the desired endpoints, so a subset
 * moves from what GCE holds, after a restart too; it tells again what it left. A NEG whose desired
 * endpoints are those this process last left in it is not listed again, except by a refresh (the
 * drift interval's pass): a node's entry costs one attach per NEG it enters, and no list of the
 * Service's other NEGs.
 */
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { negKey } from "../../components/links";
import type { NegEndpoint, NegSpec } from "../../model";
import { KeyedQueue, OK, type ReconcileResult, type WorkItem } from "../../runtime/queue";
import { planEndpointSteps } from "./plan";

/** What the controller calls of Compute (gce/client.ts ComputeClient). */
export interface NegEndpointApi {
  listNetworkEndpoints(
    project: string,
    zone: string,
    group: string,
    opts?: { signal?: AbortSignal },
  ): Promise<NegEndpoint[] | undefined>;
  changeNetworkEndpoints(
    change: "attach" | "detach",
    project: string,
    zone: string,
    group: string,
    endpoints: readonly NegEndpoint[],
    opts?: { signal?: AbortSignal },
  ): Promise<void>;
}

/** A NEG its Service's stack has not created yet is looked at again after this long, in case its apply is missed. */
export const NEG_MISSING_RETRY_MS = 30_000;

export interface NegControllerDeps {
  project: string;
  compute: NegEndpointApi;
  /** The desired NEGs of a Service, with their endpoints (model/desiredCache.ts negsOf): read again after each tell. */
  negsOf: (serviceKey: string) => readonly NegSpec[];
  /**
   * What NEGs hold, `<zone>/<name>` → instance names (ObservedCloud.negMembers); a NEG that does not
   * exist holds none; undefined: a NEG of a Service that has none any more, forgotten.
   */
  tellMembers: (members: Record<string, string[] | undefined>) => void;
  /** Every NEG of the Service was listed (its stack may now run: controllers/service/plan.ts negsListed). */
  onListed?: (serviceKey: string) => void;
  signal: AbortSignal;
  logger: Logger;
  /** Services synced at once. */
  parallelism: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Every result (the daemon's result observer: logs and dccm_reconciles_total). */
  onResult?: (item: WorkItem, result: ReconcileResult, failures: number) => void;
  paused?: boolean;
}

export class NegController {
  readonly queue: KeyedQueue;
  /** Service → NEG key → a hash of the endpoints this process last left in it. */
  private readonly left = new Map<string, Map<string, string>>();

  constructor(private readonly deps: NegControllerDeps) {
    this.queue = new KeyedQueue((item) => this.sync(item.key, item.refresh), {
      parallelism: deps.parallelism,
      ...(deps.backoffBaseMs !== undefined ? { backoffBaseMs: deps.backoffBaseMs } : {}),
      ...(deps.backoffMaxMs !== undefined ? { backoffMaxMs: deps.backoffMaxMs } : {}),
      ...(deps.onResult !== undefined ? { onResult: deps.onResult } : {}),
      ...(deps.paused === true ? { paused: true } : {}),
    });
  }

  /**
   * A Service's NEGs or endpoints changed, or its stack was applied; `refresh`: list every NEG of
   * it, even those holding what this process left there (the drift interval's pass).
   */
  enqueue(serviceKey: string, refresh = false): void {
    this.queue.enqueue(serviceKey, { changed: true, ...(refresh ? { refresh: true } : {}) });
  }

  async sync(serviceKey: string, refresh = false): Promise<ReconcileResult> {
    const { compute, project, signal } = this.deps;
    const listed = new Map<string, NegEndpoint[]>();
    let missing = 0;
    const seen = new Map<string, NegEndpoint[]>();
    const desired = this.deps.negsOf(serviceKey);
    if (desired.length === 0) {
      // Deleted, or no longer `neg`: its stack deletes its NEGs; what was known of them goes.
      const gone = this.left.get(serviceKey);
      this.left.delete(serviceKey);
      if (gone !== undefined)
        this.deps.tellMembers(Object.fromEntries([...gone.keys()].map((key) => [key, undefined])));
      return OK;
    }
    const left = this.left.get(serviceKey) ?? new Map<string, string>();
    for (const neg of desired) {
      if (!refresh && left.get(negKey(neg)) === endpointsHash(neg.endpoints)) continue;
      const endpoints = await compute.listNetworkEndpoints(project, neg.zone, neg.name, { signal });
      if (endpoints === undefined) missing++;
      else listed.set(negKey(neg), endpoints);
      seen.set(negKey(neg), endpoints ?? []);
    }
    // Told before the desired endpoints are read: the subset moves from what GCE holds, and a NEG
    // that is missing or empty keeps its Service's backend service off it (negsPending).
    if (seen.size > 0) {
      this.deps.tellMembers(membersOf(seen));
      this.deps.onListed?.(serviceKey);
    }
    const told = new Map<string, NegEndpoint[]>();
    for (const neg of this.deps.negsOf(serviceKey)) {
      const now = listed.get(negKey(neg));
      if (now === undefined) continue;
      for (const step of planEndpointSteps(neg.endpoints, now)) {
        await compute.changeNetworkEndpoints(step.change, project, neg.zone, neg.name, step.endpoints, { signal });
        this.deps.logger.info(
          { service: serviceKey, neg: negKey(neg), endpoints: step.endpoints.map((endpoint) => endpoint.instance) },
          step.change === "attach" ? "attached NEG endpoints" : "detached NEG endpoints",
        );
      }
      told.set(negKey(neg), neg.endpoints);
      left.set(negKey(neg), endpointsHash(neg.endpoints));
    }
    if (told.size > 0) this.deps.tellMembers(membersOf(told));
    if (left.size > 0) this.left.set(serviceKey, left);
    if (missing > 0)
      return {
        kind: "retryAfter",
        ms: NEG_MISSING_RETRY_MS,
        reason: `${missing} of its NEGs do not exist yet: its stack has not created them`,
      };
    return OK;
  }
}

function endpointsHash(endpoints: readonly NegEndpoint[]): string {
  return createHash("sha256").update(JSON.stringify(endpoints)).digest("hex");
}

function membersOf(endpoints: ReadonlyMap<string, readonly NegEndpoint[]>): Record<string, string[]> {
  const members: Record<string, string[]> = {};
  for (const [key, list] of endpoints) members[key] = list.map((endpoint) => endpoint.instance).sort();
  return members;
}
