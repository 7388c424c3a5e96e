/**
 * Pure readers of an exported deployment (a checkpoint's `deployment`, or what `pulumi stack export`
 * prints), shared by the runner, the readers of the backend and the commands: what a stack records
 * is read one way wherever it is read. The repair of a killed run's pending creates is here too: it
 * edits such a deployment before the runner imports it back.
 */
import { gceResourceId } from "../gce/ids";
import { nameFromUrn, parseServiceKey, serviceStackName } from "../model";
import { isRecord } from "../runtime/guards";
import { SERVICE_KEY_OUTPUT } from "../components/outputs";

const SERVICE_COMPONENT = "dccm:gcp:ServiceLoadBalancer";

/** The root stack resource's outputs in an exported deployment. */
export function stackOutputs(deployment: Record<string, unknown>): Record<string, unknown> {
  const resources: unknown[] = Array.isArray(deployment.resources) ? deployment.resources : [];
  const root = resources.find((resource: unknown) => isRecord(resource) && resource.type === "pulumi:pulumi:Stack");
  return isRecord(root) && isRecord(root.outputs) ? root.outputs : {};
}

const ADDRESS_TYPE = "gcp:compute/address:Address";

/**
 * Pure: the stack outputs, with `loadBalancers[<key>].resources.address` naming each Service's
 * address `<lb>` the deployment still holds. The engine records the program's outputs even when the
 * run fails later, on a delete: a release of `<lb>` that GCE refused leaves outputs without it and
 * the address in the state. What the stack holds decides whether a release is still due
 * (controllers/service/addressPins.ts), so it is read from the resources themselves.
 */
export function outputsWithHeldAddresses(deployment: Record<string, unknown>): Record<string, unknown> {
  const outputs = stackOutputs(deployment);
  const loadBalancers = outputs.loadBalancers;
  if (!isRecord(loadBalancers)) return outputs;
  const resources: unknown[] = Array.isArray(deployment.resources) ? deployment.resources : [];
  let amended: Record<string, unknown> | undefined;
  for (const resource of resources) {
    if (!isRecord(resource) || resource.type !== ADDRESS_TYPE || typeof resource.urn !== "string") continue;
    const name = nameFromUrn(resource.urn);
    if (!name.endsWith(":address")) continue;
    const key = name.slice(0, -":address".length);
    const entry = loadBalancers[key];
    const held = isRecord(resource.outputs) ? resource.outputs.name : undefined;
    if (!isRecord(entry) || typeof held !== "string") continue;
    const recorded = isRecord(entry.resources) ? entry.resources : {};
    if (recorded.address === held) continue;
    amended ??= { ...loadBalancers };
    amended[key] = { ...entry, resources: { ...recorded, address: held } };
  }
  return amended === undefined ? outputs : { ...outputs, loadBalancers: amended };
}

/**
 * Pure: the Service a Service stack was made for, from what it records: the output
 * `dccmServiceKey` (a stack with a shortened name, since its first up), else the name of its
 * ServiceLoadBalancer component (`<namespace>/<name>`) or of a pending create's resource
 * (`<namespace>/<name>:<role>`), for a stack whose first up failed or was killed. Only a key whose
 * stack name is `stack` counts. Undefined for a stack that records none of these: it holds no
 * resource either.
 */
export function recordedService(
  stack: string,
  deployment: Record<string, unknown> | undefined,
): { namespace: string; name: string } | undefined {
  if (deployment === undefined) return undefined;
  const candidates: string[] = [];
  const key = stackOutputs(deployment)[SERVICE_KEY_OUTPUT];
  if (typeof key === "string") candidates.push(key);
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  for (const resource of resources)
    if (isRecord(resource) && resource.type === SERVICE_COMPONENT && typeof resource.urn === "string")
      candidates.push(nameFromUrn(resource.urn));
  const operations = Array.isArray(deployment.pending_operations) ? deployment.pending_operations : [];
  for (const operation of operations) {
    const urn = isRecord(operation) && isRecord(operation.resource) ? operation.resource.urn : undefined;
    if (typeof urn === "string") candidates.push(nameFromUrn(urn).split(":")[0]);
  }
  for (const candidate of candidates) {
    const ref = parseServiceKey(candidate);
    if (ref !== undefined && serviceStackName(ref.namespace, ref.name) === stack) return ref;
  }
  return undefined;
}

/** The signature key of a serialized secret in a checkpoint (sdk/go/common/resource/sig: Secret). */
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
const SIG_KEY = "4dabf18193072939515e22adc298c6dd";

/** Whether a checkpoint value holds a (ciphertext) secret anywhere. */
export function holdsSecret(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsSecret);
  if (!isRecord(value)) return false;
  if (value[SIG_KEY] === SECRET_SIG) return true;
  return Object.values(value).some(holdsSecret);
}

/** Whether a killed run left pending creates in the deployment (recoverPendingCreates repairs them). */
export function hasPendingCreates(deployment: Record<string, unknown> | undefined): boolean {
  return (
    Array.isArray(deployment?.pending_operations) &&
    deployment.pending_operations.some((operation) => isRecord(operation) && operation.type === "creating")
  );
}

/**
 * A run killed mid-create leaves "pending creates" in the state: the engine would drop them and
 * create again, which GCE refuses (409) since the names are fixed. Our own state recording the
 * create is the proof the resource is ours, so it is recovered under its derivable ID instead; the
 * refresh that follows reads its real state. Returns the recovered URNs.
 */
export function recoverPendingCreates(deployment: Record<string, unknown>): string[] {
  const operations = Array.isArray(deployment.pending_operations) ? deployment.pending_operations : [];
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  const recovered: string[] = [];
  const remaining = operations.filter((operation: unknown) => {
    if (!isRecord(operation) || operation.type !== "creating" || !isRecord(operation.resource)) return true;
    const resource = operation.resource;
    const inputs = isRecord(resource.inputs) ? resource.inputs : {};
    const id = typeof resource.type === "string" ? gceResourceId(resource.type, inputs) : undefined;
    if (id === undefined || resource.custom !== true) return true;
    resources.push({ ...resource, id, outputs: { ...inputs } });
    recovered.push(String(resource.urn));
    return false;
  });
  deployment.pending_operations = remaining;
  deployment.resources = resources;
  return recovered;
}
