/**
 * The Service stacks' controller, in cloud-provider's shape: a pure plan per sync (plan.ts
 * planServiceSync) and this thin executor doing the I/O — the stack, the finalizer, the status and
 * the events.
 */
import type { Logger } from "pino";

import {
  ANNOTATION_REFRESH_HANDLED,
  reservesTransiently,
  serviceStackName,
  type ServiceDesired,
  type Scope,
} from "../../model";
import type { DesiredCache } from "../../model/desiredCache";
import type { ClusterWatcher, ServiceMeta } from "../../watcher/informers";
import { describeError } from "../../runtime/errors";
import { EVENT_REASONS } from "../../runtime/eventReasons";
import type { EventRecorder, EventTarget } from "../../runtime/events";
import type { ReconcileResult, WorkItem } from "../../runtime/queue";
import type { LedgerWriter } from "../../leaks/ledger";
import type { ClusterController } from "../cluster/controller";
import type { ClusterObserver } from "../cluster/observer";
import {
  decideFirstUp,
  LOAD_BALANCER_EXISTS,
  LoadBalancerExistsError,
  loadBalancerExistsMessage,
  type ExistingResources,
  type FirstUpDecision,
} from "./existingLoadBalancer";
import type { ControllerMetrics } from "../metrics";
import type { RemovalPlan } from "../../model/removal";
import type { ServiceWriter } from "./services";
import { describePutBack, type StackRuns, type UpResult } from "../stackRuns";
import type { ClusterReferences } from "../references";
import type { FullRefreshTimers } from "../fullRefresh";
import type { StackRecord, StackRecords } from "../stackRecords";
import type { StackRunner } from "../../stacks/runner";
import type { StatusBook } from "../status";
import type { Adoption } from "../../components/adoption";
import { ADDRESS_TYPE, type RepairGuard } from "./repairs";
import type { AddressNameReader } from "./addressNames";
import { AddressPinError, addressStep, type AddressStep } from "./addressPins";
import type { QuotaGate } from "./quotaGate";
import type { ManualFirewalls } from "./manualFirewalls";
import { classifyFailure, QUOTA_EXCEEDED, QUOTA_RETRY_MS, quotaExceededMessage } from "../failures";
import { ingressOf, recordedAddress } from "../../components/outputs";
import { pendingRefresh, refreshAnswer, type RefreshFinding } from "./refreshRequest";
import {
  planServiceSync,
  recordedReferences,
  referencesOf,
  refreshActionOf,
  sameList,
  sameReferences,
  type Failure,
  type ServiceSyncAction,
} from "./plan";

/**
 * A Service waiting for the cluster stack is enqueued again by the cluster controller as soon as the
 * stack applies (ClusterController.wait): its retryAfter is only a backstop. Polling every second
 * instead re-ran each waiting Service once a second for as long as the cluster stack's up took,
 * which counted dozens of `retryAfter` results on a healthy cluster's start.
 */
export const CLUSTER_WAIT_BACKSTOP_MS = 60_000;

