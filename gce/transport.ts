// The Compute client's HTTP transport: credentials, a deadline per attempt, retries with backoff
// and the per-attempt metric. It knows nothing of resources beyond their path; what bodies mean
// is parse.ts's business.

import { GoogleAuth } from "google-auth-library";
import { Counter, type Registry } from "prom-client";

import { fullJitterBackoffMs } from "../runtime/backoff";
import { deadline, type Deadline } from "../runtime/deadline";
import { namesResource, parseGoogleError, parseRetryAfter } from "./parse";
import { COMPUTE_READONLY_SCOPE, ComputeError, type CallOptions, type ComputeCall } from "./types";

export interface RetryPolicy {
  /** Total attempts including the first. Default 5. */
  readonly attempts: number;
  /** First backoff; doubles each retry (full jitter). Default 250 ms. */
  readonly baseDelayMs: number;
  /** Cap for one backoff, and for a server's Retry-After. Default 10 s. */
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 250, maxDelayMs: 10_000 };

/** Returns the headers that authorize a request (e.g. `Authorization: Bearer ...`). */
export type AuthHeaders = (url: string) => Promise<Record<string, string>>;

export interface TransportOptions {
  /** Base URL ending in `/compute/v1/`. */
  readonly endpoint: string;
  /**
   * Where credentials come from. Default: none for an http://127.0.0.1 / localhost endpoint (the
   * emulator), otherwise Application Default Credentials (which include the metadata server)
   * with `scopes`.
   */
  readonly auth?: AuthHeaders | "none";
  /** OAuth scopes of Application Default Credentials. Default: compute.readonly. */
  readonly scopes?: readonly string[];
  readonly retry?: Partial<RetryPolicy>;
  /** Bound on one HTTP attempt. Default 30 s. */
  readonly timeoutMs?: number;
  /** Counts every HTTP attempt as `dccm_compute_calls_total{call,code}`. */
  readonly registry?: Registry;
  /** Injectable for tests. */
  readonly fetch?: typeof fetch;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random?: () => number;
  /** Called after every HTTP attempt (the benchmark counts calls with it). */
  readonly onAttempt?: (call: ComputeCall, code: string) => void;
}

export type Method = "GET" | "DELETE" | "POST";

/** One HTTP request of a logical call. */
export interface Request {
  readonly call: ComputeCall;
  readonly method: Method;
  /** API path; also what errors name. */
  readonly resource: string;
  readonly query?: Readonly<Record<string, string>>;
  /** A JSON request body (inserts). */
  readonly body?: unknown;
}

/**
 * What a call answered. A 404 naming the requested resource is a result, not an error: only some
 * callers may read it as "absent" (see `bodyOf`), the others get its ComputeError.
 */
export type Response =
  { readonly kind: "ok"; readonly body: unknown } | { readonly kind: "notFound"; readonly error: ComputeError };

/** The body of a call that has no "absent" answer: its 404 is the ComputeError it is. */
export function bodyOf(res: Response): unknown {
  if (res.kind === "notFound") {
    throw res.error;
  }
  return res.body;
}

type Attempt =
  | Response
  | {
      readonly kind: "error";
      readonly error: ComputeError;
      readonly retryable: boolean;
      readonly retryAfterMs?: number;
    };

export class ComputeTransport {
  private readonly endpoint: string;
  private readonly auth: AuthHeaders | undefined;
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly calls: Counter<"call" | "code"> | undefined;
  private readonly onAttempt: ((call: ComputeCall, code: string) => void) | undefined;

  constructor(opts: TransportOptions) {
    this.endpoint = opts.endpoint.endsWith("/") ? opts.endpoint : `${opts.endpoint}/`;
    this.auth = authFor(this.endpoint, opts);
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.fetchFn = opts.fetch ?? fetch;
    this.sleep = opts.sleep ?? abortableSleep;
    this.random = opts.random ?? Math.random;
    this.calls = opts.registry === undefined ? undefined : computeCallsCounter(opts.registry);
    this.onAttempt = opts.onAttempt;
  }

