// The GCE emulator's HTTP face on 127.0.0.1: a slice of Compute v1 REST (reads of instances,
// regions, zones and the collections dccm manages; deletes of those collections, answered with
// Operations) plus test-only endpoints under /emulator/
// (list, out-of-band change/delete, instance seeding, fault injection, call counts, and the
// provider API the plugin process forwards to).

import * as http from "node:http";

import { type ListFilter, matchesFilter, parseFilter } from "./filter";
import { isJsonObject, type Json, type JsonObject, toJson } from "./json";
import { type GceKind, isGceKind, kindOf, scopePath, specOf } from "./kinds";
import { GceLimits, providerRateGroup, restRateGroup } from "./limits";
import { PROVIDER_OPERATIONS, type ProviderApi } from "./provider-api";
import {
  type FaultOperation,
  GceError,
  type GceState,
  type InstanceSpec,
  type NetworkInterfaceSpec,
  notFound,
  regionOfZone,
  type ResourceKey,
  type StoredResource,
} from "./state";

const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** The fields of a Compute Address the REST insert takes (addresses resource reference). */
const ADDRESS_FIELDS = [
  "kind",
  "name",
  "description",
  "address",
  "addressType",
  "networkTier",
  "network",
  "subnetwork",
  "purpose",
  "ipVersion",
  "ipv6EndpointType",
  "prefixLength",
  "labels",
  "region",
];
const DEFAULT_MAX_RESULTS = 500;
/** Fields of a REST resource GCE computes: a request may carry them back (an update sends what a get returned); they are not inputs. */
const REST_OUTPUT_ONLY = new Set([
  "kind",
  "id",
  "selfLink",
  "creationTimestamp",
  "fingerprint",
  "labelFingerprint",
  "region",
  "zone",
  "type",
  "size",
]);
/** REST field names that differ from the stored (@pulumi/gcp) ones: toRest's renames. */
const REST_RENAMES: Partial<Record<GceKind, Readonly<Record<string, string>>>> = {
  forwardingRules: { IPAddress: "ipAddress", IPProtocol: "ipProtocol" },
  firewalls: { allowed: "allows", denied: "denies" },
};

/** One row of GET /emulator/resources. */
export interface ResourceListing {
  readonly kind: GceKind;
  readonly project: string;
  readonly scope: string;
  readonly name: string;
  readonly properties: JsonObject;
}

interface RouteContext {
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly body: Json | undefined;
}

interface Reply {
  readonly status: number;
  readonly body: Json;
}

interface Route {
  readonly method: string;
  /** `/compute/v1/projects/{project}/zones/{zone}/instances/{name}`: what calls are counted under. */
  readonly pattern: string;
  readonly re: RegExp;
  readonly names: readonly string[];
  readonly counted: boolean;
  readonly handle: (ctx: RouteContext) => Reply;
}

