/**
 * Adoption, the executor shared by `dccm adopt` and `dccm daemon --adopt` (the plan is adopt/plan.ts).
 * Order, so that no step can lose an IP or leave a forwarding rule without a backend:
 *   1. list GCE once; pin stock target-pool Services to `target-pool` (annotation) so none moves;
 *   2. per stack, cluster first: `pulumi preview` with the imports (the rules on the IP they keep):
 *      a replace of anything is refused unless allowed, and a refused stack is left as it is;
 *   3. the forwarding rule's ephemeral IP promoted to the static address dccm declares
 *      (addresses.insert with that IP) before the engine touches anything;
 *   4. our finalizer on the Service, then `pulumi up` importing what exists (import-then-update:
 *      what differs from dccm's shape is updated in place, what dccm names differently is created
 *      beside the stock resource, which stays);
 *   5. the stock finalizers removed, the ingress written (the same IP).
 * A dry run does 1 (without the pins) and 2 only, against what the real stacks hold, read through a
 * read-only runner (a stack is selected, never created; previews take no lock and write no
 * checkpoint); a stack the backend does not have yet is previewed in an empty backend of its own,
 * as the real run's first up would create it. It writes nothing anywhere.
 */
import type { StepEventMetadata } from "../stacks/events";
import type { Adoption } from "../components/adoption";
import { describeError } from "../runtime/errors";
import type { LeakCompute } from "../gce/listing";
import {
  CLUSTER_STACK,
  desiredState,
  networkProjectOf,
  serviceStackName,
  type ClusterSnapshot,
  type Config,
  type DesiredState,
  nameFromUrn,
  stackScope,
} from "../model";
import type { ComputeClient } from "../gce";
import { desiredStacks, resourceChange, uniqueChanges, type ResourceChange } from "../preview/plan";

import type { StackRunner } from "../stacks/runner";
import { listInventory } from "./inventory";
import {
  planAdoption,
  previewIps,
  promotedAddressId,
  servicesToPinOnTargetPool,
  STOCK_FINALIZERS,
  withTargetPoolPins,
  type AddressPromotion,
  type StackAdoption,
} from "./plan";
import { ingressOf } from "../components/outputs";

/** The Service writes adoption makes (controllers/service/services.ts ServiceWriter). */
export interface AdoptionServiceWrites {
  setAnnotation(namespace: string, name: string, key: string, value: string): Promise<boolean>;
  setFinalizer(namespace: string, name: string, present: boolean): Promise<boolean>;
  removeFinalizers(namespace: string, name: string, finalizers: readonly string[]): Promise<boolean>;
  setIngress(namespace: string, name: string, ips: string[], uid: string): Promise<boolean>;
}

export interface AdoptionDeps {
  compute: LeakCompute & Pick<ComputeClient, "insertAddress">;
  /** The daemon's stacks: read-only (StackRunnerOptions.readOnly) on a dry run. */
  runner: Pick<StackRunner, "heldResourceIds" | "preview" | "up" | "listStacks">;
  /** Dry run: stacks in an empty backend of its own, where the stacks the real backend lacks are previewed (selecting them there would create them). */
  newStacks?: Pick<StackRunner, "preview">;
  /** Absent on a dry run. */
  services?: AdoptionServiceWrites;
  config: Config;
  /** Progress lines (`adopting Service ns/name …`). */
  log: (line: string) => void;
  /** A Service's finalizers as a watch cache holds them (the daemon's); absent: each Service is read. */
  finalizersOf?: (namespace: string, name: string) => readonly string[] | undefined;
}

export interface StackReport {
  stack: string;
  service?: string;
  promotion?: AddressPromotion;
  /** Resources imported (Pulumi names), sorted. */
  imported: string[];
  /** Everything else the first up does: updates in place (field by field), replaces, creates, deletes. */
  changes: ResourceChange[];
  leftovers: string[];
  /** Why the stack was not adopted (a replace not allowed, a failure); absent when it was (or would be). */
  refused?: string;
}

export interface AdoptionReport {
  /** Services pinned to `dccm.io/backend: target-pool`. */
  pinned: string[];
  stacks: StackReport[];
}

/** The engine's steps of one preview or up, as an adoption report sees them. */
class StepLog {
  readonly imported = new Set<string>();
  private readonly changes: ResourceChange[] = [];

  readonly onStep = (metadata: StepEventMetadata): void => {
    if (metadata.op === "import") this.imported.add(nameFromUrn(metadata.urn));
    const change = resourceChange(metadata);
    if (change !== undefined) this.changes.push(change);
  };

