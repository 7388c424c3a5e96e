/**
 * Nodes whose GCE instance is gone. GCE refuses an instance group that names a deleted VM, and the
 * cluster stack writes every group in one run, so one such Node would stop every Node's changes
 * (issue 16.5). Before a cluster run the daemon asks Compute about each Node's instance; those
 * Compute proves gone (instances.get 404 on that very zone and name) are left out of the groups
 * and routes, with a Warning event on the Node.
 */
import type { Logger } from "pino";
import type { InstanceRef } from "../../model";
import type { LocatedNode } from "../../model/desired";
import type { EventRecorder } from "../../runtime/events";
import type { InstanceLookup, ProviderID } from "../node/decide";

export interface CheckedNode {
  located: LocatedNode;
  lookup: InstanceLookup;
}

export interface GonePlan {
  /** Instances to leave out, sorted by zone then name. */
  gone: InstanceRef[];
  /** Nodes whose instance was not gone before: each gets a Warning event. */
  newlyGone: LocatedNode[];
}

function idOf(instance: InstanceRef): string {
  return `${instance.zone}/${instance.name}`;
}

/**
 * Only a 404 naming that instance makes it gone, and only finding it brings it back: an error, a
 * search by name that found nothing or an ambiguous name leave it as it was, so a Compute outage
 * neither drops healthy Nodes nor flaps the groups.
 */
export function planGoneInstances(previous: readonly InstanceRef[], checked: readonly CheckedNode[]): GonePlan {
  const wasGone = new Set(previous.map(idOf));
  const gone: InstanceRef[] = [];
  const newlyGone: LocatedNode[] = [];
  for (const { located, lookup } of checked) {
    const { instance } = located;
    const id = idOf(instance);
    const provenGone =
      lookup.kind === "notFound" &&
      lookup.scope === "instance" &&
      lookup.zone === instance.zone &&
      lookup.name === instance.name;
    const isGone = provenGone || (lookup.kind !== "found" && wasGone.has(id));
    if (!isGone) continue;
    gone.push({ zone: instance.zone, name: instance.name });
    if (!wasGone.has(id)) newlyGone.push(located);
  }
  gone.sort((a, b) => (a.zone < b.zone ? -1 : a.zone > b.zone ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { gone, newlyGone };
}

/**
 * Pure: the subnetwork of each located Node's instance (its first network interface), `<zone>/<name>`
 * → name (ObservedCloud.instanceSubnets), from the same answers that find gone instances: no call of
 * its own. An instance Compute did not describe this time keeps what was known of it, so an outage
 * moves no Node between (zone, subnetwork) groups.
 */
export function instanceSubnetsOf(
  checked: readonly CheckedNode[],
  previous: Readonly<Record<string, string>>,
): Record<string, string> {
  const subnets: Record<string, string> = {};
  for (const { located, lookup } of checked) {
    const id = idOf(located.instance);
    const subnetwork = lookup.kind === "found" ? lookup.instance.networkInterfaces[0]?.subnetwork : undefined;
    const known = subnetwork ?? previous[id];
    if (known !== undefined) subnets[id] = known;
  }
  return Object.fromEntries(Object.entries(subnets).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Whether two instanceSubnets say the same. */
export function sameSubnets(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/** What one look at the Nodes' instances found. */
export interface InstanceReport {
  /** Instances to leave out, sorted by zone then name. */
  gone: InstanceRef[];
  /** ObservedCloud.instanceSubnets. */
  subnets: Record<string, string>;
}

export function sameInstances(a: readonly InstanceRef[], b: readonly InstanceRef[]): boolean {
  return a.length === b.length && a.every((instance, index) => idOf(instance) === idOf(b[index]));
}

export interface InstancePresenceOptions {
  project: string;
  /** The node controller's locator: one shared aggregated list, misses confirmed by instances.get. */
  locator: { byProviderID(pid: ProviderID): Promise<InstanceLookup>; invalidate(): void };
  events: EventRecorder;
  logger: Logger;
  instanceGroupName: string;
}

export class InstancePresence {
  constructor(private readonly options: InstancePresenceOptions) {}

  /** Asks Compute about every located Node's instance; returns what to leave out now and where each is. */
  async check(
    located: readonly LocatedNode[],
    previous: readonly InstanceRef[],
    previousSubnets: Readonly<Record<string, string>> = {},
  ): Promise<InstanceReport> {
    const { project, locator } = this.options;
    // One fresh list per cluster run: a list from before a VM was deleted would still show it.
    locator.invalidate();
    const checked = await Promise.all(
      located.map(async (node): Promise<CheckedNode> => ({
        located: node,
        lookup: await locator.byProviderID({ project, zone: node.instance.zone, name: node.instance.name }),
      })),
    );
    const plan = planGoneInstances(previous, checked);
    for (const { node, instance } of plan.newlyGone) {
      const message =
        `GCE instance ${project}/${instance.zone}/${instance.name} does not exist (instances.get: 404): ` +
        `the Node is left out of instance group ${this.options.instanceGroupName} and of pod routes until it does`;
      this.options.logger.warn(
        { node: node.name, instance: idOf(instance) },
        "a Node's instance is gone; left out of instance groups and routes",
      );
      // involvedObject.uid is the Node's name, as kubelet's are: `kubectl describe node` matches on it.
      await this.options.events.record(
        { kind: "Node", name: node.name, uid: node.name },
        "Warning",
        "InstanceNotFound",
        message,
      );
    }
    const errors = checked.filter(({ lookup }) => lookup.kind === "error").length;
    if (errors > 0)
      this.options.logger.warn(
        { errors },
        "Compute did not answer for some Nodes' instances; their group membership is left as it was",
      );
    return { gone: plan.gone, subnets: instanceSubnetsOf(checked, previousSubnets) };
  }
}
