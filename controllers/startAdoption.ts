/**
 * The daemon's `--adopt`: what `dccm adopt` does, on the daemon's own stacks, before anything else
 * runs; the runs after it find the adopted stacks applied. A stack that is not adopted (a replace
 * not allowed, a failure) is logged, told on its Service and held until the next start (the
 * reconciler leaves the stacks of `held` alone).
 */
import type { Logger } from "pino";
import { ANNOTATION_BACKEND, serviceStackName, type ClusterSnapshot, type Config } from "../model";
import { adoptStock, type AdoptionDeps } from "../adopt/adopter";
import type { EventRecorder } from "../runtime/events";

/** The watcher as adoption sees it (watcher/informers.ts ClusterWatcher). */
export interface AdoptionSource {
  snapshot(): ClusterSnapshot;
  meta(namespace: string, name: string): { finalizers: string[] } | undefined;
  on(event: "change", listener: () => void): unknown;
  off(event: "change", listener: () => void): unknown;
}

export interface StartAdoptionDeps {
  compute: AdoptionDeps["compute"];
  runner: AdoptionDeps["runner"];
  services: NonNullable<AdoptionDeps["services"]>;
  config: Config;
  logger: Logger;
  source: AdoptionSource;
  events: Pick<EventRecorder, "record">;
  signal: AbortSignal;
  allowReplace: boolean;
  /** Stacks not adopted → why; filled here. */
  held: Map<string, string>;
}

export async function adoptAtStart(deps: StartAdoptionDeps): Promise<void> {
  const { logger, source } = deps;
  const report = await adoptStock(
    {
      compute: deps.compute,
      runner: deps.runner,
      services: deps.services,
      config: deps.config,
      log: (line) => logger.info(line),
      finalizersOf: (namespace, name) => source.meta(namespace, name)?.finalizers,
    },
    source.snapshot(),
    { dryRun: false, allowReplace: deps.allowReplace, signal: deps.signal },
  );
  const services = source.snapshot().services;
  for (const stack of report.stacks) {
    const fields = {
      stack: stack.stack,
      imported: stack.imported.length,
      changes: stack.changes.map((change) => `${change.op} ${change.name}`),
    };
    if (stack.refused === undefined) {
      logger.info(fields, "stack adopted");
      continue;
    }
    logger.error({ ...fields, reason: stack.refused }, "stack not adopted");
    deps.held.set(stack.stack, stack.refused);
    const info = services.find((service) => serviceStackName(service.namespace, service.name) === stack.stack);
    if (info !== undefined)
      await deps.events.record(
        { kind: "Service", namespace: info.namespace, name: info.name, uid: info.uid },
        "Warning",
        "AdoptionRefused",
        `Not adopted: ${stack.refused}`,
      );
  }
  await watchedPins(source, report.pinned);
}

/** Pure: the pinned Services (`namespace/name`) the snapshot does not show with `dccm.io/backend: target-pool` yet. */
export function missingPins(snapshot: ClusterSnapshot, pinned: readonly string[]): string[] {
  const annotated = new Set(
    snapshot.services
      .filter((service) => service.annotations[ANNOTATION_BACKEND] === "target-pool")
      .map((service) => `${service.namespace}/${service.name}`),
  );
  return pinned.filter((key) => !annotated.has(key));
}

/**
 * The desired state after adoption must see the `dccm.io/backend: target-pool` pins it wrote:
 * from a cache without them the first runs would move those Services to backend services (a new
 * forwarding rule each). Waits for the watch to deliver them (at most `timeoutMs`; past it the start fails).
 */
export async function watchedPins(
  source: AdoptionSource,
  pinned: readonly string[],
  timeoutMs = 60_000,
): Promise<void> {
  const missing = (): string[] => missingPins(source.snapshot(), pinned);
  if (missing().length === 0) return;
  await new Promise<void>((resolve, reject) => {
    const check = (): void => {
      if (missing().length > 0) return;
      done();
      resolve();
    };
    const timer = setTimeout(() => {
      done();
      reject(
        new Error(
          `the watch did not show the target-pool pins of ${missing().join(", ")} within ${timeoutMs / 1000} s`,
        ),
      );
    }, timeoutMs);
    const done = (): void => {
      clearTimeout(timer);
      source.off("change", check);
    };
    source.on("change", check);
  });
}
