/**
 * Input shape checks: a Node or Service whose fields are not of the types the model reads (a
 * hand-edited snapshot, a `null` port, a numeric annotation) is named and set aside, never thrown
 * on. Pure: each check reads one object and returns its first problem, fields in a fixed order.
 */
import { serviceKey } from "./names";
import type { Config, NodeInfo, Rejection, ServiceInfo } from "./types";
import { wantsLoadBalancer } from "./rules";

/** How a wrong value is shown in a message: its JSON for scalars (cut), its kind for containers. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- objects returned above: a number, boolean, bigint or symbol
  return String(value);
}

interface Problem {
  field: string;
  message: string;
}

type Kind = "a string" | "a number" | "a boolean" | "an object" | "an array";

function hasKind(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case "a string":
      return typeof value === "string";
    case "a number":
      return typeof value === "number";
    case "a boolean":
      return typeof value === "boolean";
    case "an object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    case "an array":
      return Array.isArray(value);
  }
}

/** Field checks run in order; the first failing one is the problem. */
class Checker {
  problem: Problem | undefined;

  /** True when the value has the kind (or is absent and `optional`). */
  check(field: string, value: unknown, kind: Kind, optional = false): boolean {
    if (this.problem !== undefined) return false;
    if ((optional && value === undefined) || hasKind(value, kind)) return true;
    this.problem = { field, message: `expected ${kind}${optional ? " or nothing" : ""}, got ${describeValue(value)}` };
    return false;
  }

  /** A record whose every value has the kind; keys in sorted order, so the first problem does not depend on insertion order. */
  record(field: string, value: unknown, kind: Kind): void {
    if (!this.check(field, value, "an object")) return;
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [key, item] of entries) this.check(`${field}[${key}]`, item, kind);
  }

  /** An array whose every item passes `each`. */
  array(field: string, value: unknown, each: (itemField: string, item: unknown) => void): void {
    if (!this.check(field, value, "an array")) return;
    (value as unknown[]).forEach((item, index) => each(`${field}[${index}]`, item));
  }
}

function keyPart(value: unknown): string {
  return typeof value === "string" ? value : describeValue(value);
}

function rejection(service: ServiceInfo, problem: Problem): Rejection {
  const key = serviceKey(keyPart(service.namespace), keyPart(service.name));
  return { service: key, field: problem.field, message: `Service ${key}: ${problem.field}: ${problem.message}` };
}

/** The fields that decide whether the model reads a Service at all, and the ones naming it. */
function checkSelection(service: ServiceInfo, checker: Checker): void {
  checker.check("metadata.namespace", service.namespace, "a string");
  checker.check("metadata.name", service.name, "a string");
  checker.check("metadata.deletionTimestamp", service.deleting, "a boolean");
  checker.check("spec.type", service.type, "a string");
  checker.check("spec.loadBalancerClass", service.loadBalancerClass, "a string", true);
}

/** Every other field serviceDesired reads. */
function checkFields(service: ServiceInfo, checker: Checker): void {
  checker.check("metadata.uid", service.uid, "a string");
  checker.record("metadata.annotations", service.annotations, "a string");
  checker.array("spec.ports", service.ports, (field, port) => {
    if (!checker.check(field, port, "an object")) return;
    const fields = port as Record<string, unknown>;
    checker.check(`${field}.name`, fields.name, "a string", true);
    checker.check(`${field}.protocol`, fields.protocol, "a string");
    checker.check(`${field}.port`, fields.port, "a number");
    checker.check(`${field}.nodePort`, fields.nodePort, "a number", true);
  });
  checker.check("spec.externalTrafficPolicy", service.externalTrafficPolicy, "a string", true);
  checker.check("spec.healthCheckNodePort", service.healthCheckNodePort, "a number", true);
  checker.check("spec.loadBalancerIP", service.loadBalancerIP, "a string", true);
  checker.array("spec.loadBalancerSourceRanges", service.loadBalancerSourceRanges, (field, range) =>
    checker.check(field, range, "a string"),
  );
  checker.check("spec.sessionAffinity", service.sessionAffinity, "a string", true);
  if (service.ipFamilies !== undefined)
    checker.array("spec.ipFamilies", service.ipFamilies, (field, family) => checker.check(field, family, "a string"));
  checker.check("spec.ipFamilyPolicy", service.ipFamilyPolicy, "a string", true);
  checker.check("spec.trafficDistribution", service.trafficDistribution, "a string", true);
}

/** The one rejection of a malformed Service, or undefined when every field serviceDesired reads has its type. */
export function malformedServiceFields(service: ServiceInfo): Rejection | undefined {
  const checker = new Checker();
  checkSelection(service, checker);
  checkFields(service, checker);
  return checker.problem === undefined ? undefined : rejection(service, checker.problem);
}

/**
 * The one rejection of a malformed Service the model must consider. A Service that is plainly not
 * ours (a well-formed type other than LoadBalancer, another class, being deleted) is not read, so
 * it is never rejected; one whose type or class is itself malformed is rejected, because ignoring it
 * would count as "no load balancer wanted" and could delete one it has.
 */
export function malformedService(
  service: ServiceInfo,
  config: Pick<Config, "loadBalancerClasses">,
): Rejection | undefined {
  const checker = new Checker();
  checkSelection(service, checker);
  if (checker.problem !== undefined) return rejection(service, checker.problem);
  if (!wantsLoadBalancer(service, config)) return undefined;
  checkFields(service, checker);
  return checker.problem === undefined ? undefined : rejection(service, checker.problem);
}

/** The warning for a Node whose fields are not of the types the model reads; undefined when well-formed. */
export function malformedNode(node: NodeInfo): string | undefined {
  const checker = new Checker();
  checker.check("metadata.name", node.name, "a string");
  checker.check("metadata.uid", node.uid, "a string");
  checker.check("metadata.deletionTimestamp", node.deleting, "a boolean");
  checker.record("metadata.labels", node.labels, "a string");
  checker.check("spec.providerID", node.providerID, "a string", true);
  checker.array("spec.taints", node.taints, (field, taint) => {
    if (!checker.check(field, taint, "an object")) return;
    const fields = taint as Record<string, unknown>;
    checker.check(`${field}.key`, fields.key, "a string");
    checker.check(`${field}.value`, fields.value, "a string", true);
    checker.check(`${field}.effect`, fields.effect, "a string");
  });
  checker.array("spec.podCIDRs", node.podCIDRs, (field, cidr) => checker.check(field, cidr, "a string"));
  checker.check("status.addresses[InternalIP]", node.internalIP, "a string", true);
  const problem = checker.problem;
  if (problem === undefined) return undefined;
  // Left out of instance groups and routes: the model cannot tell where it runs or whether it may serve.
  return `node ${keyPart(node.name)}: ${problem.field}: ${problem.message}; the Node is left out`;
}