export interface ServiceControllerDeps {
  cache: Pick<DesiredCache, "view">;
  watcher: Pick<ClusterWatcher, "meta">;
  runner: Pick<StackRunner, "removeStack" | "ensureStack">;
  writer: Pick<ServiceWriter, "setFinalizer" | "setIngress" | "setAnnotation">;
  /** The load balancer ledger (leaks/ledger.ts): which leaked load balancer names are this cluster's. */
  ledger?: LedgerWriter;
  events: Pick<EventRecorder, "record">;
  metrics: Pick<
    ControllerMetrics,
    "driftCorrections" | "quotaExceeded" | "refreshRequests" | "servicesHeldForAdoption"
  >;
  logger: Logger;
  signal: AbortSignal;
  records: Pick<StackRecords, "get" | "forget" | "references" | "setReferences">;
  runs: Pick<StackRuns, "inspectOnce" | "up" | "destroy" | "forget">;
  drift: Pick<FullRefreshTimers, "arm" | "disarm">;
  cluster: Pick<ClusterController, "readyFor" | "wait">;
  /** The loadBalancerClass values handled besides "no class": Services of other classes are never touched. */
  loadBalancerClasses: readonly string[];
  /** Checks a changed Service's spec.loadBalancerIP against GCE: a message when it must be refused. */
  verifyRequestedIp?: (service: ServiceDesired) => Promise<string | undefined>;
  /** Told when what the applied Service stacks point at in the cluster stack changes (see ObservedCloud). */
  observer: Pick<ClusterObserver, "referencesChanged">;
  status?: Pick<StatusBook, "ingress" | "driftCorrected">;
  /** Plans a run that is not a change of the Service and holds it when it would change the IP (controllers/service/repairs.ts). */
  repairs?: Pick<RepairGuard, "decide">;
  /** Before a Service stack's first up (controllers/service/existingLoadBalancer.ts); absent without Compute access: the first up runs unchecked. */
  firstUpGuard?: FirstUpGuard;
  /** Quota headroom before a Service stack's first up (controllers/service/quotaGate.ts); absent without Compute access. */
  quotaGate?: Pick<QuotaGate, "check" | "released">;
  /** Reserves a Service's IP before a run that may replace its forwarding rule (addressPins.ts); absent without Compute access: such a run fails instead. */
  addressPins?: AddressPinning;
  /** Told that a `neg` Service's stack is applied: its NEGs exist, and the NEG controller fills them (controllers/neg/). */
  negsApplied?: (serviceKey: string) => void;
  /** Whether the NEG controller listed each NEG of a `neg` Service since the start; absent without one: always. */
  negsListed?: (service: ServiceDesired) => boolean;
  /** Told that a stack waits for its NEGs' first listing, which then wakes it. */
  waitForNegs?: (stack: string) => void;
  /** Reads the addresses a Service names (controllers/service/addressNames.ts); absent without Compute access: names stay unread and the Service is refused. */
  addressNames?: Pick<AddressNameReader, "pending" | "read">;
  /** config `firewallManagement: manual`: the rules a Service stack did not write, told after its up (manualFirewalls.ts). */
  manualFirewalls?: Pick<ManualFirewalls, "tell">;
}

/** What a pin needs: the reservation, the address's ID, and what the stack holds (to import `<lb>` only once). */
export interface AddressPinning {
  pin(service: ServiceDesired, ip: string): Promise<void>;
  addressId(service: ServiceDesired): string;
  held(stack: string, scope: Scope): Promise<ReadonlySet<string>>;
}

/** What the guard before a Service stack's first up reads: GCE under the load balancer's names, and what the stack holds. */
export interface FirstUpGuard {
  existing: ExistingResources;
  /** The IDs of the resources the stack holds (StackRunner.heldResourceIds). */
  held: (stack: string, scope: Scope) => Promise<ReadonlySet<string>>;
}

/** One sync's context: the stack, its record and the Service it is for. */
interface Sync {
  item: WorkItem;
  /** A refreshing run: the queue's flag (a drift pass) or a refresh request on the Service. */
  refresh: boolean;
  /** What a refreshing apply found (controllers/service/refreshRequest.ts). */
  finding?: RefreshFinding;
  record: StackRecord;
  namespace: string;
  name: string;
  scope: Scope;
  target: EventTarget;
}

export class ServiceController {
  /** The union as last told; at first as the records start (`unread` while Service stacks known at the start are not read). */
  private toldReferences: ClusterReferences;
  /** The Service stacks the guard before their first up holds. */
  private readonly heldStacks = new Set<string>();
  /** The refresh request each Service stack last answered, until the watch shows it handled. */
  private readonly answeredRefresh = new Map<string, string>();

  constructor(private readonly deps: ServiceControllerDeps) {
    this.toldReferences = deps.records.references();
  }

  async sync(item: WorkItem, namespace: string, name: string): Promise<ReconcileResult> {
    const meta = this.deps.watcher.meta(namespace, name);
    const request = pendingRefresh(meta, this.answeredRefresh.get(item.key));
    const sync: Sync = {
      item,
      refresh: item.refresh || request !== undefined,
      record: this.deps.records.get(item.key),
      namespace,
      name,
      scope: { kind: "service", namespace, name },
      target: { kind: "Service", namespace, name, uid: meta?.uid ?? "" },
    };
    const { action, result } = await this.plannedSync(sync, meta);
    if (request !== undefined && meta !== undefined) await this.answerRefresh(request, sync, meta, action, result);
    return result;
  }

