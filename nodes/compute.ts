// A small typed client for the parts of the Compute Engine v1 REST API the node controller needs:
// instances get / list / aggregatedList and regions get. It speaks plain HTTP through fetch so the
// same code runs against compute.googleapis.com and against the GCE emulator's HTTP face
// (`computeEndpoint`), and it exposes exactly the outcomes callers must tell apart: an instance
// that exists, an instance that is definitively gone (404 naming that instance), and everything
// else (a ComputeError saying which call on which resource failed, and how).

import { GoogleAuth } from "google-auth-library";
import { Counter, type Registry } from "prom-client";

export const DEFAULT_COMPUTE_ENDPOINT = "https://compute.googleapis.com/compute/v1/";
export const COMPUTE_READONLY_SCOPE = "https://www.googleapis.com/auth/compute.readonly";

export type ComputeCall = "instances.get" | "instances.list" | "instances.aggregatedList" | "regions.get";

/** The instance fields the node controller uses; everything else in the API response is dropped. */
export interface Instance {
    readonly name: string;
    readonly project: string;
    /** Zone name, e.g. `us-central1-a` (the API returns a URL; we keep its last segment). */
    readonly zone: string;
    /** Machine type name, e.g. `e2-standard-4`. */
    readonly machineType: string;
    readonly status?: string;
    readonly id?: string;
    readonly networkInterfaces: readonly NetworkInterface[];
}

export interface NetworkInterface {
    readonly networkIP?: string;
    readonly ipv6Address?: string;
    readonly stackType?: string;
    readonly accessConfigs: readonly { readonly natIP?: string }[];
    readonly ipv6AccessConfigs: readonly { readonly externalIpv6?: string }[];
}

export interface Region {
    readonly name: string;
    /** Zone names (the API returns URLs). */
    readonly zones: readonly string[];
}

export type GetInstanceResult =
    | { readonly kind: "found"; readonly instance: Instance }
    /** 404 whose body names this very instance: it does not exist in that project and zone. */
    | { readonly kind: "notFound"; readonly project: string; readonly zone: string; readonly name: string };

export interface CallOptions {
    /** Aborts the call, including its retries and backoff sleeps. */
    readonly signal?: AbortSignal;
}

/** The surface the node controller depends on, so tests and benchmarks can substitute it. */
export interface ComputeApi {
    getInstance(project: string, zone: string, name: string, opts?: CallOptions): Promise<GetInstanceResult>;
    listInstances(project: string, zone: string, opts?: CallOptions): Promise<Instance[]>;
    aggregatedListInstances(project: string, filter?: string, opts?: CallOptions): Promise<Instance[]>;
    getRegion(project: string, region: string, opts?: CallOptions): Promise<Region>;
}

/**
 * A Compute call that failed for good (after retries, or at once for non-retryable statuses).
 * `status` is the HTTP status, or undefined when no response arrived (network error, timeout).
 */
export class ComputeError extends Error {
    override readonly name = "ComputeError";
    readonly status: number | undefined;
    readonly call: ComputeCall;
    /** API resource path, e.g. `projects/p/zones/us-central1-a/instances/n1`. */
    readonly resource: string;
    /** Google's error reason (`notFound`, `forbidden`, `rateLimitExceeded`...) when the body had one. */
    readonly reason: string | undefined;
    readonly attempts: number;

    constructor(
        args: {
            call: ComputeCall;
            resource: string;
            status: number | undefined;
            reason?: string;
            detail: string;
            attempts: number;
        },
        options?: ErrorOptions,
    ) {
        const what = args.status === undefined ? "no response" : `HTTP ${args.status}`;
        const tries = args.attempts > 1 ? ` (after ${args.attempts} attempts)` : "";
        super(`compute ${args.call} ${args.resource}: ${what}: ${args.detail}${tries}`, options);
        this.status = args.status;
        this.call = args.call;
        this.resource = args.resource;
        this.reason = args.reason;
        this.attempts = args.attempts;
    }

    get isTimeout(): boolean {
        return this.status === undefined && this.reason === "timeout";
    }

    get isPermissionDenied(): boolean {
        return this.status === 401 || this.status === 403;
    }
}

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

