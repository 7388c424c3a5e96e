// A small typed client for the parts of the Compute Engine v1 REST API dccm calls itself: instances
// get / list / aggregatedList and regions get (the node controller), and list / get / delete of the
// collections dccm manages (the leak detector and `dccm gc`, leaks/). It speaks plain HTTP through fetch so the
// same code runs against compute.googleapis.com and against the GCE emulator's HTTP face
// (`computeEndpoint`), and it exposes exactly the outcomes callers must tell apart: an instance
// that exists, an instance that is definitively gone (404 naming that instance), and everything
// else (a ComputeError saying which call on which resource failed, and how).

import { randomUUID } from "node:crypto";

import { GoogleAuth } from "google-auth-library";
import { Counter, type Registry } from "prom-client";

export const DEFAULT_COMPUTE_ENDPOINT = "https://compute.googleapis.com/compute/v1/";
export const COMPUTE_READONLY_SCOPE = "https://www.googleapis.com/auth/compute.readonly";
/** Needed to delete (`dccm gc`); the daemon only ever reads with its own client. */
export const COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute";

/** The collections dccm manages, by the prefix of their Compute API methods. */
export type CollectionCall =
    | "addresses"
    | "forwardingRules"
    | "regionBackendServices"
    | "targetPools"
    | "regionHealthChecks"
    | "httpHealthChecks"
    | "instanceGroups"
    | "firewalls"
    | "routes";

export type ComputeCall =
    | "instances.get"
    | "instances.list"
    | "instances.aggregatedList"
    | "regions.get"
    | `${CollectionCall}.${"list" | "get" | "delete"}`
    | "regionOperations.wait"
    | "zoneOperations.wait"
    | "globalOperations.wait";

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

/** list / get / delete of a managed collection, by its API path (`projects/p/regions/r/forwardingRules`). */
export interface ComputeResourceApi {
    /** Every item of a collection (all pages), as the API returned them. */
    listCollection(call: `${CollectionCall}.list`, collectionPath: string, opts?: CallOptions): Promise<unknown[]>;
    /** The resource, or undefined when a 404 names it (it does not exist). */
    getResource(call: `${CollectionCall}.get`, resourcePath: string, opts?: CallOptions): Promise<unknown>;
    /**
     * Deletes the resource and waits for its operation: `absent` when a 404 names it. GCE's refusals
     * (`resourceInUseByAnotherResource`, synchronous or in the operation) are ComputeErrors.
     */
    deleteResource(call: `${CollectionCall}.delete`, resourcePath: string, opts?: CallOptions): Promise<"deleted" | "absent">;
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