  /** Plans and executes until the plan needs no read of the stack; returns the last plan's kind with the result. */
  private async plannedSync(
    sync: Sync,
    meta: ServiceMeta | undefined,
  ): Promise<{ action: ServiceSyncAction["kind"]; result: ReconcileResult }> {
    const { item, namespace, name } = sync;
    let addressNamesRead = false;
    for (;;) {
      const view = this.deps.cache.view(item.key);
      const action = planServiceSync(sync.record, {
        namespace,
        name,
        service: view.service,
        hash: view.hash,
        rejections: view.rejections,
        meta,
        refresh: sync.refresh,
        clusterReady: view.service !== undefined && this.deps.cluster.readyFor(view.service),
        negsListed: view.service === undefined || (this.deps.negsListed?.(view.service) ?? true),
        loadBalancerClasses: this.deps.loadBalancerClasses,
        addressToRelease:
          view.service !== undefined &&
          reservesTransiently(view.service) &&
          recordedAddress(sync.record.recorded ?? {}, namespace, name).holdsAddress,
        addressNamesPending:
          view.service === undefined &&
          !addressNamesRead &&
          (this.deps.addressNames?.pending(namespace, name) ?? false),
      });
      if (action.kind === "waitForAddressNames") {
        try {
          await this.deps.addressNames?.read(namespace, name, this.deps.signal);
        } catch (error) {
          return {
            action: action.kind,
            result: await this.failed(error, sync, { prefix: "Error syncing load balancer", tell: true }),
          };
        }
        // Planned again with the answers: found, the Service runs; not found, it is refused.
        addressNamesRead = true;
        continue;
      }
      if (action.kind !== "inspect")
        return { action: action.kind, result: await this.execute(action, sync, view.service, meta) };
      try {
        await this.deps.runs.inspectOnce(item.key, sync.scope, sync.record);
      } catch (error) {
        return { action: action.kind, result: await this.failed(error, sync, action.failure) };
      }
      // A deny rule the stack still holds changes the desired state (ObservedCloud.denyRulesHeld),
      // at once: the view read next is planned with it.
      if (sync.record.references === undefined)
        this.referenced(sync.record, recordedReferences(sync.record.recorded ?? {}, namespace, name));
    }
  }

  /**
   * Answers a refresh request once: the Event `dccm refresh` waits for, the metric, and the value
   * recorded as handled on the Service (so a restart does not refresh it again). A request the
   * sync did not get to (waiting, locked, shutting down) stays pending for the next sync.
   */
  private async answerRefresh(
    value: string,
    sync: Sync,
    meta: ServiceMeta,
    action: ServiceSyncAction["kind"],
    result: ReconcileResult,
  ): Promise<void> {
    if (this.deps.signal.aborted) return;
    const answer = refreshAnswer(value, {
      action: refreshActionOf(action),
      result,
      finding: sync.finding,
      ...(result.kind === "retry" ? { error: describeError(result.error) } : {}),
    });
    if (answer === undefined) return;
    this.answeredRefresh.set(sync.item.key, value);
    this.deps.metrics.refreshRequests.inc({ result: answer.result });
    await this.deps.events.record(sync.target, answer.type, answer.reason, answer.message);
    try {
      await this.deps.writer.setAnnotation(meta.namespace, meta.name, ANNOTATION_REFRESH_HANDLED, value);
    } catch (error) {
      // Answered all the same: only a restart before the next write would refresh it once more.
      this.deps.logger.warn(
        { stack: sync.item.key, err: describeError(error) },
        "recording a refresh request as handled failed",
      );
    }
  }