export interface ComputeClientOptions {
    /** Base URL ending in `/compute/v1/`. Default compute.googleapis.com. */
    readonly endpoint?: string;
    /**
     * Where credentials come from. Default: none for an http://127.0.0.1 / localhost endpoint (the
     * emulator), otherwise Application Default Credentials (which include the metadata server)
     * with the compute.readonly scope.
     */
    readonly auth?: AuthHeaders | "none";
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

const PAGE_SIZE = 500;
// A runaway nextPageToken loop (a server bug) must not pin a worker forever.
const MAX_PAGES = 1000;

export class ComputeClient implements ComputeApi {
    private readonly endpoint: string;
    private readonly auth: AuthHeaders | undefined;
    private readonly retry: RetryPolicy;
    private readonly timeoutMs: number;
    private readonly fetchFn: typeof fetch;
    private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
    private readonly random: () => number;
    private readonly calls: Counter<"call" | "code"> | undefined;
    private readonly onAttempt: ((call: ComputeCall, code: string) => void) | undefined;

    constructor(opts: ComputeClientOptions = {}) {
        const endpoint = opts.endpoint ?? DEFAULT_COMPUTE_ENDPOINT;
        this.endpoint = endpoint.endsWith("/") ? endpoint : `${endpoint}/`;
        if (opts.auth === "none") {
            this.auth = undefined;
        } else if (opts.auth !== undefined) {
            this.auth = opts.auth;
        } else if (isLoopbackEndpoint(this.endpoint)) {
            // The emulator takes no credentials, and looking for ADC on a test machine would fail.
            this.auth = undefined;
        } else {
            this.auth = googleAuthHeaders();
        }
        this.retry = { ...DEFAULT_RETRY, ...opts.retry };
        this.timeoutMs = opts.timeoutMs ?? 30_000;
        this.fetchFn = opts.fetch ?? fetch;
        this.sleep = opts.sleep ?? abortableSleep;
        this.random = opts.random ?? Math.random;
        this.calls = opts.registry === undefined ? undefined : computeCallsCounter(opts.registry);
        this.onAttempt = opts.onAttempt;
    }

    async getInstance(project: string, zone: string, name: string, opts?: CallOptions): Promise<GetInstanceResult> {
        const resource = `projects/${project}/zones/${zone}/instances/${name}`;
        const res = await this.request("instances.get", resource, resource, {}, opts, true);
        if (res.kind === "notFound") {
            return { kind: "notFound", project, zone, name };
        }
        return { kind: "found", instance: parseInstance(res.body, { project, zone }, "instances.get", resource) };
    }

    async listInstances(project: string, zone: string, opts?: CallOptions): Promise<Instance[]> {
        const resource = `projects/${project}/zones/${zone}/instances`;
        const out: Instance[] = [];
        await this.paginate("instances.list", resource, {}, opts, (body) => {
            for (const raw of arrayField(body, "items")) {
                out.push(parseInstance(raw, { project, zone }, "instances.list", resource));
            }
        });
        return out;
    }

    /**
     * All instances of the project across zones (one call per page of 500), optionally narrowed by
     * a Compute `filter` expression such as `name = "node-1"`.
     */
    async aggregatedListInstances(project: string, filter?: string, opts?: CallOptions): Promise<Instance[]> {
        const resource = `projects/${project}/aggregated/instances`;
        const query: Record<string, string> = filter === undefined ? {} : { filter };
        const out: Instance[] = [];
        await this.paginate("instances.aggregatedList", resource, query, opts, (body) => {
            const items = objectField(body, "items");
            for (const [scope, scoped] of Object.entries(items)) {
                // Keys look like `zones/us-central1-a`; scopes without instances carry a warning.
                const zone = scope.startsWith("zones/") ? scope.slice("zones/".length) : undefined;
                for (const raw of arrayField(scoped, "instances")) {
                    out.push(parseInstance(raw, { project, zone }, "instances.aggregatedList", resource));
                }
            }
        });
        return out;
    }

    async getRegion(project: string, region: string, opts?: CallOptions): Promise<Region> {
        const resource = `projects/${project}/regions/${region}`;
        const res = await this.request("regions.get", resource, resource, {}, opts, false);
        if (res.kind === "notFound") {
            // Unreachable (allowNotFound=false), kept for the type checker.
            throw new ComputeError({ call: "regions.get", resource, status: 404, reason: "notFound", detail: "region not found", attempts: 1 });
        }
        const zones = arrayField(res.body, "zones").filter((z): z is string => typeof z === "string").map(lastSegment);
        const name = stringField(res.body, "name") ?? region;
        return { name, zones };
    }

