/**
 * At start-up: stacks in the backend whose Service the model no longer wants (changed or deleted
 * while the daemon was down) are enqueued, and the reconciler decides what goes, except that
 * destroys for absent Services are held when there are too many at once (holdOrphanDestroys).
 * Services carrying our finalizer with neither stack nor desired state are enqueued too.
 */
import type { Logger } from "pino";
import { isServiceStack, LB_FINALIZER } from "../model";
import { holdOrphanDestroys } from "../model/removal";
import type { EventRecorder } from "../runtime/events";
import { describeError } from "../runtime/errors";
import type { ControllerMetrics } from "./metrics";
import type { ServiceMeta } from "../watcher/informers";
import type { ServiceRef, ServiceStackKeys } from "../stacks/stackKeys";

export interface UnwantedInput {
  /** The stacks the backend holds at the start. */
  knownStacks: readonly string[];
  /** The stacks of the first desired state. */
  wanted: ReadonlySet<string>;
  /** The stacks of the Services the watcher lists. */
  present: ReadonlySet<string>;
  /** Stacks whose Service is known without the watcher: by their name, or as their stack records it. */
  identified: ReadonlySet<string>;
  /** The stacks of the Services carrying our finalizer. */
  finalized: readonly string[];
  maxOrphanDestroys: number;
  confirmOrphanDestroys: number;
}

export interface UnwantedPlan {
  /** In this order. */
  enqueue: string[];
  /** The unwanted stacks whose Service is absent, held by the orphan breaker; empty when not held. */
  held: string[];
  /** How many Service stacks the backend holds. */
  serviceStacks: number;
}

/** Pure: which stacks the start enqueues beyond the desired state's, and which destroys wait for an operator. */
export function planUnwanted(input: UnwantedInput): UnwantedPlan {
  const { knownStacks, wanted, present, identified } = input;
  const unwanted = knownStacks.filter(
    (stack) => isServiceStack(stack) && !wanted.has(stack) && (present.has(stack) || identified.has(stack)),
  );
  const absent = unwanted.filter((stack) => !present.has(stack));
  const serviceStacks = knownStacks.filter(isServiceStack).length;
  const held = holdOrphanDestroys(absent.length, serviceStacks, input.maxOrphanDestroys, input.confirmOrphanDestroys)
    ? absent
    : [];
  const heldSet = new Set(held);
  const known = new Set(knownStacks);
  // A Service with our finalizer but no stack and no desired state (deleted while we were down,
  // its stack gone): nothing else would ever look at it, and it would stay Terminating.
  const finalized = input.finalized.filter((stack) => !wanted.has(stack) && !known.has(stack));
  return { enqueue: [...unwanted.filter((stack) => !heldSet.has(stack)), ...finalized], held, serviceStacks };
}

export interface UnwantedDeps {
  knownStacks: readonly string[];
  wanted: readonly string[];
  serviceMetas: readonly ServiceMeta[];
  stackKeys: ServiceStackKeys;
  /** The Service a stack records it was made for (stacks/runner.ts StackRunner.recordedService). */
  recordedService: (stack: string) => Promise<ServiceRef | undefined>;
  events: Pick<EventRecorder, "record">;
  clusterUid: string;
  logger: Logger;
  metrics: Pick<ControllerMetrics, "destroysHeld">;
  maxOrphanDestroys: number;
  confirmOrphanDestroys: number;
  enqueue: (stack: string) => void;
}

/** Reads what it must (a shortened name's recorded Service), tells a hold, and enqueues planUnwanted's stacks. */
export async function enqueueUnwanted(deps: UnwantedDeps): Promise<void> {
  const { logger, metrics } = deps;
  const wanted = new Set(deps.wanted);
  const present = new Set(deps.serviceMetas.map((meta) => deps.stackKeys.stackOf(meta.namespace, meta.name)));
  const identified = await identify(deps, wanted, present);
  const plan = planUnwanted({
    knownStacks: deps.knownStacks,
    wanted,
    present,
    identified,
    finalized: deps.serviceMetas
      .filter((meta) => meta.finalizers.includes(LB_FINALIZER))
      .map((meta) => deps.stackKeys.stackOf(meta.namespace, meta.name)),
    maxOrphanDestroys: deps.maxOrphanDestroys,
    confirmOrphanDestroys: deps.confirmOrphanDestroys,
  });
  const absent = plan.held.length;
  metrics.destroysHeld.set(absent);
  if (absent > 0) {
    const message =
      `${absent} of ${plan.serviceStacks} Service stacks have no Service in this cluster; destroying none of them until an operator confirms ` +
      `with --confirm-orphan-destroys ${absent} (an empty or wrong cluster looks the same as every Service deleted)`;
    logger.error({ stacks: plan.held }, message);
    await deps.events.record(
      { kind: "Namespace", namespace: "kube-system", name: "kube-system", uid: deps.clusterUid },
      "Warning",
      "OrphanDestroysHeld",
      message,
    );
  }
  for (const stack of plan.enqueue) deps.enqueue(stack);
}

/**
 * The unwanted stacks whose Service is known without the watcher. A shortened name whose Service
 * is gone: the stack says which it was (remembered in stackKeys), and is destroyed as that Service's.
 */
async function identify(
  deps: UnwantedDeps,
  wanted: ReadonlySet<string>,
  present: ReadonlySet<string>,
): Promise<Set<string>> {
  const { logger } = deps;
  const identified = new Set<string>();
  for (const stack of deps.knownStacks.filter(
    (name) => isServiceStack(name) && !wanted.has(name) && !present.has(name),
  )) {
    if (deps.stackKeys.serviceOf(stack) !== undefined) {
      identified.add(stack);
      continue;
    }
    const ref = await deps.recordedService(stack).catch((error: unknown) => {
      logger.warn(
        { stack, err: describeError(error) },
        "reading which Service a stack was made for failed; left until the next start",
      );
      return null;
    });
    if (ref === undefined)
      logger.warn({ stack }, "a Service stack records no Service (and so holds no resource); left as it is");
    if (ref === undefined || ref === null) continue;
    deps.stackKeys.stackOf(ref.namespace, ref.name);
    identified.add(stack);
  }
  return identified;
}