  private async execute(
    action: Exclude<ServiceSyncAction, { kind: "inspect" | "waitForAddressNames" }>,
    sync: Sync,
    service: ServiceDesired | undefined,
    meta: ServiceMeta | undefined,
  ): Promise<ReconcileResult> {
    // Only an apply can be held (and a Service waiting for the cluster stack has not been let through yet).
    if (action.kind !== "apply" && action.kind !== "waitForCluster" && action.kind !== "waitForNegs")
      this.heldForAdoption(sync.item.key, false);
    switch (action.kind) {
      case "none":
        return { kind: "ok" };
      case "forget":
        this.forget(sync.item.key);
        // A Service held for quota and deleted before anything of it was created.
        this.deps.quotaGate?.released(sync.item.key, false);
        return { kind: "ok" };
      case "reject":
        // The load balancer (if any) is left as it is: nothing is deleted because of bad input.
        if (action.tell) {
          sync.record.toldRejection = action.token;
          await this.deps.events.record(sync.target, "Warning", "SyncLoadBalancerFailed", action.message);
        }
        return { kind: "giveUp", reason: `the Service is invalid: ${action.message}` };
      case "waitForCluster":
        this.deps.cluster.wait(sync.item.key);
        return { kind: "retryAfter", ms: CLUSTER_WAIT_BACKSTOP_MS, reason: "waiting for the cluster stack" };
      case "waitForNegs":
        this.deps.waitForNegs?.(sync.item.key);
        return {
          kind: "retryAfter",
          ms: CLUSTER_WAIT_BACKSTOP_MS,
          reason: "waiting for the NEG controller to list its NEGs",
        };
      case "publish":
        if (meta === undefined || service === undefined) return { kind: "ok" };
        return this.guarded(sync, { prefix: "Error syncing load balancer", tell: true }, async () => {
          if (action.restored) this.appliedAs(sync.record, service);
          await this.publish(sync.record, meta, action.ingress);
          if (action.restored) this.deps.drift.arm(sync.item.key);
          return { kind: "ok" };
        });
      case "apply":
        if (meta === undefined || service === undefined) return { kind: "ok" };
        return this.guarded(sync, { prefix: "Error syncing load balancer", tell: true }, () =>
          this.apply(action, sync, service, meta),
        );
      case "remove":
        return this.guarded(sync, action.failure, () => this.remove(action.removal, sync, meta));
    }
  }

  /** A change is about to run: EnsuringLoadBalancer, then the Service's warnings, each on every change. */
  private async ensuring(target: EventTarget, service: ServiceDesired): Promise<void> {
    await this.deps.events.record(target, "Normal", "EnsuringLoadBalancer", "Ensuring load balancer");
    // The Service asked for dual-stack and gets IPv4 only: GCE cannot do it here.
    if (service.ipv6Fallback !== undefined)
      await this.deps.events.record(target, "Warning", "IPv6Unavailable", service.ipv6Fallback);
    // The plan's notices (a backend limit, a truncated subset, an unsupported combination).
    for (const notice of service.notices ?? [])
      await this.deps.events.record(target, EVENT_REASONS[notice.reason].type, notice.reason, notice.message);
  }