    private async paginate(
        call: ComputeCall,
        resource: string,
        query: Record<string, string>,
        opts: CallOptions | undefined,
        onPage: (body: unknown) => void,
    ): Promise<void> {
        let pageToken: string | undefined;
        for (let page = 0; page < MAX_PAGES; page++) {
            const q: Record<string, string> = { ...query, maxResults: String(PAGE_SIZE) };
            if (pageToken !== undefined) {
                q["pageToken"] = pageToken;
            }
            const res = await this.request(call, resource, resource, q, opts, false);
            if (res.kind === "notFound") {
                throw new ComputeError({ call, resource, status: 404, reason: "notFound", detail: "not found", attempts: 1 });
            }
            onPage(res.body);
            pageToken = stringField(res.body, "nextPageToken");
            if (pageToken === undefined || pageToken === "") {
                return;
            }
        }
        throw new ComputeError({ call, resource, status: undefined, reason: "pagination", detail: `more than ${MAX_PAGES} pages`, attempts: MAX_PAGES });
    }

    /**
     * One logical call: retries 429, 5xx, network errors and timeouts (all calls here are
     * idempotent reads) with exponential backoff and full jitter, honouring Retry-After.
     */
    private async request(
        call: ComputeCall,
        resource: string,
        path: string,
        query: Record<string, string>,
        opts: CallOptions | undefined,
        allowNotFound: boolean,
    ): Promise<{ kind: "ok"; body: unknown } | { kind: "notFound" }> {
        const url = new URL(path, this.endpoint);
        for (const [k, v] of Object.entries(query)) {
            url.searchParams.set(k, v);
        }
        const signal = opts?.signal;
        let lastError: ComputeError | undefined;
        for (let attempt = 1; attempt <= this.retry.attempts; attempt++) {
            signal?.throwIfAborted();
            const outcome = await this.attempt(call, resource, url, attempt, signal);
            if (outcome.kind === "ok") {
                return { kind: "ok", body: outcome.body };
            }
            if (outcome.kind === "notFound") {
                if (allowNotFound) {
                    return { kind: "notFound" };
                }
                throw outcome.error;
            }
            lastError = outcome.error;
            if (!outcome.retryable || attempt === this.retry.attempts) {
                throw outcome.error;
            }
            const backoff = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
            const wait = outcome.retryAfterMs !== undefined
                ? Math.min(this.retry.maxDelayMs, outcome.retryAfterMs)
                : Math.floor(this.random() * backoff);
            await this.sleep(wait, signal);
        }
        // Only reachable with attempts < 1.
        throw lastError ?? new ComputeError({ call, resource, status: undefined, detail: "no attempts configured", attempts: 0 });
    }

    private async attempt(
        call: ComputeCall,
        resource: string,
        url: URL,
        attempt: number,
        outer: AbortSignal | undefined,
    ): Promise<
        | { kind: "ok"; body: unknown }
        | { kind: "notFound"; error: ComputeError }
        | { kind: "error"; error: ComputeError; retryable: boolean; retryAfterMs?: number }
    > {
        const timeout = AbortSignal.timeout(this.timeoutMs);
        const signal = outer === undefined ? timeout : AbortSignal.any([outer, timeout]);
        const headers: Record<string, string> = { accept: "application/json" };
        if (this.auth !== undefined) {
            try {
                Object.assign(headers, await this.auth(url.toString()));
            } catch (cause) {
                // Token fetches from the metadata server fail transiently too: retry like a 5xx.
                this.count(call, "auth");
                const error = new ComputeError({ call, resource, status: undefined, reason: "auth", detail: errorText(cause), attempts: attempt }, { cause });
                return { kind: "error", error, retryable: true };
            }
        }
        let res: Response;
        let text: string;
        try {
            res = await this.fetchFn(url, { method: "GET", headers, signal });
            text = await res.text();
        } catch (cause) {
            if (outer?.aborted === true) {
                // Our caller is shutting down: not a Compute failure, do not retry or count it.
                throw cause;
            }
            const timedOut = timeout.aborted;
            const code = timedOut ? "timeout" : "network";
            this.count(call, code);
            const error = new ComputeError(
                { call, resource, status: undefined, reason: code, detail: timedOut ? `timed out after ${this.timeoutMs} ms` : errorText(cause), attempts: attempt },
                { cause },
            );
            return { kind: "error", error, retryable: true };
        }
        this.count(call, String(res.status));
        if (res.ok) {
            try {
                return { kind: "ok", body: JSON.parse(text) as unknown };
            } catch (cause) {
                const error = new ComputeError({ call, resource, status: res.status, reason: "badJson", detail: "response is not JSON", attempts: attempt }, { cause });
                return { kind: "error", error, retryable: false };
            }
        }
        const g = parseGoogleError(text);
        const error = new ComputeError({
            call, resource, status: res.status, reason: g.reason, detail: g.message ?? (text.slice(0, 200) || res.statusText), attempts: attempt,
        });
        if (res.status === 404 && isInstanceNotFound(call, resource, g.message)) {
            return { kind: "notFound", error };
        }
        const retryable = res.status === 429 || res.status >= 500;
        const retryAfterMs = parseRetryAfter(res.headers.get("retry-after"));
        return retryAfterMs === undefined ? { kind: "error", error, retryable } : { kind: "error", error, retryable, retryAfterMs };
    }

