/** One record per stack, shared by the cluster and Service controllers: what the backend holds, what was applied and published. */
import { isServiceStack } from "../model";
import { ReferenceUnion, type ClusterReferences } from "./references";
import type { StatusBook } from "./status";

/** Everything the daemon knows of one stack; dropped when the stack is gone. */
export interface StackRecord {
  /** The backend holds this stack (found at start, or created since). */
  known: boolean;
  /** Outputs the stack records: read once after a start, then those of each successful run. */
  recorded?: Record<string, unknown>;
  /** Hash of the desired state the stack last applied. */
  applied?: string;
  /** The ingress IPs last written for a Service stack. */
  published?: string[];
  /** `<uid> <hash>` of the invalid Service last told why (one Warning per object and spec). */
  toldRejection?: string;
  /** What the Service stack, as last applied, points at; failed runs keep the previous one. */
  references?: ClusterReferences;
}

export class StackRecords {
  private readonly records = new Map<string, StackRecord>();
  /** The union of every record's references. */
  private readonly referenced = new ReferenceUnion();
  /** The Service stacks known at the start whose references are not known yet (ClusterReferences.unread). */
  private readonly unread = new Set<StackRecord>();

  /** `status`: its rows are the stacks that have a record here. */
  constructor(
    knownStacks: Iterable<string>,
    private readonly status?: Pick<StatusBook, "track" | "drop">,
  ) {
    for (const stack of knownStacks) {
      const record: StackRecord = { known: true };
      this.records.set(stack, record);
      if (isServiceStack(stack)) this.unread.add(record);
      status?.track(stack);
    }
  }

  get(stack: string): StackRecord {
    let record = this.records.get(stack);
    if (record === undefined) {
      record = { known: false };
      this.records.set(stack, record);
      this.status?.track(stack);
    }
    return record;
  }

  /** Drops the stack's record; returns whether the union may have changed (it pointed at anything, or was the last unread). */
  forget(stack: string): boolean {
    const record = this.records.get(stack);
    const references = record?.references;
    const wasUnread = record !== undefined && this.unread.delete(record);
    this.records.delete(stack);
    this.status?.drop(stack);
    this.referenced.replace(references, undefined);
    return references !== undefined || (wasUnread && this.unread.size === 0);
  }

  /** Records what the stack's load balancer now points at in the cluster stack. */
  setReferences(record: StackRecord, references: ClusterReferences): void {
    this.referenced.replace(record.references, references);
    record.references = references;
    this.unread.delete(record);
  }

  /** What the applied Service stacks point at, together (the cluster stack keeps all of it). */
  references(): ClusterReferences {
    return { ...this.referenced.union(), ...(this.unread.size > 0 ? { unread: true as const } : {}) };
  }
}