  private async apply(
    action: Extract<ServiceSyncAction, { kind: "apply" }>,
    sync: Sync,
    service: ServiceDesired,
    meta: ServiceMeta,
  ): Promise<ReconcileResult> {
    const { item, record, target } = sync;
    if (action.firstUp === true) {
      // Before anything is written (stack, finalizer, ledger entry, address): a Service held here leaves no trace.
      const holding =
        (this.deps.firstUpGuard !== undefined
          ? await this.guardFirstUp(this.deps.firstUpGuard, sync, service)
          : undefined) ?? (await this.deps.quotaGate?.check(item.key, target, service));
      if (holding !== undefined) return holding;
    }
    this.heldForAdoption(item.key, false);
    if (action.verifyIp) {
      const refusal = await this.deps.verifyRequestedIp?.(service);
      // Retried with backoff: reserving the address is what the user is told to do next.
      if (refusal !== undefined)
        return this.failed(new Error(refusal), sync, { prefix: "Error syncing load balancer", tell: true });
    }
    if (action.addFinalizer) {
      // The stack exists before the finalizer does: whoever finds our finalizer later also finds
      // the proof that the Service was ours (the stack is the last thing a removal deletes).
      await this.deps.runner.ensureStack(item.key, sync.scope);
      record.known = true;
      if (!(await this.deps.writer.setFinalizer(meta.namespace, meta.name, true))) return { kind: "ok" };
    }
    if (action.changed) await this.ensuring(target, service);
    // Ledger before anything is created under the name: without an entry a leak is never provably ours.
    await this.deps.ledger?.record(service.lbName, { key: `${meta.namespace}/${meta.name}`, uid: meta.uid });
    const published = record.published ?? ingressOf(record.recorded ?? {}, meta.namespace, meta.name);
    let step = runAddressStep(service, record, meta, published, action.changed);
    let adoption: Adoption | undefined;
    // A release holds the IP on `<lb>` all through its run: it needs no plan first.
    if (sync.refresh && !action.changed && this.deps.repairs !== undefined && step.kind !== "release") {
      // A repair, not a change of the Service: planned first, never applied if it would change the IP.
      const decision = await this.deps.repairs.decide({
        stack: item.key,
        scope: sync.scope,
        hash: action.hash,
        service,
        published,
        target,
      });
      if (decision.kind === "held") {
        sync.finding = { kind: "held" };
        return { kind: "retry", error: decision.error };
      }
      if (decision.kind === "nothing") {
        sync.finding = { kind: "clean" };
        return this.unchanged(sync, service, meta, published);
      }
      if (decision.kind === "pin") step = { kind: "pin", ip: decision.ip, release: true };
      else adoption = decision.adoption;
    }
    const outcome = await this.upHolding(step, sync, service, action.hash, adoption);
    if (sync.refresh) {
      const putBack = describePutBack(outcome.changed);
      sync.finding = action.changed
        ? { kind: "applied", putBack }
        : outcome.changed.length > 0
          ? { kind: "repaired", putBack }
          : { kind: "clean" };
    }
    if (sync.refresh && !action.changed && outcome.changed.length > 0) {
      this.deps.metrics.driftCorrections.inc({ kind: "service" });
      this.deps.status?.driftCorrected(item.key, describePutBack(outcome.changed));
      await this.deps.events.record(
        target,
        "Normal",
        "DriftCorrected",
        `Put back: ${describePutBack(outcome.changed)}`,
      );
    }
    this.appliedAs(record, service);
    await this.publish(record, meta, ingressOf(outcome.outputs, meta.namespace, meta.name));
    record.applied = action.hash;
    record.toldRejection = undefined;
    if (action.changed) await this.deps.events.record(target, "Normal", "EnsuredLoadBalancer", "Ensured load balancer");
    await this.deps.manualFirewalls?.tell(target, service, outcome.outputs);
    this.deps.drift.arm(item.key);
    return { kind: "ok" };
  }

  /**
   * The up, holding the IPv4 address as `step` says (addressPins.ts): a pin is reserved, run on
   * and released by a second run; what the runs put back is reported, but for `<lb>` reserved or
   * released by them: dccm's own reservation, no drift.
   */
  private async upHolding(
    step: AddressStep,
    sync: Sync,
    service: ServiceDesired,
    hash: string,
    adoption: Adoption | undefined,
  ): Promise<UpResult> {
    const { item, record, scope } = sync;
    const holding = (ip: string | undefined, reserve: boolean, imports: ReadonlySet<string>): Adoption => ({
      imports,
      ...(ip !== undefined ? { addressPins: new Map([[service.key, { ip, reserve }]]) } : {}),
    });
    const own = `${service.key}:address`;
    const notOwnAddress = (change: UpResult["changed"][number]): boolean =>
      !(change.type === ADDRESS_TYPE && change.name === own);
    switch (step.kind) {
      case "none":
        return this.deps.runs.up(item.key, scope, record, sync.refresh, hash, adoption);
      case "release": {
        const released = await this.deps.runs.up(
          item.key,
          scope,
          record,
          sync.refresh,
          hash,
          holding(step.ip, false, new Set()),
        );
        return { outputs: released.outputs, changed: released.changed.filter(notOwnAddress) };
      }
      case "pin": {
        const pins = this.deps.addressPins;
        if (pins === undefined)
          throw new AddressPinError(
            service.key,
            "a run that may replace its forwarding rule needs its IP reserved first, and this daemon has no Compute access to reserve it",
          );
        await pins.pin(service, step.ip);
        this.deps.logger.info(
          { stack: item.key, ip: step.ip, release: step.release },
          "reserved the load balancer's IP before a run that may replace its forwarding rule",
        );
        const id = pins.addressId(service);
        const imports = (await pins.held(item.key, scope)).has(id) ? new Set<string>() : new Set([id]);
        const pinned = await this.deps.runs.up(
          item.key,
          scope,
          record,
          sync.refresh,
          hash,
          holding(step.ip, true, imports),
        );
        if (!step.release) return pinned;
        const released = await this.deps.runs.up(
          item.key,
          scope,
          record,
          false,
          hash,
          holding(step.ip, false, new Set()),
        );
        return { outputs: released.outputs, changed: [...pinned.changed, ...released.changed].filter(notOwnAddress) };
      }
    }
  }