  sortedChanges(): ResourceChange[] {
    return uniqueChanges(this.changes);
  }
}

export async function adoptStock(
  deps: AdoptionDeps,
  snapshot: ClusterSnapshot,
  opts: { dryRun: boolean; allowReplace: boolean; signal?: AbortSignal },
): Promise<AdoptionReport> {
  const { config, runner } = deps;
  const inventory = await listInventory(deps.compute, config, config.region);
  const pinned = servicesToPinOnTargetPool(desiredState(snapshot, config), snapshot.services, inventory);
  const wanted = desiredStacks({ ...snapshot, services: withTargetPoolPins(snapshot.services, pinned) }, config);
  const held = new Map<string, ReadonlySet<string>>();
  for (const stack of wanted.hashes.keys())
    held.set(stack, await runner.heldResourceIds(stack, stackScope(stack, wanted.services.get(stack))));
  const previews = opts.dryRun ? await dryRunPreviews(deps) : runner;
  const plans = planAdoption(wanted.desired, inventory, (stack) => held.get(stack) ?? new Set());
  if (!opts.dryRun && deps.services !== undefined) {
    for (const key of pinned) {
      const [namespace, name] = key.split("/");
      deps.log(`pinning Service ${key} to its target pool (annotation dccm.io/backend: target-pool)`);
      await deps.services.setAnnotation(namespace, name, "dccm.io/backend", "target-pool");
    }
  }
  const stacks: StackReport[] = [];
  let clusterRefused = false;
  for (const plan of plans) {
    opts.signal?.throwIfAborted();
    if (clusterRefused) {
      stacks.push({
        stack: plan.stack,
        ...(plan.service !== undefined ? { service: plan.service } : {}),
        imported: [],
        changes: [],
        leftovers: plan.leftovers,
        refused: "the cluster stack was not adopted",
      });
      continue;
    }
    const report = await adoptStack(
      { ...deps, previews },
      wanted.desired,
      wanted.hashes.get(plan.stack),
      plan,
      opts,
      snapshot,
    );
    if (plan.stack === CLUSTER_STACK && report.refused !== undefined) clusterRefused = true;
    stacks.push(report);
  }
  if (!opts.dryRun) await removeStockFinalizers(deps, snapshot, held, stacks);
  return { pinned, stacks };
}

/**
 * The stock finalizers go from every Service whose stack holds its load balancer, adopted now or
 * at an earlier start that stopped before this step (nothing else would ever remove them): a read
 * of each such Service (only of those the watch shows with one, in the daemon), a write only where
 * a stock finalizer is left.
 */
async function removeStockFinalizers(
  deps: AdoptionDeps,
  snapshot: ClusterSnapshot,
  held: ReadonlyMap<string, ReadonlySet<string>>,
  stacks: readonly StackReport[],
): Promise<void> {
  if (deps.services === undefined) return;
  const adopted = new Set(stacks.filter((stack) => stack.refused === undefined).map((stack) => stack.stack));
  for (const info of snapshot.services) {
    const stack = serviceStackName(info.namespace, info.name);
    if (!adopted.has(stack) && (held.get(stack)?.size ?? 0) === 0) continue;
    // With a watch cache, only the Services still carrying a stock finalizer are read and written.
    const known = deps.finalizersOf?.(info.namespace, info.name);
    if (known !== undefined && !known.some((finalizer) => (STOCK_FINALIZERS as readonly string[]).includes(finalizer)))
      continue;
    await deps.services.removeFinalizers(info.namespace, info.name, STOCK_FINALIZERS);
  }
}

/**
 * Where a dry run previews each stack: the real stack (read-only) when the backend has it, else
 * the empty backend, as the real run's first up of a new stack starts from nothing.
 */
async function dryRunPreviews(deps: AdoptionDeps): Promise<Pick<StackRunner, "preview">> {
  const { newStacks } = deps;
  if (newStacks === undefined)
    throw new Error("a dry run needs an empty backend for the stacks the real one does not have");
  const existing = new Set(await deps.runner.listStacks());
  return {
    preview: (stack, ...rest) =>
      existing.has(stack) ? deps.runner.preview(stack, ...rest) : newStacks.preview(stack, ...rest),
  };
}

