/**
 * Service stacks back to their Service. A stack name says its Service (`service.<ns>.<name>`)
 * unless it was shortened to fit Pulumi's 100 characters (model/names.ts serviceStackName): those
 * are remembered from every Service the daemon sees, and from what the stack itself records
 * (stacks/runner.ts recordedService) for a stack whose Service is gone, so that it can still be
 * destroyed. Only shortened names are kept: a handful, whatever the cluster's size.
 */
import { parseServiceStack, serviceStackName } from "../model";

export interface ServiceRef {
  namespace: string;
  name: string;
}

export class ServiceStackKeys {
  private readonly shortened = new Map<string, ServiceRef>();

  /** The Service's stack, remembered when its name does not say the Service. */
  stackOf(namespace: string, name: string): string {
    const stack = serviceStackName(namespace, name);
    if (parseServiceStack(stack) === undefined) this.shortened.set(stack, { namespace, name });
    return stack;
  }

  /** The stack's Service; undefined for the cluster stack, other names, and a shortened name never seen. */
  serviceOf(stack: string): ServiceRef | undefined {
    return parseServiceStack(stack) ?? this.shortened.get(stack);
  }
}
