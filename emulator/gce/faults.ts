// Fault injection: a test makes the next matching Compute operation(s) fail with the error it names,
// through any face, as Google would answer it.

import { GceError } from "./errors";
import { type GceKind, kindOf } from "./kinds";

export type FaultOperation = "create" | "update" | "delete" | "read" | "get";

export interface FaultSpec {
  /** A GceKind ("forwardingRules") or a Pulumi type token ("gcp:compute/forwardingRule:ForwardingRule"). */
  readonly kind: string;
  /** Only operations on this resource name; any name when absent. */
  readonly name?: string;
  readonly operation: FaultOperation;
  readonly status: number;
  readonly message: string;
  /** Defaults from the status (400 invalid, 404 notFound, 409 alreadyExists, 429 rateLimitExceeded, 5xx backendError). */
  readonly reason?: string;
  /** How many matching operations fail. Default 1. */
  readonly count?: number;
}

interface ActiveFault {
  readonly kind: GceKind;
  readonly name: string | undefined;
  readonly operation: FaultOperation;
  readonly status: number;
  readonly message: string;
  readonly reason: string | undefined;
  remaining: number;
}

/** The faults injected and not yet used up. */
export class Faults {
  private active: ActiveFault[] = [];

  inject(fault: FaultSpec): void {
    const count = fault.count ?? 1;
    if (!Number.isInteger(count) || count < 1) {
      throw new Error(`injectFault: count must be a positive integer, got ${count}`);
    }
    if (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599) {
      throw new Error(`injectFault: status must be an HTTP error status, got ${fault.status}`);
    }
    this.active.push({
      kind: kindOf(fault.kind),
      name: fault.name,
      operation: fault.operation,
      status: fault.status,
      message: fault.message,
      reason: fault.reason,
      remaining: count,
    });
  }

  /** Throws the injected error if a fault matches this operation (and uses it up). */
  check(kind: GceKind, name: string | undefined, operation: FaultOperation): void {
    const fault = this.active.find(
      (f) => f.kind === kind && f.operation === operation && (f.name === undefined || f.name === name),
    );
    if (fault === undefined) {
      return;
    }
    fault.remaining -= 1;
    if (fault.remaining <= 0) {
      this.active = this.active.filter((f) => f !== fault);
    }
    throw new GceError(fault.status, fault.message, fault.reason);
  }

  clear(): void {
    this.active = [];
  }
}
