/**
 * Pure decisions about what dccm may touch (no I/O): which Services are ours, what the removal of a
 * Service's load balancer may do, and when destroying stacks whose Service is absent must wait for
 * an operator. Deleting is the dangerous direction, so each answer asks for proof.
 */

/** What the daemon observed of a Service (the watcher's ServiceMeta has these fields). */
export interface ObservedService {
  type: string;
  loadBalancerClass?: string;
  finalizers: string[];
  ingress: string[];
  deleting: boolean;
}

/**
 * Is this Service's load balancer ours to manage by its class? A class set and not handled means
 * another controller owns it (MetalLB, another cloud controller, a second dccm), finalizer or not.
 * A Service that is no longer a LoadBalancer has no class (the API clears it): undecidable by class.
 */
export function classOwnership(
  service: Pick<ObservedService, "type" | "loadBalancerClass">,
  classes: readonly string[],
): "ours" | "foreign" | "unknown" {
  if (service.loadBalancerClass !== undefined) return classes.includes(service.loadBalancerClass) ? "ours" : "foreign";
  return service.type === "LoadBalancer" ? "ours" : "unknown";
}

export interface RemovalPlan {
  /** Destroy the stack's resources and remove the stack (only ever our own stack). */
  destroy: boolean;
  /** Clear status.loadBalancer.ingress (a live Service that stopped being a LoadBalancer). */
  clearIngress: boolean;
  /** Remove our finalizer from the Service. */
  removeFinalizer: boolean;
  /** Record DeletingLoadBalancer / DeletedLoadBalancer on the Service. */
  announce: boolean;
}

const NOTHING: RemovalPlan = Object.freeze({
  destroy: false,
  clearIngress: false,
  removeFinalizer: false,
  announce: false,
});

/**
 * The removal of a Service's load balancer, once the model no longer wants one for it.
 *
 * - Our stack existing in our project is the proof that resources are ours: only then is anything
 *   destroyed, and the stack is the last thing removed, so a run cut short can be resumed.
 * - The Service itself is written only when it is ours: by class, or (a Service whose type changed,
 *   which has no class any more) by our stack existing for it.
 */
export function planRemoval(
  service: ObservedService | undefined,
  stackExists: boolean,
  finalizer: string,
  classes: readonly string[],
): RemovalPlan {
  if (service === undefined) return { ...NOTHING, destroy: stackExists };
  const hasFinalizer = service.finalizers.includes(finalizer);
  switch (classOwnership(service, classes)) {
    case "foreign":
      // Our stack under this name can only be left by an earlier Service of ours: it goes, the Service is not touched.
      return { ...NOTHING, destroy: stackExists };
    case "ours":
      // A LoadBalancer of our class the model does not want is one being deleted.
      if (!service.deleting) return NOTHING;
      return {
        destroy: stackExists,
        clearIngress: false,
        removeFinalizer: hasFinalizer,
        announce: stackExists || hasFinalizer,
      };
    case "unknown":
      if (!stackExists) return NOTHING;
      return {
        destroy: true,
        clearIngress: !service.deleting && service.ingress.length > 0,
        removeFinalizer: hasFinalizer,
        announce: true,
      };
  }
}

/**
 * Destroys of stacks whose Service is absent (not being deleted: absent) are held for an operator
 * when there are more than `limit` at once, or more than half of the Service stacks (at least two):
 * an empty cache (the wrong cluster, a broken list) looks exactly like every Service deleted.
 * `confirmed` is the count an operator allowed (`--confirm-orphan-destroys N`): at most that many
 * proceed, so a flag left in place cannot allow a larger wipe later.
 */
export function holdOrphanDestroys(orphans: number, serviceStacks: number, limit: number, confirmed: number): boolean {
  if (orphans <= 0) return false;
  const massive = orphans > limit || (orphans >= 2 && orphans * 2 > serviceStacks);
  return massive && orphans > confirmed;
}
