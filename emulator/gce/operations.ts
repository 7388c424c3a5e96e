// The Operations Compute mutations answer with, kept for operations get and wait, and the
// requestId rule that a retried mutation is acted on once.

import type { GceError } from "./errors";
import type { Json, JsonObject } from "./json";
import { scopePath, specOf } from "./kinds";
import type { GceLimits } from "./limits";
import { badRequest, ok, type Reply, type RouteContext } from "./router";
import type { GceState } from "./state";
import type { ResourceKey } from "./store";

export class Operations {
  /** Operations by path (`projects/P/regions/R/operations/N`), for GET and wait. */
  private readonly operations = new Map<string, JsonObject>();
  /** The operation each mutation's `requestId` produced, so a retried request is not acted on twice. */
  private readonly requests = new Map<string, JsonObject>();
  private nextOperation = 1;

  constructor(
    private readonly state: GceState,
    private readonly limits: GceLimits,
  ) {}

  /**
   * The Operation a Compute mutation answers with (Compute API reference, "Operation resource":
   * kind compute#operation, name, operationType, targetLink, targetId, status, progress, the times,
   * selfLink, and region or zone for scoped operations). The emulator applies changes at once, so
   * the operation is DONE when returned; real GCE may answer PENDING or RUNNING, which clients
   * wait out with `<operation>/wait`.
   */
  operation(key: ResourceKey, targetId: Json | undefined, operationType: string, failure?: GceError): JsonObject {
    const spec = specOf(key.kind);
    const name = `operation-${this.nextOperation++}`;
    const path = `projects/${key.project}/${scopePath(spec.scope, key.scope)}/operations/${name}`;
    const now = new Date().toISOString();
    const op: JsonObject = {
      kind: "compute#operation",
      id: String(9_000_000_000_000_000_000n + BigInt(this.nextOperation)),
      name,
      operationType,
      targetLink: this.state.selfLink(key),
      ...(typeof targetId === "string" ? { targetId } : {}),
      status: "DONE",
      progress: 100,
      insertTime: now,
      startTime: now,
      endTime: now,
      selfLink: `${this.state.endpoint}/compute/v1/${path}`,
    };
    if (failure !== undefined) {
      // A DONE operation that failed: error.errors[] with GCE's error code, and the HTTP status the
      // error maps to (Operation resource: error, httpErrorStatusCode, httpErrorMessage).
      op.error = { errors: [{ code: failure.reason, message: failure.message }] };
      op.httpErrorStatusCode = failure.status;
      op.httpErrorMessage = failure.status === 409 ? "CONFLICT" : "BAD REQUEST";
    }
    if (spec.scope === "region") {
      op.region = this.state.scopeLink(key.project, "region", key.scope);
    } else if (spec.scope === "zone") {
      op.zone = this.state.scopeLink(key.project, "zone", key.scope);
    }
    this.operations.set(path, op);
    return this.limits.operationStarted(op, key.kind);
  }

  /** The stored operation at a path (`projects/P/regions/R/operations/N`). */
  find(path: string): JsonObject | undefined {
    return this.operations.get(path);
  }

  /**
   * A mutation acted on at most once per `requestId` ("Specify a unique request ID so that if you
   * must retry your request, the server will know to ignore the request if it has already been
   * completed", the requestId query parameter of every Compute insert and delete method): a repeat
   * gets the first request's operation back.
   */
  once(ctx: RouteContext, act: () => JsonObject): Reply {
    const requestId = ctx.query.get("requestId");
    if (requestId !== null) {
      if (
        !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(requestId) ||
        /^[0-]+$/.test(requestId)
      ) {
        throw badRequest(
          `Invalid value for field 'requestId': '${requestId}'. The request ID must be a valid UUID other than the zero UUID.`,
        );
      }
      const earlier = this.requests.get(requestId);
      if (earlier !== undefined) {
        return ok(earlier);
      }
    }
    const op = act();
    if (requestId !== null) {
      this.requests.set(requestId, op);
    }
    return ok(op);
  }

  /** Forgets every operation and request id (the operation names keep counting up). */
  reset(): void {
    this.operations.clear();
    this.requests.clear();
  }
}
