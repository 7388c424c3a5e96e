/**
 * config `firewallManagement: manual`: after a Service stack's up, the firewall rules the stack did
 * not write (its outputs' `publishedFirewalls`, and the cluster's node health-check rule for a
 * Service probed by the shared node health check) are compared with the live rules of the network
 * project, and each difference is told on the Service as a Normal Event `LoadBalancerManualChange`
 * holding the gcloud command that makes it. This is the stock CCM's behaviour on a Shared VPC whose
 * host refuses it (cloud-provider-gcp v0.28.2 providers/gce/gce_loadbalancer_external.go
 * `createFirewall` / `updateFirewall`: on a 403 with `OnXPN()`, `raiseFirewallChangeNeededEvent`
 * with `FirewallToGCloudCreateCmd` / `UpdateCmd`, one Event per rule; `firewallNeedsUpdate` decides
 * from a `GetFirewall` whether a rule is missing or differs), here chosen by config rather than met
 * as a refusal. Nothing differs: no Event. A rule is never told for deletion: which live rules dccm
 * made cannot be proven from here (model/firewallCommands.ts firewallChanges' `ownedLive`).
 *
 * Pure: the reading of the outputs and of a live rule, and the messages (table-tested). The adapter
 * (`ManualFirewalls`) makes one `firewalls.get` per rule in the network project, when it has Compute
 * access; without it every rule is told as a `create`.
 */
import type { Logger } from "pino";

import { resourcePath } from "../../gce/resources";
import type { CallOptions, ComputeResourceApi } from "../../gce/types";
import {
  firewallChanges,
  gcloudCommand,
  manualChangeMessage,
  type FirewallAllow,
  type FirewallDestination,
  type PublishedFirewall,
  type ServiceDesired,
} from "../../model";
import { describeError } from "../../runtime/errors";
import type { EventRecorder, EventTarget } from "../../runtime/events";
import { isRecord } from "../../runtime/guards";

/** The Event reason (runtime/eventReasons.ts), the stock CCM's. */
export const LOAD_BALANCER_MANUAL_CHANGE = "LoadBalancerManualChange";

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? value : undefined;
}

/** A deny rule's destination as recorded, else its resolved IP (what the rendered command carries either way). */
function destinationOf(value: unknown, destinationRanges: readonly string[]): FirewallDestination {
  if (isRecord(value) && value.kind === "address") return { kind: "address" };
  if (isRecord(value) && value.kind === "ip" && typeof value.ip === "string") return { kind: "ip", ip: value.ip };
  return { kind: "ip", ip: destinationRanges[0] ?? "" };
}

/** Pure: one recorded PublishedFirewall (JSON), checked field by field; undefined when not of that shape. */
function recordedRule(value: unknown): PublishedFirewall | undefined {
  if (!isRecord(value) || !isRecord(value.spec)) return undefined;
  const spec = value.spec;
  const destinationRanges = strings(value.destinationRanges);
  const sourceRanges = strings(spec.sourceRanges);
  const targetTags = strings(spec.targetTags);
  if (
    destinationRanges === undefined ||
    sourceRanges === undefined ||
    targetTags === undefined ||
    typeof spec.name !== "string" ||
    typeof spec.description !== "string" ||
    typeof spec.priority !== "number"
  )
    return undefined;
  const common = { name: spec.name, description: spec.description, sourceRanges, targetTags, priority: spec.priority };
  if (value.action === "deny")
    return {
      action: "deny",
      spec: { ...common, destination: destinationOf(spec.destination, destinationRanges) },
      destinationRanges,
    };
  if (value.action !== "allow" || !Array.isArray(spec.allows)) return undefined;
  const allows: FirewallAllow[] = [];
  for (const allow of spec.allows) {
    const ports = isRecord(allow) ? strings(allow.ports) : undefined;
    if (!isRecord(allow) || typeof allow.protocol !== "string" || ports === undefined) return undefined;
    allows.push({ protocol: allow.protocol, ports });
  }
  return { action: "allow", spec: { ...common, allows }, destinationRanges };
}

function recordedRules(value: unknown): PublishedFirewall[] {
  const published = Array.isArray(value) ? value : [];
  return published.map(recordedRule).filter((rule): rule is PublishedFirewall => rule !== undefined);
}

/**
 * Pure: the rules a stack's outputs say it did not write: a Service stack's
 * (components/stack.ts LoadBalancerOutput.publishedFirewalls) with `serviceKey`, the cluster
 * stack's (StackOutputs.publishedFirewalls: the node health-check rule, owner marker included) without.
 */
export function publishedOf(outputs: Record<string, unknown>, serviceKey?: string): PublishedFirewall[] {
  if (serviceKey === undefined) return recordedRules(outputs.publishedFirewalls);
  const loadBalancers = outputs.loadBalancers;
  const entry = isRecord(loadBalancers) ? loadBalancers[serviceKey] : undefined;
  return recordedRules(isRecord(entry) ? entry.publishedFirewalls : undefined);
}

