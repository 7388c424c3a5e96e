// The GCE emulator's HTTP face on 127.0.0.1: a slice of Compute v1 REST (reads of instances,
// regions, zones and the collections dccm manages; inserts, updates and deletes of those
// collections, answered with Operations: computeRoutes.ts) plus test-only endpoints under /emulator/
// (list, out-of-band change/delete, instance seeding, fault injection, call counts, and the
// provider API the plugin process forwards to: emulatorRoutes.ts). This file serves a request:
// its route, GCE's rate limits and waits (limits.ts), and the error body.

import * as http from "node:http";

import { defineComputeRoutes } from "./computeRoutes";
import { defineEmulatorRoutes } from "./emulatorRoutes";
import { GceError } from "./errors";
import { isJsonObject, type Json, toJson } from "./json";
import { type GceKind, kindOf } from "./kinds";
import { GceLimits, providerRateGroup, restRateGroup } from "./limits";
import { Operations } from "./operations";
import type { ProviderApi } from "./provider-api";
import { badRequest, type Reply, type Route, Router } from "./router";
import type { GceState } from "./state";

export { type ResourceListing, toListing } from "./rest";

const MAX_BODY_BYTES = 4 * 1024 * 1024;

export class HttpFace {
  private readonly router = new Router();
  private readonly operations: Operations;

  constructor(
    private readonly state: GceState,
    provider: ProviderApi,
    /** GCE's timing and limits (limits.ts); none unless the emulator was started with some. */
    readonly limits: GceLimits = new GceLimits(),
  ) {
    this.operations = new Operations(state, limits);
    defineComputeRoutes({ router: this.router, state, operations: this.operations, limits });
    defineEmulatorRoutes({
      router: this.router,
      state,
      provider,
      reset: () => {
        state.reset();
        limits.reset();
        this.router.resetCalls();
        this.operations.reset();
      },
    });
  }

  /** Counted calls, `"GET /compute/v1/projects/{project}/zones/{zone}/instances/{name}": 2`, keys sorted. */
  calls(): Record<string, number> {
    return this.router.calls();
  }

  resetCalls(): void {
    this.router.resetCalls();
  }

  /** The Node request listener. */
  readonly listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    this.serve(req, res).catch((e: unknown) => {
      // serve() answers every request itself; this only fires when the socket is gone.
      if (!res.headersSent) {
        res.statusCode = 500;
        res.end(String(e));
      }
    });
  };

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let reply: Reply;
    try {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const method = req.method ?? "GET";
      const path = url.pathname.replace(/\/+$/, "") || "/";
      const candidates = this.router.routes.filter((r) => r.re.test(path));
      const route = candidates.find((r) => r.method === method);
      if (route === undefined) {
        reply =
          candidates.length > 0
            ? {
                status: 405,
                body: new GceError(405, `Method ${method} not allowed on ${path}`, "httpMethodNotAllowed").toBody(),
              }
            : {
                status: 404,
                body: new GceError(404, `The requested URL ${path} was not found on this server.`, "notFound").toBody(),
              };
      } else {
        this.router.count(route);
        const m = route.re.exec(path);
        const params: Record<string, string> = {};
        route.names.forEach((n, i) => {
          params[n] = decodeURIComponent(m?.[i + 1] ?? "");
        });
        const body = await readBody(req);
        await this.limit(route, params, body);
        reply = route.handle({ params, query: url.searchParams, body });
        await this.settle(route, body, reply);
      }
    } catch (e) {
      const err =
        e instanceof GceError
          ? e
          : new GceError(500, e instanceof Error ? e.message : String(e), "backendError", { cause: e });
      reply = { status: err.status, body: err.toBody() };
    }
    const text = JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      "content-type": "application/json; charset=UTF-8",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  }

  /**
   * Before a request is handled (limits.ts): counted against its rate quota group (403
   * rateLimitExceeded when spent), and an operations.wait held until its operation is done.
   */
  private async limit(route: Route, params: Readonly<Record<string, string>>, body: Json | undefined): Promise<void> {
    const provider = /^\/emulator\/provider\/(\w+)$/.exec(route.pattern)?.[1];
    const preview = isJsonObject(body) && body.preview === true;
    const group =
      provider !== undefined
        ? preview
          ? undefined
          : providerRateGroup(provider)
        : restRateGroup(route.method, route.pattern);
    this.limits.admit(params.project ?? this.state.project, group);
    if (route.pattern.endsWith("/wait")) {
      await this.limits.waitFor(this.operationLink(route.pattern, params));
    }
  }

  /** After a provider create, update or delete: the provider waits for its operation (limits.ts providerWait). */
  private async settle(route: Route, body: Json | undefined, reply: Reply): Promise<void> {
    const provider = /^\/emulator\/provider\/(create|update|delete)$/.exec(route.pattern)?.[1];
    if (
      provider === undefined ||
      reply.status !== 200 ||
      !isJsonObject(body) ||
      typeof body.type !== "string" ||
      body.preview === true
    ) {
      return;
    }
    let kind: GceKind;
    try {
      kind = kindOf(body.type);
    } catch {
      return;
    }
    await this.limits.providerWait(kind);
  }

  /** The selfLink of the operation an operations get/wait route names. */
  private operationLink(pattern: string, params: Readonly<Record<string, string>>): string {
    const scope = pattern.includes("/regions/")
      ? `regions/${params.scope ?? ""}`
      : pattern.includes("/zones/")
        ? `zones/${params.scope ?? ""}`
        : "global";
    return `${this.state.endpoint}/compute/v1/projects/${params.project ?? ""}/${scope}/operations/${params.operation ?? ""}`;
  }
}

async function readBody(req: http.IncomingMessage): Promise<Json | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buf.length;
    if (size > MAX_BODY_BYTES) {
      throw badRequest("request body too large");
    }
    chunks.push(buf);
  }
  if (size === 0) {
    return undefined;
  }
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return toJson(JSON.parse(text));
  } catch (cause) {
    throw new GceError(
      400,
      `invalid JSON body: ${cause instanceof Error ? cause.message : String(cause)}`,
      "parseError",
      { cause },
    );
  }
}

export interface HttpServerHandle {
  readonly server: http.Server;
  readonly endpoint: string;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (a free port unless given); attach a listener afterwards with `server.on("request", ...)`. */
export async function listen(port = 0): Promise<HttpServerHandle> {
  const server = http.createServer();
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void =>
      reject(new Error(`GCE emulator: cannot listen on 127.0.0.1:${port}`, { cause: err }));
    server.once("error", onError);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", onError);
      resolve();
    });
  });
  const addr = server.address();
  if (addr === null || typeof addr === "string") {
    throw new Error(`GCE emulator: unexpected server address ${String(addr)}`);
  }
  const endpoint = `http://127.0.0.1:${addr.port}`;
  return {
    server,
    endpoint,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) =>
          err === undefined ? resolve() : reject(new Error("GCE emulator: close failed", { cause: err })),
        );
        server.closeAllConnections();
      }),
  };
}