    private count(call: ComputeCall, code: string): void {
        this.calls?.inc({ call, code });
        this.onAttempt?.(call, code);
    }
}

/** Builds a client from the daemon's config keys. */
export function computeClientFromConfig(config: { computeEndpoint?: string; registry?: Registry }): ComputeClient {
    const opts: { endpoint?: string; registry?: Registry } = {};
    if (config.computeEndpoint !== undefined && config.computeEndpoint !== "") {
        opts.endpoint = config.computeEndpoint;
    }
    if (config.registry !== undefined) {
        opts.registry = config.registry;
    }
    return new ComputeClient(opts);
}

export function isLoopbackEndpoint(endpoint: string): boolean {
    try {
        const u = new URL(endpoint);
        return u.protocol === "http:" && (u.hostname === "127.0.0.1" || u.hostname === "localhost" || u.hostname === "[::1]");
    } catch {
        return false;
    }
}

/** The counter is shared by every client on a registry (re-registering would throw). */
export function computeCallsCounter(registry: Registry): Counter<"call" | "code"> {
    const name = "dccm_compute_calls_total";
    const existing = registry.getSingleMetric(name);
    if (existing instanceof Counter) {
        return existing as Counter<"call" | "code">;
    }
    return new Counter({
        name,
        help: "Compute API HTTP attempts by call and response code (or network/timeout).",
        labelNames: ["call", "code"],
        registers: [registry],
    });
}

function googleAuthHeaders(): AuthHeaders {
    // ADC covers GOOGLE_APPLICATION_CREDENTIALS, gcloud credentials and the metadata server.
    const auth = new GoogleAuth({ scopes: [COMPUTE_READONLY_SCOPE] });
    return async (url) => {
        let headers: Headers;
        try {
            headers = await auth.getRequestHeaders(url);
        } catch (cause) {
            throw new Error(`no Google credentials for the Compute API (Application Default Credentials / metadata server): ${errorText(cause)}`, { cause });
        }
        const out: Record<string, string> = {};
        headers.forEach((value, key) => {
            out[key] = value;
        });
        return out;
    };
}

/**
 * Google returns 404 both for a missing instance and for a missing zone or project. Only the
 * first means "this instance is gone", so the body must name the instance we asked for. Bodies
 * without a message (seen from some proxies) are taken at the status code's word.
 */
function isInstanceNotFound(call: ComputeCall, resource: string, message: string | undefined): boolean {
    if (call !== "instances.get") {
        return false;
    }
    if (message === undefined) {
        return true;
    }
    const m = /resource '([^']+)' was not found/.exec(message);
    if (m === null) {
        return true;
    }
    const named = m[1] ?? "";
    return named === resource || named.endsWith(`/${resource}`);
}

function parseGoogleError(text: string): { message?: string; reason?: string } {
    try {
        const body = JSON.parse(text) as unknown;
        const err = isRecord(body) ? body["error"] : undefined;
        if (!isRecord(err)) {
            return {};
        }
        const out: { message?: string; reason?: string } = {};
        if (typeof err["message"] === "string") {
            out.message = err["message"];
        }
        const errors = err["errors"];
        if (Array.isArray(errors) && isRecord(errors[0]) && typeof errors[0]["reason"] === "string") {
            out.reason = errors[0]["reason"];
        } else if (typeof err["status"] === "string") {
            out.reason = err["status"];
        }
        return out;
    } catch {
        return {};
    }
}