  /** A refresh whose plan changes nothing: no up; the status as published, the full refresh armed again. */
  private async unchanged(
    sync: Sync,
    service: ServiceDesired,
    meta: ServiceMeta,
    published: string[],
  ): Promise<ReconcileResult> {
    this.appliedAs(sync.record, service);
    await this.publish(sync.record, meta, published);
    this.deps.drift.arm(sync.item.key);
    return { kind: "ok" };
  }

  private async remove(removal: RemovalPlan, sync: Sync, meta: ServiceMeta | undefined): Promise<ReconcileResult> {
    const { item, target } = sync;
    this.deps.drift.disarm(item.key);
    const announce = removal.announce && meta !== undefined;
    if (removal.destroy) {
      if (announce) await this.deps.events.record(target, "Normal", "DeletingLoadBalancer", "Deleting load balancer");
      const destroyed = await this.deps.runs.destroy(item.key);
      // Only after our stack was destroyed (not found absent): until then a leak under these names stays provably ours.
      if (destroyed === "destroyed") await this.deps.ledger?.forget(`${sync.namespace}/${sync.name}`);
    }
    if (meta !== undefined) {
      // A Service that stopped being a LoadBalancer but still exists loses the IP we published.
      if (removal.clearIngress) await this.deps.writer.setIngress(meta.namespace, meta.name, [], meta.uid);
      if (announce) await this.deps.events.record(target, "Normal", "DeletedLoadBalancer", "Deleted load balancer");
      if (removal.removeFinalizer) await this.deps.writer.setFinalizer(meta.namespace, meta.name, false);
    }
    // Last: until here, the stack is what proves a retry (or the next start) may finish the job.
    if (removal.destroy) await this.deps.runner.removeStack(item.key);
    this.forget(item.key);
    this.deps.quotaGate?.released(item.key, removal.destroy);
    return { kind: "ok" };
  }

  /**
   * GCE resources under the load balancer's names and none in the stack: the up would create beside
   * them (a new address, a new IP) and fail on the first name that exists. Held instead, with the
   * queue's backoff, until an adoption puts them into the stack. Undefined: go on.
   */
  private async guardFirstUp(
    guard: FirstUpGuard,
    sync: Sync,
    service: ServiceDesired,
  ): Promise<ReconcileResult | undefined> {
    let decision: FirstUpDecision;
    try {
      const occupied = await guard.existing.occupied(service.lbName, { signal: this.deps.signal });
      // The stack is read only when something exists: a new Service costs its lookups alone.
      decision =
        occupied.length === 0
          ? { kind: "proceed" }
          : decideFirstUp(occupied, await guard.held(sync.item.key, sync.scope));
    } catch (error) {
      // Fails closed: without knowing what exists, creating could half-create beside it.
      return this.failed(
        new Error("looking up GCE resources under the load balancer's names", { cause: error }),
        sync,
        { prefix: "Error syncing load balancer", tell: true },
      );
    }
    if (decision.kind === "proceed") return undefined;
    this.heldForAdoption(sync.item.key, true);
    await this.deps.events.record(
      sync.target,
      "Warning",
      LOAD_BALANCER_EXISTS,
      loadBalancerExistsMessage(decision.resources),
    );
    return { kind: "retry", error: new LoadBalancerExistsError(decision.resources) };
  }