async function adoptStack(
  deps: AdoptionDeps & { previews: Pick<StackRunner, "preview"> },
  desired: DesiredState,
  hash: string | undefined,
  plan: StackAdoption,
  opts: { dryRun: boolean; allowReplace: boolean; signal?: AbortSignal },
  snapshot: ClusterSnapshot,
): Promise<StackReport> {
  const { runner } = deps;
  const scope = stackScope(plan.stack, plan.service);
  const base = {
    stack: plan.stack,
    ...(plan.service !== undefined ? { service: plan.service } : {}),
    ...(plan.promotion !== undefined ? { promotion: plan.promotion } : {}),
    leftovers: plan.leftovers,
  };
  const what = plan.service !== undefined ? `Service ${plan.service}` : "the cluster stack";
  // Nothing of this stack left to adopt (it holds what exists): only its leftovers are reported.
  if (plan.imports.length === 0 && plan.promotion === undefined) return { ...base, imported: [], changes: [] };
  try {
    // The preview runs before the promotion (on the IP the rules will take from the address), so
    // that a refused stack leaves GCE exactly as it was.
    const preview = new StepLog();
    const previewed: Adoption = { imports: new Set(plan.imports), previewIps: previewIps(desired, plan) };
    await deps.previews.preview(plan.stack, scope, desired, {
      ...(hash !== undefined ? { hash } : {}),
      adoption: previewed,
      onStep: preview.onStep,
    });
    const changes = preview.sortedChanges();
    const replaces = changes.filter((change) => change.op === "replace").map((change) => change.name);
    if (replaces.length > 0 && !opts.allowReplace) {
      return {
        ...base,
        imported: [...preview.imported].sort(),
        changes,
        refused: `would replace ${replaces.join(", ")} (pass --allow-replace to accept)`,
      };
    }
    if (opts.dryRun) return { ...base, imported: [...preview.imported].sort(), changes };
    const imports = new Set(plan.imports);
    // A replaced stock rule would lose its ephemeral IP: it is reserved first, and the daemon releases it after.
    const pin = replaces.length > 0 ? plan.replacementPin : undefined;
    const promotion = plan.promotion ?? pin;
    if (promotion !== undefined) {
      await promote(deps, desired, promotion);
      imports.add(promotedAddressId(desired, promotion));
    }
    const adoption: Adoption = {
      imports,
      ...(pin !== undefined && plan.service !== undefined
        ? { addressPins: new Map([[plan.service, { ip: pin.ip, reserve: true }]]) }
        : {}),
    };
    deps.log(`adopting ${what}: importing ${imports.size} resources`);
    const info =
      plan.service === undefined
        ? undefined
        : snapshot.services.find((service) => `${service.namespace}/${service.name}` === plan.service);
    if (info !== undefined && deps.services !== undefined)
      await deps.services.setFinalizer(info.namespace, info.name, true);
    const outcome = await runner.up(plan.stack, scope, desired, {
      refresh: false,
      ...(hash !== undefined ? { hash } : {}),
      adoption,
      ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
    });
    if (info !== undefined && deps.services !== undefined) {
      const ingress = ingressOf(outcome.outputs, info.namespace, info.name);
      if (ingress.length > 0) await deps.services.setIngress(info.namespace, info.name, ingress, info.uid);
    }
    return { ...base, imported: [...preview.imported].sort(), changes };
  } catch (error) {
    return { ...base, imported: [], changes: [], refused: `failed: ${describeError(error)}` };
  }
}

/** addresses.insert with the in-use IP; an address of that name already there must hold that very IP. */
async function promote(deps: AdoptionDeps, desired: DesiredState, promotion: AddressPromotion): Promise<void> {
  const { project } = desired.cluster;
  deps.log(`promoting ${promotion.ip} of forwarding rule ${promotion.name} to static address ${promotion.name}`);
  // A Shared VPC's subnetworks are the host's (components/links.ts sharedSubnetwork).
  const subnetwork =
    promotion.subnetwork !== undefined
      ? `projects/${networkProjectOf(desired.cluster)}/regions/${promotion.region}/subnetworks/${promotion.subnetwork}`
      : undefined;
  const result = await deps.compute.insertAddress(project, promotion.region, {
    name: promotion.name,
    address: promotion.ip,
    addressType: promotion.addressType,
    description: promotion.description,
    ...(promotion.networkTier !== undefined ? { networkTier: promotion.networkTier } : {}),
    ...(subnetwork !== undefined ? { subnetwork } : {}),
  });
  if (result === "exists") {
    const existing = await deps.compute.getResource("addresses.get", promotedAddressId(desired, promotion));
    const ip =
      typeof existing === "object" && existing !== null ? (existing as Record<string, unknown>).address : undefined;
    if (ip !== promotion.ip)
      throw new Error(
        `address ${promotion.name} exists with IP ${String(ip)}, not the forwarding rule's ${promotion.ip}`,
      );
  }
}