    /**
     * GCE refused a delete because another resource uses this one: reason `resourceInUseByAnotherResource`
     * in an HTTP error, code `RESOURCE_IN_USE_BY_ANOTHER_RESOURCE` in a failed operation.
     */
    get isInUse(): boolean {
        return this.reason === "resourceInUseByAnotherResource" || this.reason === "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE";
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

const PAGE_SIZE = 500;
// A runaway nextPageToken loop (a server bug) must not pin a worker forever.
const MAX_PAGES = 1000;
// operations.wait returns after about 2 minutes even when the operation still runs; deletes of the
// resources dccm manages take seconds, so this many waits means something is stuck.
const MAX_OPERATION_WAITS = 15;

type Method = "GET" | "DELETE" | "POST";

export class ComputeClient implements ComputeApi, ComputeResourceApi {
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
            this.auth = googleAuthHeaders(opts.scopes ?? [COMPUTE_READONLY_SCOPE]);
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
        const res = await this.request("instances.get", "GET", resource, {}, opts, true);
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
        const res = await this.request("regions.get", "GET", resource, {}, opts, false);
        if (res.kind === "notFound") {
            // Unreachable (allowNotFound=false), kept for the type checker.
            throw new ComputeError({ call: "regions.get", resource, status: 404, reason: "notFound", detail: "region not found", attempts: 1 });
        }
        const zones = arrayField(res.body, "zones").filter((z): z is string => typeof z === "string").map(lastSegment);
        const name = stringField(res.body, "name") ?? region;
        return { name, zones };
    }

    async listCollection(call: `${CollectionCall}.list`, collectionPath: string, opts?: CallOptions): Promise<unknown[]> {
        const out: unknown[] = [];
        await this.paginate(call, collectionPath, {}, opts, (body) => {
            out.push(...arrayField(body, "items"));
        });
        return out;
    }

    async getResource(call: `${CollectionCall}.get`, resourcePath: string, opts?: CallOptions): Promise<unknown> {
        const res = await this.request(call, "GET", resourcePath, {}, opts, true);
        return res.kind === "notFound" ? undefined : res.body;
    }

    async deleteResource(call: `${CollectionCall}.delete`, resourcePath: string, opts?: CallOptions): Promise<"deleted" | "absent"> {
        // One request ID for every retry of this delete: GCE answers a repeat with the first
        // request's operation instead of acting twice (forwardingRules.delete, query parameter requestId).
        const res = await this.request(call, "DELETE", resourcePath, { requestId: randomUUID() }, opts, true);
        if (res.kind === "notFound") {
            return "absent";
        }
        await this.waitOperation(call, resourcePath, res.body, opts);
        return "deleted";
    }

    /**
     * Compute mutations answer with an Operation (status PENDING, RUNNING or DONE); it is done when
     * DONE, and failed when DONE with `error.errors` (Compute API reference, Operation resource).
     * Until DONE, `<operation>/wait` is called: it returns when the operation is done or after
     * about two minutes (regionOperations.wait, zoneOperations.wait, globalOperations.wait).
     */
    private async waitOperation(call: ComputeCall, resource: string, first: unknown, opts: CallOptions | undefined): Promise<void> {
        let op = first;
        for (let waits = 0; ; waits++) {
            const status = stringField(op, "status");
            if (status === "DONE") {
                const failure = operationFailure(op);
                if (failure !== undefined) {
                    throw new ComputeError({ call, resource, status: failure.status, reason: failure.reason, detail: failure.message, attempts: 1 });
                }
                return;
            }
            const path = operationPath(op);
            if (path === undefined) {
                throw new ComputeError({ call, resource, status: 200, reason: "badResponse", detail: "the response is not an Operation with a selfLink", attempts: 1 });
            }
            if (waits >= MAX_OPERATION_WAITS) {
                throw new ComputeError({ call, resource, status: undefined, reason: "timeout", detail: `operation ${path.path} still ${status ?? "unknown"} after ${waits} waits`, attempts: 1 });
            }
            const res = await this.request(path.call, "POST", `${path.path}/wait`, {}, opts, false);
            if (res.kind === "notFound") {
                // Unreachable (allowNotFound=false), kept for the type checker.
                throw new ComputeError({ call: path.call, resource: path.path, status: 404, reason: "notFound", detail: "operation not found", attempts: 1 });
            }
            op = res.body;
        }
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
            const res = await this.request(call, "GET", resource, q, opts, false);
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
     * One logical call: retries 429, 5xx, network errors and timeouts (reads, waits and deletes
     * carrying one request ID are all idempotent) with exponential backoff and full jitter,
     * honouring Retry-After. The resource path is also what errors name.
     */
    private async request(
        call: ComputeCall,
        method: Method,
        resource: string,
        query: Record<string, string>,
        opts: CallOptions | undefined,
        allowNotFound: boolean,
    ): Promise<{ kind: "ok"; body: unknown } | { kind: "notFound" }> {
        const url = new URL(resource, this.endpoint);
        for (const [k, v] of Object.entries(query)) {
            url.searchParams.set(k, v);
        }
        const signal = opts?.signal;
        let lastError: ComputeError | undefined;
        for (let attempt = 1; attempt <= this.retry.attempts; attempt++) {
            signal?.throwIfAborted();
            const outcome = await this.attempt(call, method, resource, url, attempt, signal);
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
        method: Method,
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
            res = await this.fetchFn(url, { method, headers, signal });
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
        if (res.status === 404 && namesResource(resource, g.message)) {
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

function googleAuthHeaders(scopes: readonly string[]): AuthHeaders {
    // ADC covers GOOGLE_APPLICATION_CREDENTIALS, gcloud credentials and the metadata server.
    const auth = new GoogleAuth({ scopes: [...scopes] });
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
 * Google returns 404 both for a missing resource and for a missing zone, region or project. Only
 * the first means "this resource is gone", so the body must name the resource we asked for.
 * Bodies without a message (seen from some proxies) are taken at the status code's word. Callers
 * decide which calls may answer "absent" at all (request's allowNotFound).
 */
function namesResource(resource: string, message: string | undefined): boolean {
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

/** A DONE operation's failure: its first error, with the HTTP status it maps to. */
function operationFailure(op: unknown): { status: number | undefined; reason: string; message: string } | undefined {
    const error = isRecord(op) ? op["error"] : undefined;
    const first = arrayField(error, "errors")[0];
    if (!isRecord(first)) {
        return undefined;
    }
    const status = isRecord(op) && typeof op["httpErrorStatusCode"] === "number" ? op["httpErrorStatusCode"] : undefined;
    return {
        status,
        reason: typeof first["code"] === "string" ? first["code"] : "operationFailed",
        message: typeof first["message"] === "string" ? first["message"] : "the operation failed",
    };
}

/** The path of an operation from its selfLink, and the wait call of its scope. */
function operationPath(op: unknown): { path: string; call: ComputeCall } | undefined {
    const link = stringField(op, "selfLink");
    const m = link === undefined ? null : /(projects\/[^/]+\/(regions\/[^/]+|zones\/[^/]+|global)\/operations\/[^/?#]+)$/.exec(link);
    if (m?.[1] === undefined || m[2] === undefined) {
        return undefined;
    }
    const call: ComputeCall = m[2].startsWith("regions/") ? "regionOperations.wait" : m[2].startsWith("zones/") ? "zoneOperations.wait" : "globalOperations.wait";
    return { path: m[1], call };
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