  /** Counts the Services the guard holds (dccm_services_held_for_adoption). */
  private heldForAdoption(stack: string, held: boolean): void {
    const before = this.heldStacks.size;
    if (held) this.heldStacks.add(stack);
    else this.heldStacks.delete(stack);
    if (this.heldStacks.size !== before) this.deps.metrics.servicesHeldForAdoption.set(this.heldStacks.size);
  }

  /** Runs a step; a failure becomes a typed result (a stack of another cluster is never handled here). */
  private async guarded(sync: Sync, failure: Failure, step: () => Promise<ReconcileResult>): Promise<ReconcileResult> {
    try {
      return await step();
    } catch (error) {
      return this.failed(error, sync, failure);
    }
  }

  /** The result of a failed step; the Service (when it still exists and is to be told) is told why. */
  private async failed(error: unknown, sync: Sync, failure: Failure): Promise<ReconcileResult> {
    const verdict = classifyFailure(error, this.deps.signal.aborted);
    switch (verdict.kind) {
      case "foreign":
        throw verdict.error;
      case "shutdown":
        return { kind: "giveUp", reason: "shutting down" };
      case "busy":
        return { kind: "retryAfter", ms: 5000, reason: "stack locked" };
      case "quota":
        this.deps.metrics.quotaExceeded.inc({ kind: "service", quota: verdict.quota.quota });
        this.deps.logger.warn(
          { stack: sync.item.key, quota: verdict.quota.quota, err: describeError(error) },
          "GCE quota exceeded; next try after the quota wait",
        );
        if (failure.tell)
          await this.deps.events.record(
            sync.target,
            "Warning",
            QUOTA_EXCEEDED,
            quotaExceededMessage(failure.prefix, verdict.quota),
          );
        return { kind: "retryAfter", ms: QUOTA_RETRY_MS, reason: `GCE quota ${verdict.quota.quota} exceeded` };
      case "failed":
        if (failure.tell)
          await this.deps.events.record(
            sync.target,
            "Warning",
            "SyncLoadBalancerFailed",
            `${failure.prefix}: ${describeError(error)}`,
          );
        return { kind: "retry", error };
    }
  }

  /** Records the IPs we publish and writes them when the live status (read now) differs. */
  private async publish(record: StackRecord, meta: ServiceMeta, ingress: string[]): Promise<void> {
    record.published = ingress;
    this.deps.status?.ingress(serviceStackName(meta.namespace, meta.name), ingress);
    const live = this.deps.watcher.meta(meta.namespace, meta.name)?.ingress ?? meta.ingress;
    if (!sameList(live, ingress)) await this.deps.writer.setIngress(meta.namespace, meta.name, ingress, meta.uid);
  }

  /** The stack is applied as `service` declares it: what it points at is recorded, and its NEGs exist to be filled. */
  private appliedAs(record: StackRecord, service: ServiceDesired): void {
    this.referenced(record, referencesOf(service));
    if (service.backend === "neg") this.deps.negsApplied?.(service.key);
  }

  /** Records what a Service stack now points at; the cluster stack is told when the union changes. */
  private referenced(record: StackRecord, references: ClusterReferences): void {
    this.deps.records.setReferences(record, references);
    this.tellReferences();
  }

  private tellReferences(): void {
    const union = this.deps.records.references();
    const told = this.toldReferences;
    if (sameReferences(union, told)) return;
    this.toldReferences = union;
    this.deps.observer.referencesChanged(union);
  }

  /** Drops everything known of a stack that no longer exists. */
  private forget(stack: string): void {
    this.deps.runs.forget(stack);
    this.answeredRefresh.delete(stack);
    if (this.deps.records.forget(stack)) this.tellReferences();
  }
}

/** What the run does with the Service's IPv4 address, from what its stack recorded (addressPins.ts). */
function runAddressStep(
  service: ServiceDesired,
  record: StackRecord,
  meta: ServiceMeta,
  published: readonly string[],
  change: boolean,
): AddressStep {
  const recorded = recordedAddress(record.recorded ?? {}, meta.namespace, meta.name);
  return addressStep({ service, recorded, published, change });
}
