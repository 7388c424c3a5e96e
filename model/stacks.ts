/**
 * Stack identity: which stack a name is, what it declares (its scope), and the Pulumi names that
 * come back from the engine. Pure; the names themselves are model/names.ts.
 */
import { CLUSTER_STACK, parseServiceKey, parseServiceStack, serviceStackName } from "./names";

export type Scope = { kind: "all" } | { kind: "cluster" } | { kind: "service"; namespace: string; name: string };

export function parseScope(text: string | undefined): Scope {
  const value = (text ?? "all").trim();
  if (value === "" || value === "all") return { kind: "all" };
  if (value === "cluster") return { kind: "cluster" };
  const match = /^service:([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)$/.exec(value);
  if (match) return { kind: "service", namespace: match[1], name: match[3] };
  throw new Error(`dccm:scope: "${value}" is not all, cluster or service:<namespace>/<name>`);
}

export type StackKind = "cluster" | "service";

export function stackKind(stack: string): StackKind {
  return stack === CLUSTER_STACK ? "cluster" : "service";
}

/**
 * The scope of one of the daemon's stacks: from its name, or (a shortened name, which does not
 * say it) from the Service `service` (`<namespace>/<name>`) it is known to be for.
 */
export function stackScope(stack: string, service?: string): Scope {
  const ref = parseServiceStack(stack) ?? (service === undefined ? undefined : parseServiceKey(service));
  return ref === undefined ? { kind: "cluster" } : { kind: "service", ...ref };
}

export function nameFromUrn(urn: string): string {
  const index = urn.lastIndexOf("::");
  return index < 0 ? urn : urn.slice(index + 2);
}

/**
 * The stack that declares a resource, from its Pulumi name: components name their children
 * `<component name>:<role>`, and the component name is `cluster` or the Service's `<namespace>/<name>`.
 */
export function stackOfResource(name: string): string {
  const owner = name.split(":")[0];
  if (owner === CLUSTER_STACK) return CLUSTER_STACK;
  const [namespace, service] = owner.split("/");
  return serviceStackName(namespace, service ?? "");
}
