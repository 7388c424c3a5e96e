/**
 * Kubernetes API client plumbing shared by the daemon and the node controller: keep-alive
 * connections and error classification.
 */
import * as https from "node:https";
import {
  ApiException,
  type ApiConstructor,
  type ApiType,
  createConfiguration,
  type KubeConfig,
  Observable,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
  ServerConfiguration,
} from "@kubernetes/client-node";
import { deadline } from "./deadline";

// Rebuilt now and then so rotated client certificates (exec plugins, kubelet-style cert files)
// are picked up; token auth is a per-request header and unaffected.
const AGENT_MAX_AGE_MS = 10 * 60_000;

/**
 * Bound on one API call (connect, send, and reading the whole response). Without one, a call on a
 * blackholed connection (no RST) never returns and whatever awaits it hangs with it. Watches do
 * not go through these clients (client-node's Watch makes its own request), so they stay open.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface KeepAliveAgentsOptions {
  /** Per-call deadline; the call rejects with an AbortError when it passes. */
  requestTimeoutMs?: number;
}

/**
 * @kubernetes/client-node 1.x gives every request a new https.Agent, so every call pays a TCP and
 * TLS handshake on both ends: measured, that was most of the CPU when initializing 500 Nodes, and
 * reusing one keep-alive agent doubled node-init throughput. This middleware swaps in one
 * keep-alive agent built from the same kubeconfig TLS material. It runs after the client applied
 * authentication, so auth headers are untouched. Proxied or plain http clusters keep the
 * library's own agent. Idle pooled sockets are unref'd by Node, so they never hold a process open.
 */
export class KeepAliveAgents {
  private current: { agent: https.Agent; createdAt: number } | undefined;
  private pending: Promise<https.Agent | undefined> | undefined;
  private readonly requestTimeoutMs: number;
  private readonly retired = new Set<https.Agent>();

  constructor(
    private readonly kubeConfig: KubeConfig,
    options: KeepAliveAgentsOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** Like KubeConfig.makeApiClient, with every call of the client going through the keep-alive agent. */
  makeApiClient<T extends ApiType>(apiClientType: ApiConstructor<T>): T {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (cluster === null) throw new Error("the kubeconfig has no current cluster");
    // Exactly one static middleware: the generated client reverses the static list in place on
    // every call, which only keeps a single entry's order stable. Per-call options (patch
    // content types) are appended by setHeaderOptions and so keep this one.
    return new apiClientType(
      createConfiguration({
        baseServer: new ServerConfiguration(cluster.server, {}),
        authMethods: { default: this.kubeConfig },
        middleware: [this.middleware()],
      }),
    );
  }

  middleware(): ObservableMiddleware {
    return {
      pre: (ctx: RequestContext) =>
        new Observable(
          this.agent().then((agent) => {
            if (agent !== undefined) ctx.setAgent(agent);
            // The same middleware sets the deadline: a second static middleware would be reordered
            // on every call (see makeApiClient). node-fetch honours the signal while it reads the
            // body too, so a response that stalls half-way is bounded as well.
            // No hook sees the call end, so the deadline lets go of the caller's signal when it
            // passes: what a call holds is bounded by requestTimeoutMs, not kept (runtime/deadline.ts).
            ctx.setSignal(deadline(ctx.getSignal(), this.requestTimeoutMs).signal);
            return ctx;
          }),
        ),
      post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
    };
  }

  /**
   * Closes every connection, pooled or in use (a call in flight fails), including those of agents
   * retired by a rotation; the clients stay usable (the pool is rebuilt on demand).
   */
  destroy(): void {
    this.current?.agent.destroy();
    this.current = undefined;
    for (const agent of this.retired) agent.destroy();
    this.retired.clear();
  }

  private async agent(): Promise<https.Agent | undefined> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (cluster === null || !cluster.server.startsWith("https:") || (cluster.proxyUrl ?? "") !== "") return undefined;
    const current = this.current;
    if (current !== undefined && Date.now() - current.createdAt < AGENT_MAX_AGE_MS) return current.agent;
    this.pending ??= this.build().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async build(): Promise<https.Agent | undefined> {
    const opts: https.RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const agent = new https.Agent({
      keepAlive: true,
      maxSockets: 32,
      ...(opts.ca === undefined ? {} : { ca: opts.ca }),
      ...(opts.cert === undefined ? {} : { cert: opts.cert }),
      ...(opts.key === undefined ? {} : { key: opts.key }),
      ...(opts.pfx === undefined ? {} : { pfx: opts.pfx }),
      ...(opts.passphrase === undefined ? {} : { passphrase: opts.passphrase }),
      ...(opts.servername === undefined ? {} : { servername: opts.servername }),
      ...(opts.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: opts.rejectUnauthorized }),
    });
    const old = this.current;
    this.current = { agent, createdAt: Date.now() };
    if (old !== undefined) {
      // Let requests in flight on the old agent finish before closing its sockets.
      this.retired.add(old.agent);
      setTimeout(() => {
        this.retired.delete(old.agent);
        old.agent.destroy();
      }, 60_000).unref();
    }
    return agent;
  }
}

/** The HTTP status of a failed API call, from client-node's ApiException or a fake's `code`. */
export function kubeStatusCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return (err as ApiException<unknown>).code;
  if (typeof err === "object" && err !== null) {
    const e = err as { code?: unknown; statusCode?: unknown };
    if (typeof e.code === "number") return e.code;
    if (typeof e.statusCode === "number") return e.statusCode;
  }
  return undefined;
}

/** Wraps a failed API call as `<what>: HTTP <code>: <apiserver message>`, the original as cause. */
export function kubeError(what: string, err: unknown): Error {
  const code = kubeStatusCode(err);
  const detail =
    err instanceof ApiException
      ? apiMessage(err as ApiException<unknown>)
      : err instanceof Error
        ? err.message
        : String(err);
  return new Error(`${what}: ${code === undefined ? "" : `HTTP ${code}: `}${detail}`, { cause: err });
}

function apiMessage(err: ApiException<unknown>): string {
  const body: unknown = err.body;
  if (typeof body === "string") {
    try {
      const parsed = JSON.parse(body) as unknown;
      if (
        typeof parsed === "object" &&
        parsed !== null &&
        typeof (parsed as { message?: unknown }).message === "string"
      )
        return (parsed as { message: string }).message;
    } catch {
      return body.slice(0, 300);
    }
  }
  if (typeof body === "object" && body !== null && typeof (body as { message?: unknown }).message === "string")
    return (body as { message: string }).message;
  return err.message.slice(0, 300);
}

/** `HTTP <code>: <apiserver message>` of a failed API call (never the raw response body); undefined for other errors. */
export function kubeErrorText(err: unknown): string | undefined {
  if (!(err instanceof ApiException)) return undefined;
  return `HTTP ${(err as ApiException<unknown>).code}: ${apiMessage(err as ApiException<unknown>)}`;
}
