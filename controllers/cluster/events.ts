/**
 * What `kubectl` shows of the cluster stack: the Events a drift pass that put something back, or a
 * failed run, is told by, and the metric labels of what was put back. Pure: the cluster controller
 * resolves the Lease and records (controllers/cluster/controller.ts). In daemon/, not controller/: it
 * knows the cluster stack's resources and the daemon's Lease, which the shared runtime does not.
 *
 * Where each Event goes. A route is one Node's (its GCE name carries the Node's UID), so its
 * put-back is told on that Node, next to the node controller's `FailedToCreateRoute`. The rest of
 * the cluster stack (instance groups, the shared node health check and its firewall) has no
 * Kubernetes object of its own; it is told on the Lease kube-system/dccm: dccm's own object in
 * kube-system (its leader election's), so `kubectl describe lease dccm -n kube-system` shows
 * them. The Namespace kube-system (OrphanDestroysHeld, LeakedResources) would mix them with every
 * other component's events there.
 */
import type { EventReason, EventTarget, EventType } from "../../runtime/events";
import { CLUSTER_STACK, routeName } from "../../model";
import type { PutBack } from "../../stacks/events";
import { describePutBack } from "../stackRuns";
import { pulumiFailure } from "../../runtime/errors";

/** A route of the cluster stack put back: on its Node (the Lease when the Node is gone). */
export const ROUTE_RESTORED = "RouteRestored";
/** Anything else of the cluster stack put back: on the Lease. */
export const CLUSTER_DRIFT_CORRECTED = "ClusterDriftCorrected";
/** A cluster-stack run failed: on the Lease. */
export const SYNC_CLUSTER_FAILED = "SyncClusterFailed";

/** A Node as the daemon's watch knows it. */
export interface NodeRef {
  name: string;
  uid: string;
}

/** The Lease is resolved by the caller: its UID is read from the apiserver. */
export type ClusterEventObject = { kind: "Node"; name: string } | { kind: "Lease" };

export interface ClusterEvent {
  object: ClusterEventObject;
  type: EventType;
  reason: EventReason;
  message: string;
}

export interface ClusterDriftInput {
  /** What the drift pass changed (engine events; one resource may have several steps). */
  changed: readonly PutBack[];
  /** Node name → GCE route name, as the run recorded them (the stack output `routes`). */
  routes: Readonly<Record<string, string>>;
  clusterName: string;
  /** The Nodes the daemon's watch holds now. */
  nodes: readonly NodeRef[];
}

const ROUTE_TYPE = "gcp:compute/route:Route";
/** components/clusterNetwork.ts names each route `<stack>:route-<Node name>`. */
const ROUTE_PREFIX = `${CLUSTER_STACK}:route-`;

/** The `resource` label of dccm_cluster_put_back_total: a fixed set, whatever the engine reports. */
const RESOURCE_LABELS: Readonly<Record<string, string>> = {
  [ROUTE_TYPE]: "route",
  "gcp:compute/instanceGroup:InstanceGroup": "instanceGroup",
  "gcp:compute/regionHealthCheck:RegionHealthCheck": "healthCheck",
  "gcp:compute/httpHealthCheck:HttpHealthCheck": "legacyHealthCheck",
  "gcp:compute/firewall:Firewall": "firewall",
};

export function putBackResource(type: string): string {
  return RESOURCE_LABELS[type] ?? "other";
}

/** Resources put back per `resource` label, each resource once however many steps it took (a replace is three). */
export function putBackCounts(changed: readonly PutBack[]): Record<string, number> {
  const counts: Record<string, number> = {};
  const seen = new Set<string>();
  for (const change of changed) {
    if (seen.has(change.urn)) continue;
    seen.add(change.urn);
    const resource = putBackResource(change.type);
    counts[resource] = (counts[resource] ?? 0) + 1;
  }
  return counts;
}

/** The route's GCE name and its Node (undefined when the Node is gone); undefined when not a route. */
function routeOf(change: PutBack, input: ClusterDriftInput): { name: string; node: NodeRef | undefined } | undefined {
  if (change.type !== ROUTE_TYPE || !change.name.startsWith(ROUTE_PREFIX)) return undefined;
  const gceName = input.routes[change.name.slice(ROUTE_PREFIX.length)];
  // Not recorded (a route deleted with its Node): named as the stack names it.
  if (gceName === undefined) return { name: change.name, node: undefined };
  // By UID, not by name: a Node deleted and created again under its name is another Node, whose route has another name.
  return { name: gceName, node: input.nodes.find((node) => routeName(input.clusterName, node.uid) === gceName) };
}

/**
 * The Events of a drift pass of the cluster stack that put something back: one `RouteRestored` per
 * route, then one `ClusterDriftCorrected` naming everything else (describePutBack, as a Service's
 * `DriftCorrected` does).
 */
export function clusterDriftEvents(input: ClusterDriftInput): ClusterEvent[] {
  const routes = new Map<string, { object: ClusterEventObject; name: string; ops: string[] }>();
  const rest: PutBack[] = [];
  for (const change of input.changed) {
    const route = routeOf(change, input);
    if (route === undefined) {
      rest.push(change);
      continue;
    }
    const known = routes.get(change.urn);
    if (known !== undefined) {
      if (!known.ops.includes(change.op)) known.ops.push(change.op);
      continue;
    }
    routes.set(change.urn, {
      object: route.node !== undefined ? { kind: "Node", name: route.node.name } : { kind: "Lease" },
      name: route.name,
      ops: [change.op],
    });
  }
  const events: ClusterEvent[] = [...routes.values()].map((route) => ({
    object: route.object,
    type: "Normal",
    reason: ROUTE_RESTORED,
    message: `Put back: Route ${route.name} (${route.ops.join(", ")})`,
  }));
  if (rest.length > 0)
    events.push({
      object: { kind: "Lease" },
      type: "Normal",
      reason: CLUSTER_DRIFT_CORRECTED,
      message: `Put back: ${describePutBack(rest)}`,
    });
  return events;
}

/**
 * A failed run of the cluster stack; `description` is describeError's (the recorder folds repeats
 * of one message into its count). A pulumi CLI failure leads with the engine's first error, GCE's
 * reason, then what the daemon said, without the CLI's command line (which would bury the reason).
 */
export function clusterFailureEvent(description: string): ClusterEvent {
  const failure = pulumiFailure(description);
  const message = failure === undefined ? description : `${failure.engineError} (${failure.said})`;
  return {
    object: { kind: "Lease" },
    type: "Warning",
    reason: SYNC_CLUSTER_FAILED,
    message: `Error syncing cluster stack: ${message}`,
  };
}

/**
 * The Lease as an event target, its UID read once (`kubectl describe` matches events on it).
 * Never throws: a failed read gives the target without a UID (the event still lists under
 * `kubectl get events -n kube-system`), and the next event reads again.
 */
export function leaseTarget(
  lease: { namespace: string; name: string },
  readUid: () => Promise<string | undefined>,
  onError: (error: unknown) => void,
): () => Promise<EventTarget> {
  let uid: string | undefined;
  return async () => {
    if (uid === undefined) {
      try {
        uid = await readUid();
      } catch (error) {
        onError(error);
      }
    }
    return { kind: "Lease", namespace: lease.namespace, name: lease.name, uid: uid ?? "" };
  };
}
