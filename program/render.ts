/**
 * `dccm render`: the real stack program under Pulumi's mock monitor, recording every resource it
 * declares. Computed values get deterministic placeholders so the output can be diffed.
 */
import * as crypto from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { gceResourceId } from "../gce/ids";
import { stackOfResource } from "../model/stacks";

export interface RenderedResource {
  stack: string;
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

const COMPUTE_V1 = "https://www.googleapis.com/compute/v1";

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function placeholderIP(name: string, internal: boolean): string {
  const octet = 1 + (crypto.createHash("sha256").update(name).digest().readUInt16BE(0) % 254);
  return internal ? `10.128.0.${octet}` : `203.0.113.${octet}`;
}

export function computedState(
  type: string,
  inputs: Record<string, unknown>,
): { id: string; state: Record<string, unknown> } {
  const name = text(inputs.name);
  const id = gceResourceId(type, inputs);
  if (id === undefined) return { id: `${type}::${name}`, state: { ...inputs } };
  const state: Record<string, unknown> = { ...inputs, selfLink: `${COMPUTE_V1}/${id}` };
  const internal = inputs.addressType === "INTERNAL" || inputs.loadBalancingScheme === "INTERNAL";
  if (type === "gcp:compute/address:Address" && inputs.address === undefined)
    state.address = placeholderIP(name, internal);
  if (type === "gcp:compute/forwardingRule:ForwardingRule" && inputs.ipAddress === undefined)
    state.ipAddress = placeholderIP(name, internal);
  return { id, state };
}

function compare(a: RenderedResource, b: RenderedResource): number {
  const ka = `${a.stack}\u0000${a.type}\u0000${a.name}`;
  const kb = `${b.stack}\u0000${b.type}\u0000${b.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** What the program declared, and either its outputs or the error it ended with. */
export type RenderResult = { resources: RenderedResource[] } & (
  { outputs: Record<string, unknown> } | { error: unknown }
);

/**
 * Runs `program` with `config` (keys without the `dccm:` prefix) under mocks and returns every
 * custom resource it registered, sorted by stack, type and name.
 */
export async function renderProgram(
  program: () => Promise<Record<string, unknown>>,
  config: Record<string, string>,
): Promise<RenderResult> {
  const resources: RenderedResource[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource(args: pulumi.runtime.MockResourceArgs): pulumi.runtime.MockResourceResult {
        const inputs = args.inputs as Record<string, unknown>;
        if (args.custom === true)
          resources.push({ stack: stackOfResource(args.name), type: args.type, name: args.name, inputs });
        return computedState(args.type, inputs);
      },
      call(args: pulumi.runtime.MockCallArgs): pulumi.runtime.MockCallResult {
        throw new Error(`dccm render: unexpected invoke ${args.token}`);
      },
    },
    "dccm",
    "render",
    false,
  );
  const all: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) all[`dccm:${key}`] = value;
  pulumi.runtime.setAllConfig(all);
  let outcome: { outputs: Record<string, unknown> } | { error: unknown };
  try {
    outcome = { outputs: await program() };
  } catch (error) {
    outcome = { error };
  }
  // Registrations still in flight when the program settles must be recorded too.
  await pulumi.runtime.disconnect();
  return { resources: resources.sort(compare), ...outcome };
}