function parseRetryAfter(v: string | null): number | undefined {
    if (v === null) {
        return undefined;
    }
    const secs = Number(v);
    if (Number.isFinite(secs) && secs >= 0) {
        return secs * 1000;
    }
    const when = Date.parse(v);
    return Number.isNaN(when) ? undefined : Math.max(0, when - Date.now());
}

function parseInstance(
    raw: unknown,
    fallback: { project: string; zone: string | undefined },
    call: ComputeCall,
    resource: string,
): Instance {
    if (!isRecord(raw) || typeof raw["name"] !== "string") {
        throw new ComputeError({ call, resource, status: 200, reason: "badResponse", detail: "instance without a name", attempts: 1 });
    }
    const selfLink = typeof raw["selfLink"] === "string" ? raw["selfLink"] : "";
    const fromLink = /\/projects\/([^/]+)\/zones\/([^/]+)\/instances\//.exec(selfLink);
    const zoneUrl = typeof raw["zone"] === "string" ? raw["zone"] : undefined;
    const zone = zoneUrl !== undefined ? lastSegment(zoneUrl) : fromLink?.[2] ?? fallback.zone;
    if (zone === undefined || zone === "") {
        throw new ComputeError({ call, resource, status: 200, reason: "badResponse", detail: `instance ${raw["name"]} without a zone`, attempts: 1 });
    }
    const nics = Array.isArray(raw["networkInterfaces"]) ? raw["networkInterfaces"] : [];
    const base = {
        name: raw["name"],
        project: fromLink?.[1] ?? fallback.project,
        zone,
        machineType: typeof raw["machineType"] === "string" ? lastSegment(raw["machineType"]) : "",
        networkInterfaces: nics.filter(isRecord).map(parseNic),
    };
    const status = stringField(raw, "status");
    const id = typeof raw["id"] === "string" || typeof raw["id"] === "number" ? String(raw["id"]) : undefined;
    return { ...base, ...(status === undefined ? {} : { status }), ...(id === undefined ? {} : { id }) };
}

function parseNic(raw: Record<string, unknown>): NetworkInterface {
    const accessConfigs = (Array.isArray(raw["accessConfigs"]) ? raw["accessConfigs"] : [])
        .filter(isRecord)
        .map((a) => (typeof a["natIP"] === "string" ? { natIP: a["natIP"] } : {}));
    const ipv6AccessConfigs = (Array.isArray(raw["ipv6AccessConfigs"]) ? raw["ipv6AccessConfigs"] : [])
        .filter(isRecord)
        .map((a) => (typeof a["externalIpv6"] === "string" ? { externalIpv6: a["externalIpv6"] } : {}));
    const nic: { networkIP?: string; ipv6Address?: string; stackType?: string } = {};
    for (const key of ["networkIP", "ipv6Address", "stackType"] as const) {
        const v = raw[key];
        if (typeof v === "string" && v !== "") {
            nic[key] = v;
        }
    }
    return { ...nic, accessConfigs, ipv6AccessConfigs };
}

function lastSegment(url: string): string {
    const trimmed = url.endsWith("/") ? url.slice(0, -1) : url;
    return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

function isRecord(v: unknown): v is Record<string, unknown> {
    return typeof v === "object" && v !== null && !Array.isArray(v);
}

function arrayField(v: unknown, key: string): unknown[] {
    if (!isRecord(v)) {
        return [];
    }
    const f = v[key];
    return Array.isArray(f) ? f : [];
}

function objectField(v: unknown, key: string): Record<string, unknown> {
    if (!isRecord(v)) {
        return {};
    }
    const f = v[key];
    return isRecord(f) ? f : {};
}

function stringField(v: unknown, key: string): string | undefined {
    if (!isRecord(v)) {
        return undefined;
    }
    const f = v[key];
    return typeof f === "string" ? f : undefined;
}

function errorText(err: unknown): string {
    if (err instanceof Error) {
        const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
        return `${err.message}${cause}`;
    }
    return String(err);
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
        if (signal?.aborted === true) {
            reject(signal.reason);
            return;
        }
        const onAbort = (): void => {
            clearTimeout(timer);
            reject(signal?.reason);
        };
        const timer = setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
        }, ms);
        signal?.addEventListener("abort", onAbort, { once: true });
    });
}