function compile(pattern: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  const source = pattern
    .split("/")
    .map((seg) => {
      const m = /^\{(\w+)\}$/.exec(seg);
      if (m?.[1] !== undefined) {
        names.push(m[1]);
        return "([^/]+)";
      }
      return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return { re: new RegExp(`^${source}$`), names };
}

function ok(body: Json): Reply {
  return { status: 200, body };
}

function badRequest(message: string): GceError {
  return new GceError(400, message, "invalid");
}

/** Plain `{ kind, project, scope, name, properties }` rows, sorted. */
export function toListing(r: StoredResource): ResourceListing {
  return { kind: r.kind, project: r.project, scope: r.scope, name: r.name, properties: r.properties };
}

/** GCE's `maxResults`/`pageToken` paging over an already sorted list. */
function page<T>(items: readonly T[], query: URLSearchParams): { items: T[]; nextPageToken: string | undefined } {
  const rawMax = query.get("maxResults");
  let max = DEFAULT_MAX_RESULTS;
  if (rawMax !== null) {
    if (!/^\d+$/.test(rawMax) || Number(rawMax) < 1 || Number(rawMax) > 500) {
      throw badRequest(`Invalid value for field 'maxResults': '${rawMax}'. Must be in the range [0, 500].`);
    }
    max = Number(rawMax);
  }
  const token = query.get("pageToken");
  let offset = 0;
  if (token !== null && token !== "") {
    const decoded = Buffer.from(token, "base64url").toString("utf8");
    const m = /^offset:(\d+)$/.exec(decoded);
    if (m?.[1] === undefined) {
      throw badRequest(`Invalid value for field 'pageToken': '${token}'. Invalid page token.`);
    }
    offset = Number(m[1]);
  }
  const slice = items.slice(offset, offset + max);
  const next = offset + max < items.length ? Buffer.from(`offset:${offset + max}`).toString("base64url") : undefined;
  return { items: slice, nextPageToken: next };
}

/** The items whose REST representation (`view`) GCE's list `filter` keeps (filter.ts: the grammar and its source). */
function applyFilter<T>(items: readonly T[], query: URLSearchParams, view: (item: T) => JsonObject): T[] {
  const text = query.get("filter");
  if (text === null || text.trim() === "") {
    return [...items];
  }
  let filter: ListFilter;
  try {
    filter = parseFilter(text);
  } catch (cause) {
    throw new GceError(400, cause instanceof Error ? cause.message : String(cause), "invalid", { cause });
  }
  return items.filter((item) => matchesFilter(filter, view(item)));
}

export class HttpFace {
  private readonly routes: Route[] = [];
  private readonly callCounts = new Map<string, number>();
  /** Operations by path (`projects/P/regions/R/operations/N`), for GET and wait. */
  private readonly operations = new Map<string, JsonObject>();
  /** The operation each delete `requestId` produced, so a retried request is not acted on twice. */
  private readonly requests = new Map<string, JsonObject>();
  private nextOperation = 1;

  constructor(
    private readonly state: GceState,
    private readonly provider: ProviderApi,
    /** GCE's timing and limits (limits.ts); none unless the emulator was started with some. */
    readonly limits: GceLimits = new GceLimits(),
  ) {
    this.defineComputeRoutes();
    this.defineEmulatorRoutes();
  }

  /** Counted calls, `"GET /compute/v1/projects/{project}/zones/{zone}/instances/{name}": 2`, keys sorted. */
  calls(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const k of [...this.callCounts.keys()].sort()) {
      out[k] = this.callCounts.get(k) ?? 0;
    }
    return out;
  }

  resetCalls(): void {
    this.callCounts.clear();
  }

  /**
   * The Operation a Compute mutation answers with (Compute API reference, "Operation resource":
   * kind compute#operation, name, operationType, targetLink, targetId, status, progress, the times,
   * selfLink, and region or zone for scoped operations). The emulator applies changes at once, so
   * the operation is DONE when returned; real GCE may answer PENDING or RUNNING, which clients
   * wait out with `<operation>/wait`.
   */
  private operation(
    key: ResourceKey,
    targetId: Json | undefined,
    operationType: string,
    failure?: GceError,
  ): JsonObject {
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

  /** The Compute REST representation of a stored resource. */
  toRest(r: StoredResource): JsonObject {
    if (r.kind === "instances") {
      return r.properties;
    }
    const spec = specOf(r.kind);
    const { project: _project, deletionPolicy: _deletionPolicy, ...p } = r.properties;
    const out: JsonObject = { kind: spec.restKind, ...p };
    if (spec.scope === "region") {
      out.region = this.state.scopeLink(r.project, "region", r.scope);
    } else if (spec.scope === "zone") {
      out.zone = this.state.scopeLink(r.project, "zone", r.scope);
    }
    const rename = (from: string, to: string): void => {
      if (from in out) {
        const v = out[from];
        delete out[from];
        if (v !== undefined) {
          out[to] = v;
        }
      }
    };
    switch (r.kind) {
      case "forwardingRules":
        rename("ipAddress", "IPAddress");
        rename("ipProtocol", "IPProtocol");
        break;
      case "firewalls":
        for (const [from, to] of [
          ["allows", "allowed"],
          ["denies", "denied"],
        ] as const) {
          const rules = out[from];
          if (Array.isArray(rules)) {
            out[from] = rules.map((rule) => {
              if (!isJsonObject(rule)) {
                return rule;
              }
              const { protocol, ...rest } = rule;
              return protocol === undefined ? rest : { IPProtocol: protocol, ...rest };
            });
          }
          rename(from, to);
        }
        break;
      case "backendServices":
      case "targetPools":
        if (typeof out.healthChecks === "string") {
          out.healthChecks = [out.healthChecks];
        }
        break;
      case "instanceGroups":
        delete out.instances;
        break;
      default:
        break;
    }
    return out;
  }

  /**
   * A Compute REST request body as the stored (@pulumi/gcp-named) inputs of `kind`: toRest's
   * renames undone, fields GCE computes dropped, a list of one health check as the one link the
   * stored form holds. A field the kind does not have is GCE's 400 for an unknown JSON name.
   */
  fromRest(kind: GceKind, body: Json | undefined): JsonObject {
    const spec = specOf(kind);
    if (!isJsonObject(body)) {
      throw badRequest(`Invalid JSON payload received. The request body must be a Compute ${spec.typeName}.`);
    }
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(body)) {
      if (REST_OUTPUT_ONLY.has(k) || v === null) {
        continue;
      }
      const name = REST_RENAMES[kind]?.[k] ?? k;
      if (name !== "name" && (name === "deletionPolicy" || !spec.inputs.includes(name))) {
        throw badRequest(`Invalid JSON payload received. Unknown name "${k}" at 'resource': Cannot find field.`);
      }
      out[name] = v;
    }
    if (kind === "firewalls") {
      for (const field of ["allows", "denies"]) {
        const rules = out[field];
        if (Array.isArray(rules)) {
          out[field] = rules.map((rule) => {
            if (!isJsonObject(rule)) {
              return rule;
            }
            const { IPProtocol, ...rest } = rule;
            return IPProtocol === undefined ? rest : { protocol: IPProtocol, ...rest };
          });
        }
      }
    }
    if ((kind === "backendServices" || kind === "targetPools") && Array.isArray(out.healthChecks)) {
      // A target pool and a passthrough backend service take one health check (targetPools and
      // backendServices resource references, healthChecks: "Only one health check may be specified").
      if (out.healthChecks.length > 1) {
        throw badRequest(
          `Invalid value for field 'resource.healthChecks': ${JSON.stringify(out.healthChecks)}. Only one health check may be specified.`,
        );
      }
      const [only] = out.healthChecks;
      if (only === undefined) {
        delete out.healthChecks;
      } else {
        out.healthChecks = only;
      }
    }
    return out;
  }

  /** The key a mutation's path names. */
  private keyOfRoute(kind: GceKind, ctx: RouteContext): ResourceKey {
    return {
      kind,
      project: this.param(ctx, "project"),
      scope: specOf(kind).scope === "global" ? "global" : this.param(ctx, "scope"),
      name: this.param(ctx, "name"),
    };
  }

  /** `{collection}.insert`: GceState.create's rules on the request body, answered with an Operation. */
  private insertResource(kind: GceKind, ctx: RouteContext): JsonObject {
    const spec = specOf(kind);
    const props = this.fromRest(kind, ctx.body);
    props.project = this.param(ctx, "project");
    if (spec.scope !== "global") {
      props[spec.scope] = this.param(ctx, "scope");
    }
    const key = this.state.keyOf(kind, props);
    const created = this.state.create(kind, props);
    return this.operation(key, created.properties.id, "insert");
  }

  /**
   * `{collection}.update` (PUT: the body is the whole new resource) and `.patch` (PATCH: "JSON
   * merge patch format and processing rules", a null removes a field), answered with an Operation.
   * A `fingerprint` that is not the resource's current one is GCE's optimistic-lock refusal
   * (backendServices resource reference, fingerprint: "An up-to-date fingerprint must be provided in
   * order to update the BackendService, otherwise the request will fail with error 412
   * conditionNotMet"); none skips the check. Immutable fields and GCE's other rules: GceState.update.
   */
  private updateResource(kind: GceKind, ctx: RouteContext, merge: boolean): JsonObject {
    const key = this.keyOfRoute(kind, ctx);
    const current = this.state.get(key);
    if (!isJsonObject(ctx.body)) {
      throw badRequest(`Invalid JSON payload received. The request body must be a Compute ${specOf(kind).typeName}.`);
    }
    const fingerprint = ctx.body.fingerprint;
    if (typeof fingerprint === "string" && fingerprint !== current.properties.fingerprint) {
      throw new GceError(
        412,
        `Invalid fingerprint '${fingerprint}' for '${this.state.path(key)}': the resource changed since it was read (current fingerprint '${String(current.properties.fingerprint)}').`,
        "conditionNotMet",
      );
    }
    const body = merge ? { ...this.toRest(current), ...ctx.body } : ctx.body;
    if (body.name !== undefined && body.name !== key.name) {
      throw badRequest(
        `Invalid value for field 'resource.name': '${String(body.name)}'. The name of '${this.state.path(key)}' cannot be changed.`,
      );
    }
    const props = this.fromRest(kind, body);
    const spec = specOf(kind);
    const updated = this.state.update(key, {
      ...props,
      name: key.name,
      project: key.project,
      ...(spec.scope === "global" ? {} : { [spec.scope]: key.scope }),
    });
    return this.operation(key, updated.properties.id, merge ? "patch" : "update");
  }

  /** targetPools.addInstance / removeInstance, instanceGroups.addInstances / removeInstances: body `{ instances: [{ instance: URL }] }`. */
  private changeMembers(kind: GceKind, ctx: RouteContext, add: boolean): JsonObject {
    const key = this.keyOfRoute(kind, ctx);
    const list = isJsonObject(ctx.body) ? ctx.body.instances : undefined;
    if (!Array.isArray(list) || list.some((entry) => !isJsonObject(entry) || typeof entry.instance !== "string")) {
      throw badRequest("Invalid value for field 'instances': the request needs a list of { instance: URL }.");
    }
    const links = list.map((entry) => (isJsonObject(entry) ? String(entry.instance) : ""));
    const updated = this.state.changeMembers(key, links, add);
    const verb = kind === "targetPools" ? "Instance" : "Instances";
    return this.operation(key, updated.properties.id, `${add ? "add" : "remove"}${verb}`);
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
      const candidates = this.routes.filter((r) => r.re.test(path));
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
        if (route.counted) {
          const key = `${route.method} ${route.pattern}`;
          this.callCounts.set(key, (this.callCounts.get(key) ?? 0) + 1);
        }
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

  private route(method: string, pattern: string, counted: boolean, handle: (ctx: RouteContext) => Reply): void {
    const { re, names } = compile(pattern);
    this.routes.push({ method, pattern, re, names, counted, handle });
  }

  private param(ctx: RouteContext, name: string): string {
    const v = ctx.params[name];
    if (v === undefined) {
      throw new Error(`route parameter ${name} missing`);
    }
    return v;
  }

  private defineComputeRoutes(): void {
    const base = "/compute/v1/projects/{project}";
    const st = this.state;

    this.route("GET", `${base}/zones/{zone}/instances/{name}`, true, (ctx) => {
      const key: ResourceKey = {
        kind: "instances",
        project: this.param(ctx, "project"),
        scope: this.param(ctx, "zone"),
        name: this.param(ctx, "name"),
      };
      st.checkFault("instances", key.name, "get");
      return ok(this.toRest(st.get(key)));
    });
    this.route("GET", `${base}/zones/{zone}/instances`, true, (ctx) => {
      const project = this.param(ctx, "project");
      const zone = this.param(ctx, "zone");
      st.checkFault("instances", undefined, "get");
      const all = applyFilter(st.list({ kind: "instances", project, scope: zone }), ctx.query, (r) => this.toRest(r));
      const p = page(all, ctx.query);
      const body: JsonObject = {
        kind: "compute#instanceList",
        id: `projects/${project}/zones/${zone}/instances`,
      };
      if (p.items.length > 0) {
        body.items = p.items.map((r) => this.toRest(r));
      }
      body.selfLink = `${st.scopeLink(project, "zone", zone)}/instances`;
      if (p.nextPageToken !== undefined) {
        body.nextPageToken = p.nextPageToken;
      }
      return ok(body);
    });
    this.route("GET", `${base}/aggregated/instances`, true, (ctx) => {
      const project = this.param(ctx, "project");
      st.checkFault("instances", undefined, "get");
      const all = applyFilter(st.list({ kind: "instances", project }), ctx.query, (r) => this.toRest(r));
      const p = page(all, ctx.query);
      const zones = [...new Set([...st.zones, ...all.map((r) => r.scope)])].sort();
      const items: JsonObject = {};
      for (const zone of zones) {
        const scope = `zones/${zone}`;
        const inZone = p.items.filter((r) => r.scope === zone);
        items[scope] =
          inZone.length > 0
            ? { instances: inZone.map((r) => this.toRest(r)) }
            : {
                warning: {
                  code: "NO_RESULTS_ON_PAGE",
                  message: `There are no results for scope '${scope}' on this page.`,
                  data: [{ key: "scope", value: scope }],
                },
              };
      }
      const body: JsonObject = {
        kind: "compute#instanceAggregatedList",
        id: `projects/${project}/aggregated/instances`,
        items,
        selfLink: `${st.endpoint}/compute/v1/projects/${project}/aggregated/instances`,
      };
      if (p.nextPageToken !== undefined) {
        body.nextPageToken = p.nextPageToken;
      }
      return ok(body);
    });

    const regionBody = (project: string, region: string): JsonObject => ({
      kind: "compute#region",
      name: region,
      description: region,
      status: "UP",
      zones: st.zones.filter((z) => regionOfZone(z) === region).map((z) => st.scopeLink(project, "zone", z)),
      selfLink: st.scopeLink(project, "region", region),
    });
    const zoneBody = (project: string, zone: string): JsonObject => ({
      kind: "compute#zone",
      name: zone,
      description: zone,
      status: "UP",
      region: st.scopeLink(project, "region", regionOfZone(zone)),
      selfLink: st.scopeLink(project, "zone", zone),
    });
    const regions = (): string[] => [...new Set([st.region, ...st.zones.map(regionOfZone)])].sort();

    this.route("GET", `${base}/regions/{region}`, true, (ctx) => {
      const project = this.param(ctx, "project");
      const region = this.param(ctx, "region");
      if (!regions().includes(region)) {
        throw notFound(`projects/${project}/regions/${region}`);
      }
      return ok(regionBody(project, region));
    });
    this.route("GET", `${base}/regions`, true, (ctx) => {
      const project = this.param(ctx, "project");
      return ok({
        kind: "compute#regionList",
        id: `projects/${project}/regions`,
        items: applyFilter(regions(), ctx.query, (r) => regionBody(project, r)).map((r) => regionBody(project, r)),
        selfLink: `${st.endpoint}/compute/v1/projects/${project}/regions`,
      });
    });
    this.route("GET", `${base}/zones/{zone}`, true, (ctx) => {
      const project = this.param(ctx, "project");
      const zone = this.param(ctx, "zone");
      if (!st.zones.includes(zone)) {
        throw notFound(`projects/${project}/zones/${zone}`);
      }
      return ok(zoneBody(project, zone));
    });
    this.route("GET", `${base}/zones`, true, (ctx) => {
      const project = this.param(ctx, "project");
      return ok({
        kind: "compute#zoneList",
        id: `projects/${project}/zones`,
        items: applyFilter([...st.zones].sort(), ctx.query, (z) => zoneBody(project, z)).map((z) =>
          zoneBody(project, z),
        ),
        selfLink: `${st.endpoint}/compute/v1/projects/${project}/zones`,
      });
    });

    // The managed collections: get and list at their REST paths.
    const collections: ReadonlyArray<readonly [GceKind, string, string]> = [
      ["addresses", "regions/{scope}", "addresses"],
      ["forwardingRules", "regions/{scope}", "forwardingRules"],
      ["backendServices", "regions/{scope}", "backendServices"],
      ["targetPools", "regions/{scope}", "targetPools"],
      ["healthChecks", "regions/{scope}", "healthChecks"],
      ["globalHealthChecks", "global", "healthChecks"],
      ["instanceGroups", "zones/{scope}", "instanceGroups"],
      ["httpHealthChecks", "global", "httpHealthChecks"],
      ["firewalls", "global", "firewalls"],
      ["routes", "global", "routes"],
    ];
    for (const [kind, scopeSeg, collection] of collections) {
      const spec = specOf(kind);
      const scopeOf = (ctx: RouteContext): string => (spec.scope === "global" ? "global" : this.param(ctx, "scope"));
      const displayScope = scopeSeg.replace("{scope}", spec.scope === "zone" ? "{zone}" : "{region}");
      const listPattern = `${base}/${displayScope}/${collection}`;
      const listRoute = (ctx: RouteContext): Reply => {
        const project = this.param(ctx, "project");
        const scope = scopeOf(ctx);
        st.checkFault(kind, undefined, "get");
        const all = applyFilter(st.list({ kind, project, scope }), ctx.query, (r) => this.toRest(r));
        const p = page(all, ctx.query);
        const prefix = spec.scope === "global" ? "global" : `${spec.scope}s/${scope}`;
        const body: JsonObject = {
          kind: `${spec.restKind}List`,
          id: `projects/${project}/${prefix}/${collection}`,
        };
        if (p.items.length > 0) {
          body.items = p.items.map((r) => this.toRest(r));
        }
        body.selfLink = `${st.endpoint}/compute/v1/projects/${project}/${prefix}/${collection}`;
        if (p.nextPageToken !== undefined) {
          body.nextPageToken = p.nextPageToken;
        }
        return ok(body);
      };
      const getRoute = (ctx: RouteContext): Reply => {
        const key: ResourceKey = {
          kind,
          project: this.param(ctx, "project"),
          scope: scopeOf(ctx),
          name: this.param(ctx, "name"),
        };
        st.checkFault(kind, key.name, "get");
        return ok(this.toRest(st.get(key)));
      };
      // {collection}.delete (e.g. forwardingRules.delete, DELETE .../regions/{region}/forwardingRules/{name}):
      // 404 when absent, GCE's 400 resourceInUseByAnotherResource while another resource uses it
      // (GceState.delete), else an Operation. A repeated `requestId` gets the first request's
      // operation back without acting again ("Specify a unique request ID so that if you must
      // retry your request, the server will know to ignore the request if it has already been
      // completed", the requestId query parameter of every Compute delete method).
      const deleteRoute = (ctx: RouteContext): Reply =>
        this.once(ctx, () => {
          const key: ResourceKey = {
            kind,
            project: this.param(ctx, "project"),
            scope: scopeOf(ctx),
            name: this.param(ctx, "name"),
          };
          const targetId = st.get(key).properties.id;
          st.delete(key);
          return this.operation(key, targetId, "delete");
        });
      this.addAliased("GET", `${base}/${scopeSeg}/${collection}/{name}`, `${listPattern}/{name}`, getRoute);
      this.addAliased("DELETE", `${base}/${scopeSeg}/${collection}/{name}`, `${listPattern}/{name}`, deleteRoute);
      this.addAliased("GET", `${base}/${scopeSeg}/${collection}`, listPattern, listRoute);
    }

    this.addAliased("POST", `${base}/regions/{scope}/addresses`, `${base}/regions/{region}/addresses`, (ctx) =>
      this.once(ctx, () => this.insertAddress(ctx)),
    );

    // The mutations the stock GCE CCM makes (kubernetes/cloud-provider-gcp providers/gce, GA v1):
    // insert of every managed collection but addresses (above); update (PUT) of health checks,
    // legacy HTTP health checks, backend services and firewalls, patch of firewalls; the members of
    // target pools and instance groups. One model: what they change is what the provider face reads.
    for (const [kind, scopeSeg, collection] of collections) {
      if (kind === "addresses") {
        continue;
      }
      const display = `${base}/${scopeSeg.replace("{scope}", specOf(kind).scope === "zone" ? "{zone}" : "{region}")}/${collection}`;
      this.addAliased("POST", `${base}/${scopeSeg}/${collection}`, display, (ctx) =>
        this.once(ctx, () => this.insertResource(kind, ctx)),
      );
      if (["healthChecks", "globalHealthChecks", "httpHealthChecks", "backendServices", "firewalls"].includes(kind)) {
        this.addAliased("PUT", `${base}/${scopeSeg}/${collection}/{name}`, `${display}/{name}`, (ctx) =>
          this.once(ctx, () => this.updateResource(kind, ctx, false)),
        );
      }
      if (kind === "firewalls") {
        this.addAliased("PATCH", `${base}/${scopeSeg}/${collection}/{name}`, `${display}/{name}`, (ctx) =>
          this.once(ctx, () => this.updateResource(kind, ctx, true)),
        );
      }
      if (kind === "targetPools" || kind === "instanceGroups") {
        const verb = kind === "targetPools" ? "Instance" : "Instances";
        for (const add of [true, false]) {
          const action = `${add ? "add" : "remove"}${verb}`;
          this.addAliased(
            "POST",
            `${base}/${scopeSeg}/${collection}/{name}/${action}`,
            `${display}/{name}/${action}`,
            (ctx) => this.once(ctx, () => this.changeMembers(kind, ctx, add)),
          );
        }
      }
    }

    // regionOperations / zoneOperations / globalOperations get and wait: the stored operation,
    // 404 for one this emulator never returned (they are all DONE, so wait returns at once).
    for (const scopeSeg of ["regions/{scope}", "zones/{scope}", "global"] as const) {
      const display =
        scopeSeg === "regions/{scope}" ? "regions/{region}" : scopeSeg === "zones/{scope}" ? "zones/{zone}" : "global";
      const find = (ctx: RouteContext): Reply => {
        const where = scopeSeg === "global" ? "global" : `${scopeSeg.split("/")[0]}/${this.param(ctx, "scope")}`;
        const path = `projects/${this.param(ctx, "project")}/${where}/operations/${this.param(ctx, "operation")}`;
        const op = this.operations.get(path);
        if (op === undefined) {
          throw notFound(path);
        }
        return ok(this.limits.operationView(op));
      };
      this.addAliased(
        "GET",
        `${base}/${scopeSeg}/operations/{operation}`,
        `${base}/${display}/operations/{operation}`,
        find,
      );
      this.addAliased(
        "POST",
        `${base}/${scopeSeg}/operations/{operation}/wait`,
        `${base}/${display}/operations/{operation}/wait`,
        find,
      );
    }
    this.addAliased(
      "POST",
      `${base}/zones/{scope}/instanceGroups/{name}/listInstances`,
      `${base}/zones/{zone}/instanceGroups/{name}/listInstances`,
      (ctx) => {
        const key: ResourceKey = {
          kind: "instanceGroups",
          project: this.param(ctx, "project"),
          scope: this.param(ctx, "scope"),
          name: this.param(ctx, "name"),
        };
        st.checkFault("instanceGroups", key.name, "get");
        const group = st.get(key);
        const members = Array.isArray(group.properties.instances) ? group.properties.instances : [];
        const p = page(members, ctx.query);
        const body: JsonObject = {
          kind: "compute#instanceGroupsListInstances",
          id: `${st.path(key)}/listInstances`,
        };
        if (p.items.length > 0) {
          body.items = p.items.map((instance) => {
            const ik = typeof instance === "string" ? st.keyOfPath(instance) : undefined;
            const live = ik === undefined ? undefined : st.find(ik);
            return {
              instance,
              status: typeof live?.properties.status === "string" ? live.properties.status : "UNKNOWN",
            };
          });
        }
        if (p.nextPageToken !== undefined) {
          body.nextPageToken = p.nextPageToken;
        }
        return ok(body);
      },
    );
  }

  /**
   * A mutation acted on at most once per `requestId` ("Specify a unique request ID so that if you
   * must retry your request, the server will know to ignore the request if it has already been
   * completed", the requestId query parameter of every Compute insert and delete method): a repeat
   * gets the first request's operation back.
   */
  private once(ctx: RouteContext, act: () => JsonObject): Reply {
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

  /**
   * addresses.insert (POST .../regions/{region}/addresses, body a Compute Address): GCE's rules of
   * GceState.create (name, 409 alreadyExists, IP literal rules, allocation), answered with an
   * Operation. An IP another internal address holds fails in the operation, as GCE reports it
   * (IP_IN_USE_BY_ANOTHER_RESOURCE, HTTP 409); the other refusals are HTTP errors.
   */
  private insertAddress(ctx: RouteContext): JsonObject {
    const body = ctx.body;
    if (!isJsonObject(body)) {
      throw badRequest("Invalid JSON payload received. The request body must be a Compute Address.");
    }
    const props: JsonObject = {};
    for (const [k, v] of Object.entries(body)) {
      if (!ADDRESS_FIELDS.includes(k)) {
        throw badRequest(`Invalid JSON payload received. Unknown name "${k}" at 'resource': Cannot find field.`);
      }
      if (k !== "kind" && k !== "region") {
        props[k] = v;
      }
    }
    props.project = this.param(ctx, "project");
    props.region = this.param(ctx, "scope");
    const key = this.state.keyOf("addresses", props);
    try {
      const created = this.state.create("addresses", props);
      return this.operation(key, created.properties.id, "insert");
    } catch (e) {
      if (e instanceof GceError && e.reason === "IP_IN_USE_BY_ANOTHER_RESOURCE") {
        return this.operation(key, undefined, "insert", e);
      }
      throw e;
    }
  }

  /** A counted route whose regex uses `{scope}` but is counted under a pattern naming it region/zone. */
  private addAliased(
    method: string,
    matchPattern: string,
    countPattern: string,
    handle: (ctx: RouteContext) => Reply,
  ): void {
    const { re, names } = compile(matchPattern);
    this.routes.push({ method, pattern: countPattern, re, names, counted: true, handle });
  }

  private defineEmulatorRoutes(): void {
    const st = this.state;
    const keyFrom = (ctx: RouteContext): ResourceKey => {
      const rawKind = this.param(ctx, "kind");
      let kind: GceKind;
      try {
        kind = kindOf(rawKind);
      } catch (cause) {
        throw new GceError(400, `unknown kind ${rawKind}`, "invalid", { cause });
      }
      return {
        kind,
        project: this.param(ctx, "project"),
        scope: this.param(ctx, "scope"),
        name: this.param(ctx, "name"),
      };
    };
    const objectBody = (ctx: RouteContext, what: string): JsonObject => {
      if (!isJsonObject(ctx.body)) {
        throw badRequest(`${what}: the request body must be a JSON object`);
      }
      return ctx.body;
    };

    this.route("GET", "/emulator/resources", false, (ctx) => {
      const kind = ctx.query.get("kind");
      if (kind !== null && !isGceKind(kind)) {
        throw badRequest(`unknown kind ${kind}`);
      }
      return ok(st.list(kind === null ? {} : { kind }).map((r) => toJson(toListing(r))));
    });
    this.route("POST", "/emulator/resources/{kind}/{project}/{scope}", false, (ctx) => {
      const kind = this.param(ctx, "kind");
      try {
        kindOf(kind);
      } catch (cause) {
        throw new GceError(400, `unknown kind ${kind}`, "invalid", { cause });
      }
      const created = st.insertOutOfBand(kind, objectBody(ctx, "POST resource"), {
        project: this.param(ctx, "project"),
        scope: this.param(ctx, "scope"),
      });
      return ok(toJson(toListing(created)));
    });
    this.route("GET", "/emulator/history", false, () => ok(st.history().map((e) => toJson(e))));
    this.route("DELETE", "/emulator/history", false, () => {
      st.clearHistory();
      return ok({});
    });
    this.route("GET", "/emulator/resources/{kind}/{project}/{scope}/{name}", false, (ctx) =>
      ok(toJson(toListing(st.get(keyFrom(ctx))))),
    );
    this.route("PATCH", "/emulator/resources/{kind}/{project}/{scope}/{name}", false, (ctx) =>
      ok(toJson(toListing(st.patchOutOfBand(keyFrom(ctx), objectBody(ctx, "PATCH"))))),
    );
    this.route("DELETE", "/emulator/resources/{kind}/{project}/{scope}/{name}", false, (ctx) => {
      st.deleteOutOfBand(keyFrom(ctx));
      return ok({});
    });
    this.route("PUT", "/emulator/instances/{project}/{zone}/{name}", false, (ctx) => {
      const spec = parseInstanceSpec(ctx.body === undefined ? {} : objectBody(ctx, "PUT instance"));
      const r = st.putInstance(this.param(ctx, "project"), this.param(ctx, "zone"), this.param(ctx, "name"), spec);
      return ok(r.properties);
    });
    this.route("DELETE", "/emulator/instances/{project}/{zone}/{name}", false, (ctx) => {
      st.deleteOutOfBand({
        kind: "instances",
        project: this.param(ctx, "project"),
        scope: this.param(ctx, "zone"),
        name: this.param(ctx, "name"),
      });
      return ok({});
    });
    this.route("POST", "/emulator/faults", false, (ctx) => {
      const b = objectBody(ctx, "POST /emulator/faults");
      const { kind, name, operation, status, message, reason, count } = b;
      if (
        typeof kind !== "string" ||
        typeof operation !== "string" ||
        typeof status !== "number" ||
        typeof message !== "string"
      ) {
        throw badRequest("a fault needs kind, operation, status and message");
      }
      if (!isFaultOperation(operation)) {
        throw badRequest(`unknown fault operation ${operation}`);
      }
      try {
        st.injectFault({
          kind,
          operation,
          status,
          message,
          ...(typeof name === "string" ? { name } : {}),
          ...(typeof reason === "string" ? { reason } : {}),
          ...(typeof count === "number" ? { count } : {}),
        });
      } catch (cause) {
        throw new GceError(400, cause instanceof Error ? cause.message : String(cause), "invalid", { cause });
      }
      return ok({});
    });
    this.route("DELETE", "/emulator/faults", false, () => {
      st.clearFaults();
      return ok({});
    });
    this.route("GET", "/emulator/calls", false, () => ok(this.calls()));
    this.route("DELETE", "/emulator/calls", false, () => {
      this.resetCalls();
      return ok({});
    });
    this.route("POST", "/emulator/reset", false, () => {
      st.reset();
      this.limits.reset();
      this.resetCalls();
      this.operations.clear();
      this.requests.clear();
      return ok({});
    });
    for (const op of PROVIDER_OPERATIONS) {
      this.route("POST", `/emulator/provider/${op}`, true, (ctx) =>
        ok(this.provider.dispatch(op, objectBody(ctx, `provider ${op}`))),
      );
    }
  }
}

function isFaultOperation(s: string): s is FaultOperation {
  return ["create", "update", "delete", "read", "get"].includes(s);
}

function parseInstanceSpec(b: JsonObject): InstanceSpec {
  const str = (k: string): string | undefined => {
    const v = b[k];
    if (v === undefined || v === null) {
      return undefined;
    }
    if (typeof v !== "string") {
      throw badRequest(`instance ${k} must be a string`);
    }
    return v;
  };
  const spec: {
    machineType?: string;
    status?: string;
    tags?: string[];
    labels?: Record<string, string>;
    networkInterfaces?: NetworkInterfaceSpec[];
  } = {};
  const machineType = str("machineType");
  if (machineType !== undefined) {
    spec.machineType = machineType;
  }
  const status = str("status");
  if (status !== undefined) {
    spec.status = status;
  }
  const tags = b.tags;
  const tagItems = isJsonObject(tags) ? tags.items : tags;
  if (Array.isArray(tagItems)) {
    spec.tags = tagItems.map((t) => {
      if (typeof t !== "string") {
        throw badRequest("instance tags must be strings");
      }
      return t;
    });
  }
  if (isJsonObject(b.labels)) {
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(b.labels)) {
      if (typeof v !== "string") {
        throw badRequest("instance labels must be strings");
      }
      labels[k] = v;
    }
    spec.labels = labels;
  }
  if (Array.isArray(b.networkInterfaces)) {
    spec.networkInterfaces = b.networkInterfaces.map((n) => {
      if (!isJsonObject(n)) {
        throw badRequest("networkInterfaces entries must be objects");
      }
      const nic: {
        networkIP?: string;
        ipv6Address?: string;
        network?: string;
        accessConfigs?: Array<{ natIP?: string }>;
        aliasIpRanges?: Array<{ ipCidrRange: string; subnetworkRangeName?: string }>;
      } = {};
      for (const k of ["networkIP", "ipv6Address", "network"] as const) {
        const v = n[k];
        if (typeof v === "string") {
          nic[k] = v;
        }
      }
      if (Array.isArray(n.accessConfigs)) {
        nic.accessConfigs = n.accessConfigs.map((ac) =>
          isJsonObject(ac) && typeof ac.natIP === "string" ? { natIP: ac.natIP } : {},
        );
      }
      if (Array.isArray(n.aliasIpRanges)) {
        nic.aliasIpRanges = n.aliasIpRanges.map((a) => {
          if (
            !isJsonObject(a) ||
            typeof a.ipCidrRange !== "string" ||
            (a.subnetworkRangeName !== undefined && typeof a.subnetworkRangeName !== "string")
          ) {
            throw badRequest(
              "aliasIpRanges entries need an ipCidrRange string and an optional subnetworkRangeName string",
            );
          }
          return typeof a.subnetworkRangeName === "string"
            ? { ipCidrRange: a.ipCidrRange, subnetworkRangeName: a.subnetworkRangeName }
            : { ipCidrRange: a.ipCidrRange };
        });
      }
      return nic;
    });
  }
  return spec;
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
