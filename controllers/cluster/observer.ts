/**
 * What the stack controllers tell the rest of the daemon about the cluster stack, and what a
 * cluster run asks first: one interface, so the daemon answers it in one place
 * (DesiredClusterObserver) and a test in one fake.
 */
import type { InstanceRef, ObservedCloud } from "../../model";
import type { InstanceReport } from "./instances";
import type { LocatedNode } from "../../model/desired";
import { describeError } from "../../runtime/errors";
import type { DesiredDriver } from "../desiredDriver";
import type { ClusterReferences } from "../references";
import type { ClusterOutputs } from "./plan";
import { sameInstances, sameSubnets } from "./instances";
import type { ClusterRouteStatus } from "./routes";

export interface ClusterObserver {
  /**
   * Asks GCE which Nodes' instances are gone before a cluster run (the desired state may change);
   * absent when the daemon has no Compute access (node controller off).
   */
  observeInstances?(): Promise<void>;
  /** The cluster stack applied, or was found applied, with these outputs. */
  applied(outputs: ClusterOutputs): void;
  /** A cluster run failed. */
  failed(error: unknown): void;
  /**
   * The instance groups' membership the stack recorded: after each run, and once after a start
   * before the first run, so that a Node keeps its group across a restart (model/groups.ts).
   */
  groupMembers(members: Record<string, string[]>): void;
  /** Whether the node health-check firewall the stack recorded sits above deny rules (999); told before the first run since a start. */
  recordedFirewall(aboveDeny: boolean): void;
  /** What the applied Service stacks point at in the cluster stack changed (see ObservedCloud). */
  referencesChanged(references: ClusterReferences): void;
}

/** Which Nodes' instances Compute proves gone, and their subnetworks (controllers/cluster/instances.ts InstancePresence). */
export interface InstanceCheck {
  check(
    located: readonly LocatedNode[],
    previous: readonly InstanceRef[],
    previousSubnets: Readonly<Record<string, string>>,
  ): Promise<InstanceReport>;
}

export interface DesiredClusterObserverDeps {
  desired: Pick<DesiredDriver, "cache" | "amend" | "referencesChanged" | "recordedFirewall">;
  /** The node controller's route conditions read it. */
  routeStatus: Pick<ClusterRouteStatus, "applied" | "failed">;
  /** Tells the node controller its route conditions may have changed; a no-op while it is off. */
  routesChanged: () => void;
  /** Absent without Compute access: instances are then never asked about. */
  instances?: {
    presence: InstanceCheck;
    /** dccm_nodes_without_instance. */
    gone: { set(value: number): void };
  };
}

/** The daemon's answer: each observation becomes the desired state's input, route status, or a Node condition. */
export class DesiredClusterObserver implements ClusterObserver {
  readonly observeInstances: (() => Promise<void>) | undefined;

  constructor(private readonly deps: DesiredClusterObserverDeps) {
    const instances = deps.instances;
    this.observeInstances =
      instances === undefined
        ? undefined
        : async (): Promise<void> => {
            const cache = deps.desired.cache;
            const observed = cache.lastObserved();
            const previous = observed.goneInstances;
            const previousSubnets = observed.instanceSubnets ?? {};
            const { gone, subnets } = await instances.presence.check(cache.locatedNodes(), previous, previousSubnets);
            instances.gone.set(gone.length);
            const patch: Partial<ObservedCloud> = {};
            if (!sameInstances(gone, previous)) patch.goneInstances = gone;
            // Unset while nothing is known: an observation without it is what it was before.
            if (!sameSubnets(subnets, previousSubnets)) patch.instanceSubnets = subnets;
            if (Object.keys(patch).length > 0) deps.desired.amend(patch);
          };
  }

  applied(outputs: ClusterOutputs): void {
    this.deps.routeStatus.applied(outputs);
    this.deps.routesChanged();
  }

  failed(error: unknown): void {
    this.deps.routeStatus.failed(describeError(error));
    this.deps.routesChanged();
  }

  groupMembers(members: Record<string, string[]>): void {
    this.deps.desired.amend({ groupMembers: members });
  }

  recordedFirewall(aboveDeny: boolean): void {
    this.deps.desired.recordedFirewall(aboveDeny);
  }

  referencesChanged(references: ClusterReferences): void {
    this.deps.desired.referencesChanged(references);
  }
}
