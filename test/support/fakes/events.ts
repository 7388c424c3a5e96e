/** The apiserver's Event writes in memory: the one EventSink of the unit tests (runtime/events.ts). */
import type { CoreV1Event } from "@kubernetes/client-node";
import type { EventPatch, EventSink } from "../../../runtime/events";

export interface MemoryEventSinkOptions {
  /** Every patch finds its Event gone (nothing patched), so each occurrence creates an Event of its own. */
  expire?: boolean;
}

export class MemoryEventSink implements EventSink {
  /** The Events created, in order. */
  readonly created: CoreV1Event[] = [];
  /** The same, each with the namespace it was created in. */
  readonly createdIn: { namespace: string; event: CoreV1Event }[] = [];
  /** The count bumps of Events still there, in order. */
  readonly patched: { namespace: string; name: string; patch: EventPatch }[] = [];
  /** The next patches find their Event gone. */
  expire: boolean;
  /** The next creates fail, as when the apiserver is down. */
  failCreate = false;

  constructor(options: MemoryEventSinkOptions = {}) {
    this.expire = options.expire ?? false;
  }

  async createEvent(namespace: string, event: CoreV1Event): Promise<void> {
    if (this.failCreate) throw new Error("apiserver down");
    this.created.push(event);
    this.createdIn.push({ namespace, event });
  }

  async patchEvent(namespace: string, name: string, patch: EventPatch): Promise<"ok" | "gone"> {
    if (this.expire) return "gone";
    this.patched.push({ namespace, name, patch });
    return "ok";
  }
}