/**
 * Pure: what the Service needs written: its own rules, and the cluster's node health-check rule
 * when the shared node health check probes it (the stock CCM raises that rule's Event on the
 * Service too: gce_loadbalancer_external.go `ensureHTTPHealthCheckFirewall`). Sorted by name.
 */
export function wantedRules(
  service: Pick<ServiceDesired, "healthCheck">,
  own: readonly PublishedFirewall[],
  cluster: readonly PublishedFirewall[],
): PublishedFirewall[] {
  const node = service.healthCheck.kind === "shared" ? cluster : [];
  return [...own, ...node].sort((a, b) => a.spec.name.localeCompare(b.spec.name));
}

/**
 * Pure: a live rule as GCE returns it (compute#firewall: `allowed[].IPProtocol`/`ports`,
 * `denied[]`, `sourceRanges`, `targetTags`, `destinationRanges`, `priority`, `description`), in the
 * shape dccm publishes, so that the two compare by their rendered commands. Undefined when not a rule.
 */
export function liveRule(body: unknown): PublishedFirewall | undefined {
  if (!isRecord(body) || typeof body.name !== "string") return undefined;
  const common = {
    name: body.name,
    description: typeof body.description === "string" ? body.description : "",
    sourceRanges: strings(body.sourceRanges) ?? [],
    targetTags: strings(body.targetTags) ?? [],
    // GCE's default priority, which a rule created without one reads back as.
    priority: typeof body.priority === "number" ? body.priority : 1000,
  };
  const destinationRanges = strings(body.destinationRanges) ?? [];
  if (Array.isArray(body.denied) && body.denied.length > 0)
    return {
      action: "deny",
      spec: { ...common, destination: destinationOf(undefined, destinationRanges) },
      destinationRanges,
    };
  const allowed = Array.isArray(body.allowed) ? body.allowed : [];
  const allows = allowed.filter(isRecord).map((allow) => ({
    protocol: typeof allow.IPProtocol === "string" ? allow.IPProtocol : "",
    ports: strings(allow.ports) ?? [],
  }));
  return { action: "allow", spec: { ...common, allows }, destinationRanges };
}

/**
 * Pure: the Events' messages, one per rule that is missing or differs (`live` by name; undefined
 * when the rules could not be read: every rule is a create). In the stock CCM's wording
 * (gce_util.go `raiseFirewallChangeNeededEvent`).
 */
export function manualChangeMessages(
  wanted: readonly PublishedFirewall[],
  live: ReadonlyMap<string, PublishedFirewall> | undefined,
  networkProject: string,
  network: string,
): string[] {
  return firewallChanges(wanted, live, []).map((change) =>
    manualChangeMessage(gcloudCommand(change, networkProject, network)),
  );
}

export interface ManualFirewallsDeps {
  /** `firewalls.get`; absent without Compute access. */
  compute?: Pick<ComputeResourceApi, "getResource">;
  /** Where the rules live: config `networkProject`, else `project`. */
  networkProject: string;
  network: string;
  /** The cluster stack's outputs as last applied: its published node health-check rule. */
  clusterOutputs: () => Record<string, unknown>;
  events: Pick<EventRecorder, "record">;
  logger: Logger;
  signal: AbortSignal;
}

export class ManualFirewalls {
  constructor(private readonly deps: ManualFirewallsDeps) {}

  /** After a successful up of `service`'s stack: one Event per rule that differs from the live one. */
  async tell(target: EventTarget, service: ServiceDesired, outputs: Record<string, unknown>): Promise<void> {
    const wanted = wantedRules(service, publishedOf(outputs, service.key), publishedOf(this.deps.clusterOutputs()));
    const live = await this.live(wanted, { signal: this.deps.signal });
    for (const message of manualChangeMessages(wanted, live, this.deps.networkProject, this.deps.network))
      await this.deps.events.record(target, "Normal", LOAD_BALANCER_MANUAL_CHANGE, message);
  }

  /** The live rules under the wanted names; undefined without Compute access or when a read fails. */
  private async live(
    wanted: readonly PublishedFirewall[],
    opts: CallOptions,
  ): Promise<Map<string, PublishedFirewall> | undefined> {
    const { compute, networkProject } = this.deps;
    if (compute === undefined) return undefined;
    try {
      const bodies = await Promise.all(
        wanted.map((rule) =>
          compute.getResource(
            "firewalls.get",
            resourcePath(networkProject, { kind: "firewalls", scope: "global", name: rule.spec.name }),
            opts,
          ),
        ),
      );
      const live = new Map<string, PublishedFirewall>();
      for (const body of bodies) {
        const rule = liveRule(body);
        if (rule !== undefined) live.set(rule.spec.name, rule);
      }
      return live;
    } catch (error) {
      this.deps.logger.warn(
        { err: describeError(error), project: networkProject },
        "could not read the live firewall rules; every rule is told as a create",
      );
      return undefined;
    }
  }
}
