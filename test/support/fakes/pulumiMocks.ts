/**
 * Tier 2 harness: a component built under pulumi.runtime.setMocks, every registered resource and
 * every construction (options included) recorded.
 */
import * as pulumi from "@pulumi/pulumi";

export interface Registered {
  type: string;
  name: string;
  custom: boolean;
  inputs: Record<string, unknown>;
  /** The `import` option's ID the resource was registered with (components/adoption.ts). */
  importId?: string;
}

export interface Construction {
  type: string;
  name: string;
  /** The component itself for children; undefined for the component. */
  parent: pulumi.Resource | undefined;
  deleteBeforeReplace: boolean | undefined;
  ignoreChanges: string[] | undefined;
  replaceOnChanges: string[] | undefined;
  /** Names of the aliases (this harness declares aliases by name only). */
  aliases: string[];
  /** Pulumi names of the resources whose replacement replaces this one. */
  replaceWith: string[];
  /** Pulumi names of the resources this one explicitly depends on. */
  dependsOn: string[];
}

export interface Captured<T> {
  component: T;
  registered: Registered[];
  constructions: Construction[];
  urns: string[];
}

export type MockState = (
  type: string,
  inputs: Record<string, unknown>,
) => { id: string; state: Record<string, unknown> };

/** The Pulumi name a resource was constructed with (recorded by the transformation below). */
const constructedNames = new WeakMap<pulumi.Resource, string>();
export function nameOf(resource: pulumi.Resource): string {
  return constructedNames.get(resource) ?? "<unknown>";
}

function resourcesOf(
  input: pulumi.Input<pulumi.Input<pulumi.Resource>[]> | pulumi.Input<pulumi.Resource> | undefined,
): pulumi.Resource[] {
  if (input === undefined) return [];
  if (Array.isArray(input)) return input.filter((item): item is pulumi.Resource => pulumi.Resource.isInstance(item));
  return pulumi.Resource.isInstance(input) ? [input] : [];
}

/** Builds the component under mocks (project `project`, stack `unit`); `mockState` answers every create. */
export async function capture<T extends pulumi.Resource>(
  mockState: MockState,
  build: (opts: pulumi.ComponentResourceOptions) => T,
  project = "dccm",
): Promise<Captured<T>> {
  const registered: Registered[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource(args: pulumi.runtime.MockResourceArgs): pulumi.runtime.MockResourceResult {
        const inputs = args.inputs as Record<string, unknown>;
        registered.push({
          type: args.type,
          name: args.name,
          custom: args.custom === true,
          inputs,
          ...(args.id !== undefined && args.id !== "" ? { importId: args.id } : {}),
        });
        return mockState(args.type, inputs);
      },
      call(args: pulumi.runtime.MockCallArgs): pulumi.runtime.MockCallResult {
        throw new Error(`unexpected invoke ${args.token}`);
      },
    },
    project,
    "unit",
    false,
  );
  const monitor = pulumi.runtime.getMonitor() as unknown as { getRegisteredResources(): Map<string, unknown> };
  const constructions: Construction[] = [];
  const component = build({
    transformations: [
      (args) => {
        constructedNames.set(args.resource, args.name);
        constructions.push({
          type: args.type,
          name: args.name,
          parent: args.opts.parent,
          deleteBeforeReplace: (args.opts as pulumi.CustomResourceOptions).deleteBeforeReplace,
          ignoreChanges: args.opts.ignoreChanges,
          replaceOnChanges: args.opts.replaceOnChanges,
          aliases: (args.opts.aliases ?? []).map((alias) =>
            typeof alias === "object" && alias !== null && "name" in alias ? String(alias.name) : String(alias),
          ),
          replaceWith: ((args.opts as pulumi.CustomResourceOptions).replaceWith ?? []).map((resource) =>
            nameOf(resource),
          ),
          dependsOn: resourcesOf(args.opts.dependsOn).map((resource) => nameOf(resource)),
        });
        return undefined;
      },
    ],
  });
  await pulumi.runtime.disconnect();
  return { component, registered, constructions, urns: [...monitor.getRegisteredResources().keys()].sort() };
}