  /**
   * One logical call: retries 429, 5xx, network errors and timeouts (reads, waits, and inserts and
   * deletes carrying one request ID are all idempotent) with exponential backoff and full jitter,
   * honouring Retry-After (capped like the backoff).
   */
  async send(req: Request, opts: CallOptions | undefined): Promise<Response> {
    const url = new URL(req.resource, this.endpoint);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      url.searchParams.set(k, v);
    }
    const signal = opts?.signal;
    let lastError: ComputeError | undefined;
    for (let attempt = 1; attempt <= this.retry.attempts; attempt++) {
      signal?.throwIfAborted();
      const outcome = await this.attempt(req, url, attempt, signal);
      if (outcome.kind !== "error") {
        return outcome;
      }
      lastError = outcome.error;
      if (!outcome.retryable || attempt === this.retry.attempts) {
        throw outcome.error;
      }
      const wait =
        outcome.retryAfterMs !== undefined
          ? Math.min(this.retry.maxDelayMs, outcome.retryAfterMs)
          : fullJitterBackoffMs(attempt, this.retry.baseDelayMs, this.retry.maxDelayMs, this.random());
      await this.sleep(wait, signal);
    }
    // Only reachable with attempts < 1.
    throw (
      lastError ??
      new ComputeError({
        call: req.call,
        resource: req.resource,
        status: undefined,
        detail: "no attempts configured",
        attempts: 0,
      })
    );
  }

  private async attempt(req: Request, url: URL, attempt: number, outer: AbortSignal | undefined): Promise<Attempt> {
    const limit = deadline(outer, this.timeoutMs);
    try {
      return await this.attemptWithin(limit, req, url, attempt, outer);
    } finally {
      limit.done();
    }
  }

  private async attemptWithin(
    limit: Deadline,
    req: Request,
    url: URL,
    attempt: number,
    outer: AbortSignal | undefined,
  ): Promise<Attempt> {
    const { call, resource } = req;
    const headers: Record<string, string> = { accept: "application/json" };
    if (req.body !== undefined) {
      headers["content-type"] = "application/json";
    }
    if (this.auth !== undefined) {
      try {
        Object.assign(headers, await this.auth(url.toString()));
      } catch (cause) {
        // Token fetches from the metadata server fail transiently too: retry like a 5xx. No
        // credentials configured at all (google-auth-library's "Could not load the default
        // credentials") is not transient: one attempt, said once.
        this.count(call, "auth");
        const text = errorText(cause);
        const error = new ComputeError(
          { call, resource, status: undefined, reason: "auth", detail: text, attempts: attempt },
          { cause },
        );
        return { kind: "error", error, retryable: !/Could not load the default credentials/.test(text) };
      }
    }
    let res: globalThis.Response;
    let text: string;
    try {
      res = await this.fetchFn(url, {
        method: req.method,
        headers,
        signal: limit.signal,
        ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
      });
      text = await res.text();
    } catch (cause) {
      if (outer?.aborted === true) {
        // Our caller is shutting down: not a Compute failure, do not retry or count it.
        throw cause;
      }
      const code = limit.timedOut() ? "timeout" : "network";
      this.count(call, code);
      const detail = limit.timedOut() ? `timed out after ${this.timeoutMs} ms` : errorText(cause);
      const error = new ComputeError(
        { call, resource, status: undefined, reason: code, detail, attempts: attempt },
        { cause },
      );
      return { kind: "error", error, retryable: true };
    }
    this.count(call, String(res.status));
    return classify(req, res, text, attempt);
  }

  private count(call: ComputeCall, code: string): void {
    this.calls?.inc({ call, code });
    this.onAttempt?.(call, code);
  }
}

/** An HTTP answer → ok, the resource's own 404, or an error that may be retried. */
function classify(req: Request, res: globalThis.Response, text: string, attempt: number): Attempt {
  const { call, resource } = req;
  if (res.ok) {
    try {
      return { kind: "ok", body: JSON.parse(text) as unknown };
    } catch (cause) {
      const error = new ComputeError(
        { call, resource, status: res.status, reason: "badJson", detail: "response is not JSON", attempts: attempt },
        { cause },
      );
      return { kind: "error", error, retryable: false };
    }
  }
  const g = parseGoogleError(text);
  const error = new ComputeError({
    call,
    resource,
    status: res.status,
    reason: g.reason,
    detail: g.message ?? (text.slice(0, 200) || res.statusText),
    attempts: attempt,
  });
  if (res.status === 404 && namesResource(resource, g.message)) {
    return { kind: "notFound", error };
  }
  // GCE answers a spent per-minute rate quota with 403 rateLimitExceeded, not 429 ("If your
  // project exceeds a rate quota, you receive a 403 error with the reason rateLimitExceeded ...
  // wait a minute then try your request again", cloud.google.com/compute/api-quota), as
  // terraform-provider-google knows (is403QuotaExceededPerMinuteError): retried like a 429.
  const retryable = res.status === 429 || res.status >= 500 || (res.status === 403 && g.reason === "rateLimitExceeded");
  const retryAfterMs = parseRetryAfter(res.headers.get("retry-after"), Date.now());
  return retryAfterMs === undefined
    ? { kind: "error", error, retryable }
    : { kind: "error", error, retryable, retryAfterMs };
}

function authFor(endpoint: string, opts: TransportOptions): AuthHeaders | undefined {
  if (opts.auth === "none") {
    return undefined;
  }
  if (opts.auth !== undefined) {
    return opts.auth;
  }
  // The emulator takes no credentials, and looking for ADC on a test machine would fail.
  return isLoopbackEndpoint(endpoint) ? undefined : googleAuthHeaders(opts.scopes ?? [COMPUTE_READONLY_SCOPE]);
}

export function isLoopbackEndpoint(endpoint: string): boolean {
  try {
    const u = new URL(endpoint);
    return (
      u.protocol === "http:" && (u.hostname === "127.0.0.1" || u.hostname === "localhost" || u.hostname === "[::1]")
    );
  } catch {
    return false;
  }
}

/** The counter is shared by every client on a registry (re-registering would throw). */
export function computeCallsCounter(registry: Registry): Counter<"call" | "code"> {
  const name = "dccm_compute_calls_total";
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) {
    return existing;
  }
  return new Counter({
    name,
    help: "Compute API HTTP attempts by call and response code (or network/timeout).",
    labelNames: ["call", "code"],
    registers: [registry],
  });
}

function googleAuthHeaders(scopes: readonly string[]): AuthHeaders {
  // ADC covers GOOGLE_APPLICATION_CREDENTIALS, gcloud credentials and the metadata server.
  const auth = new GoogleAuth({ scopes: [...scopes] });
  return async (url) => {
    let headers: Headers;
    try {
      headers = await auth.getRequestHeaders(url);
    } catch (cause) {
      throw new Error(
        `no Google credentials for the Compute API (Application Default Credentials / metadata server): ${errorText(cause)}`,
        { cause },
      );
    }
    const out: Record<string, string> = {};
    headers.forEach((value, key) => {
      out[key] = value;
    });
    return out;
  };
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    // fetch's "fetch failed" says why only in its cause; a wrapper that already quotes its cause
    // (ours around ADC's error) would say it twice.
    const cause =
      err.cause instanceof Error && !err.message.includes(err.cause.message) ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the abort's reason as given, as fetch rejects
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the abort's reason as given, as fetch rejects
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
