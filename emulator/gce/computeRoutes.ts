// The Compute v1 REST routes of the HTTP face: reads of instances, regions, zones and the managed
// collections; the mutations the stock GCE CCM makes (insert, update, patch, members, delete),
// answered with Operations; operations get and wait; instanceGroups.listInstances.

import { GceError, notFound } from "./errors";
import { isJsonObject, type JsonObject } from "./json";
import { type GceKind, regionOfZone, specOf } from "./kinds";
import type { GceLimits } from "./limits";
import type { Operations } from "./operations";
import { applyFilter, fromRest, page, toRest } from "./rest";
import { badRequest, ok, param, type Reply, type RouteContext, type Router } from "./router";
import type { GceState } from "./state";
import type { EndpointRequest } from "./rules";
import type { ResourceKey, StoredResource } from "./store";

/** What the Compute routes act on. */
export interface ComputeFace {
  readonly router: Router;
  readonly state: GceState;
  readonly operations: Operations;
  readonly limits: GceLimits;
}

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

/** The key a mutation's path names. */
function keyOfRoute(kind: GceKind, ctx: RouteContext): ResourceKey {
  return {
    kind,
    project: param(ctx, "project"),
    scope: specOf(kind).scope === "global" ? "global" : param(ctx, "scope"),
    name: param(ctx, "name"),
  };
}

/** `{collection}.insert`: GceState.create's rules on the request body, answered with an Operation. */
function insertResource(face: ComputeFace, kind: GceKind, ctx: RouteContext): JsonObject {
  const spec = specOf(kind);
  const props = fromRest(kind, ctx.body);
  props.project = param(ctx, "project");
  if (spec.scope !== "global") {
    props[spec.scope] = param(ctx, "scope");
  }
  const key = face.state.keyOf(kind, props);
  const created = face.state.create(kind, props);
  return face.operations.operation(key, created.properties.id, "insert");
}

/**
 * `{collection}.update` (PUT: the body is the whole new resource) and `.patch` (PATCH: "JSON
 * merge patch format and processing rules", a null removes a field), answered with an Operation.
 * A `fingerprint` that is not the resource's current one is GCE's optimistic-lock refusal
 * (backendServices resource reference, fingerprint: "An up-to-date fingerprint must be provided in
 * order to update the BackendService, otherwise the request will fail with error 412
 * conditionNotMet"); none skips the check. Immutable fields and GCE's other rules: GceState.update.
 */
function updateResource(face: ComputeFace, kind: GceKind, ctx: RouteContext, merge: boolean): JsonObject {
  const key = keyOfRoute(kind, ctx);
  const current = face.state.get(key);
  if (!isJsonObject(ctx.body)) {
    throw badRequest(`Invalid JSON payload received. The request body must be a Compute ${specOf(kind).typeName}.`);
  }
  const fingerprint = ctx.body.fingerprint;
  if (typeof fingerprint === "string" && fingerprint !== current.properties.fingerprint) {
    throw new GceError(
      412,
      `Invalid fingerprint '${fingerprint}' for '${face.state.path(key)}': the resource changed since it was read (current fingerprint '${String(current.properties.fingerprint)}').`,
      "conditionNotMet",
    );
  }
  const body = merge ? { ...toRest(face.state, current), ...ctx.body } : ctx.body;
  if (body.name !== undefined && body.name !== key.name) {
    throw badRequest(
      `Invalid value for field 'resource.name': '${String(body.name)}'. The name of '${face.state.path(key)}' cannot be changed.`,
    );
  }
  const props = fromRest(kind, body);
  const spec = specOf(kind);
  const updated = face.state.update(key, {
    ...props,
    name: key.name,
    project: key.project,
    ...(spec.scope === "global" ? {} : { [spec.scope]: key.scope }),
  });
  return face.operations.operation(key, updated.properties.id, merge ? "patch" : "update");
}

/** targetPools.addInstance / removeInstance, instanceGroups.addInstances / removeInstances: body `{ instances: [{ instance: URL }] }`. */
function changeMembers(face: ComputeFace, kind: GceKind, ctx: RouteContext, add: boolean): JsonObject {
  const key = keyOfRoute(kind, ctx);
  const list = isJsonObject(ctx.body) ? ctx.body.instances : undefined;
  if (!Array.isArray(list) || list.some((entry) => !isJsonObject(entry) || typeof entry.instance !== "string")) {
    throw badRequest("Invalid value for field 'instances': the request needs a list of { instance: URL }.");
  }
  const links = list.map((entry) => (isJsonObject(entry) ? String(entry.instance) : ""));
  const updated = face.state.changeMembers(key, links, add);
  const verb = kind === "targetPools" ? "Instance" : "Instances";
  return face.operations.operation(key, updated.properties.id, `${add ? "add" : "remove"}${verb}`);
}

/**
 * addresses.insert (POST .../regions/{region}/addresses, body a Compute Address): GCE's rules of
 * GceState.create (name, 409 alreadyExists, IP literal rules, allocation), answered with an
 * Operation. An IP another internal address holds fails in the operation, as GCE reports it
 * (IP_IN_USE_BY_ANOTHER_RESOURCE, HTTP 409); the other refusals are HTTP errors.
 */
function insertAddress(face: ComputeFace, ctx: RouteContext): JsonObject {
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
  props.project = param(ctx, "project");
  props.region = param(ctx, "scope");
  const key = face.state.keyOf("addresses", props);
  try {
    const created = face.state.create("addresses", props);
    return face.operations.operation(key, created.properties.id, "insert");
  } catch (e) {
    if (e instanceof GceError && e.reason === "IP_IN_USE_BY_ANOTHER_RESOURCE") {
      return face.operations.operation(key, undefined, "insert", e);
    }
    throw e;
  }
}

/** The `networkEndpoints` of an attach or detach body: `[{ instance?, ipAddress?, port? }]`. */
function endpointRequests(body: JsonObject | undefined): EndpointRequest[] {
  const list = body?.networkEndpoints;
  if (!Array.isArray(list)) {
    throw badRequest("Invalid value for field 'networkEndpoints': the request needs a list of network endpoints.");
  }
  return list.map((entry, i) => {
    if (
      !isJsonObject(entry) ||
      (entry.instance !== undefined && typeof entry.instance !== "string") ||
      (entry.ipAddress !== undefined && typeof entry.ipAddress !== "string")
    ) {
      throw badRequest(
        `Invalid value for field 'networkEndpoints[${i}]': a network endpoint is { instance?: string, ipAddress?: string, port?: number }.`,
      );
    }
    return {
      ...(typeof entry.instance === "string" ? { instance: entry.instance } : {}),
      ...(typeof entry.ipAddress === "string" ? { ipAddress: entry.ipAddress } : {}),
      ...(entry.port === undefined ? {} : { port: entry.port }),
    };
  });
}

/**
 * networkEndpointGroups.attachNetworkEndpoints, .detachNetworkEndpoints (POST
 * …/zones/{zone}/networkEndpointGroups/{name}/{attach,detach}NetworkEndpoints, body
 * `{ networkEndpoints: [{ instance, ipAddress }] }`) and .listNetworkEndpoints (POST …/listNetworkEndpoints:
 * paginated items `{ networkEndpoint: { instance, ipAddress } }`, the instance by its name as GCE
 * returns it: kubernetes/ingress-gce pkg/neg/syncers/utils.go retrieveExistingZoneNetworkEndpointMap
 * takes `NetworkEndpoint.Instance` for the node's name).
 */
function defineEndpointRoutes(face: ComputeFace, base: string): void {
  const st = face.state;
  const keyOf = (ctx: RouteContext): ResourceKey => keyOfRoute("networkEndpointGroups", ctx);
  for (const attach of [true, false]) {
    const action = `${attach ? "attach" : "detach"}NetworkEndpoints`;
    face.router.aliased(
      "POST",
      `${base}/zones/{scope}/networkEndpointGroups/{name}/${action}`,
      `${base}/zones/{zone}/networkEndpointGroups/{name}/${action}`,
      (ctx) =>
        face.operations.once(ctx, () => {
          const key = keyOf(ctx);
          const requests = endpointRequests(isJsonObject(ctx.body) ? ctx.body : undefined);
          const changed = st.changeEndpoints(key, requests, attach);
          return face.operations.operation(key, changed.properties.id, action);
        }),
    );
  }
  face.router.aliased(
    "POST",
    `${base}/zones/{scope}/networkEndpointGroups/{name}/listNetworkEndpoints`,
    `${base}/zones/{zone}/networkEndpointGroups/{name}/listNetworkEndpoints`,
    (ctx) => {
      const key = keyOf(ctx);
      st.checkFault("networkEndpointGroups", key.name, "get");
      const p = page(st.endpointsOf(key), ctx.query);
      const body: JsonObject = { kind: "compute#networkEndpointGroupsListNetworkEndpoints" };
      if (p.items.length > 0) {
        body.items = p.items.map((e) => ({
          networkEndpoint: { instance: e.instance.slice(e.instance.lastIndexOf("/") + 1), ipAddress: e.ipAddress },
        }));
      }
      if (p.nextPageToken !== undefined) {
        body.nextPageToken = p.nextPageToken;
      }
      return ok(body);
    },
  );
  // networkEndpointGroups.aggregatedList: every zone of the project, as instances.aggregatedList.
  face.router.route("GET", `${base}/aggregated/networkEndpointGroups`, true, (ctx) => {
    const project = param(ctx, "project");
    st.checkFault("networkEndpointGroups", undefined, "get");
    const view = (r: StoredResource): JsonObject => toRest(st, r);
    const all = applyFilter(st.list({ kind: "networkEndpointGroups", project }), ctx.query, view);
    const p = page(all, ctx.query);
    const items: JsonObject = {};
    for (const zone of [...new Set([...st.zones, ...all.map((r) => r.scope)])].sort()) {
      const scope = `zones/${zone}`;
      const inZone = p.items.filter((r) => r.scope === zone);
      items[scope] =
        inZone.length > 0
          ? { networkEndpointGroups: inZone.map(view) }
          : {
              warning: {
                code: "NO_RESULTS_ON_PAGE",
                message: `There are no results for scope '${scope}' on this page.`,
                data: [{ key: "scope", value: scope }],
              },
            };
    }
    const body: JsonObject = {
      kind: "compute#networkEndpointGroupAggregatedList",
      id: `projects/${project}/aggregated/networkEndpointGroups`,
      items,
      selfLink: `${st.endpoint}/compute/v1/projects/${project}/aggregated/networkEndpointGroups`,
    };
    if (p.nextPageToken !== undefined) {
      body.nextPageToken = p.nextPageToken;
    }
    return ok(body);
  });
}

export function defineComputeRoutes(face: ComputeFace): void {
  const base = "/compute/v1/projects/{project}";
  const st = face.state;

  face.router.route("GET", `${base}/zones/{zone}/instances/{name}`, true, (ctx) => {
    const key: ResourceKey = {
      kind: "instances",
      project: param(ctx, "project"),
      scope: param(ctx, "zone"),
      name: param(ctx, "name"),
    };
    st.checkFault("instances", key.name, "get");
    return ok(toRest(face.state, st.get(key)));
  });
  face.router.route("GET", `${base}/zones/{zone}/instances`, true, (ctx) => {
    const project = param(ctx, "project");
    const zone = param(ctx, "zone");
    st.checkFault("instances", undefined, "get");
    const all = applyFilter(st.list({ kind: "instances", project, scope: zone }), ctx.query, (r) =>
      toRest(face.state, r),
    );
    const p = page(all, ctx.query);
    const body: JsonObject = {
      kind: "compute#instanceList",
      id: `projects/${project}/zones/${zone}/instances`,
    };
    if (p.items.length > 0) {
      body.items = p.items.map((r) => toRest(face.state, r));
    }
    body.selfLink = `${st.scopeLink(project, "zone", zone)}/instances`;
    if (p.nextPageToken !== undefined) {
      body.nextPageToken = p.nextPageToken;
    }
    return ok(body);
  });
  face.router.route("GET", `${base}/aggregated/instances`, true, (ctx) => {
    const project = param(ctx, "project");
    st.checkFault("instances", undefined, "get");
    const all = applyFilter(st.list({ kind: "instances", project }), ctx.query, (r) => toRest(face.state, r));
    const p = page(all, ctx.query);
    const zones = [...new Set([...st.zones, ...all.map((r) => r.scope)])].sort();
    const items: JsonObject = {};
    for (const zone of zones) {
      const scope = `zones/${zone}`;
      const inZone = p.items.filter((r) => r.scope === zone);
      items[scope] =
        inZone.length > 0
          ? { instances: inZone.map((r) => toRest(face.state, r)) }
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

  // Region resource: `quotas[]` are the region's quotas with their limit and usage (limits.ts quotaReport).
  const regionBody = (project: string, region: string): JsonObject => ({
    kind: "compute#region",
    name: region,
    description: region,
    status: "UP",
    zones: st.zones.filter((z) => regionOfZone(z) === region).map((z) => st.scopeLink(project, "zone", z)),
    quotas: face.limits.quotaReport(project, region, st.list({ project })),
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

  face.router.route("GET", `${base}/regions/{region}`, true, (ctx) => {
    const project = param(ctx, "project");
    const region = param(ctx, "region");
    if (!regions().includes(region)) {
      throw notFound(`projects/${project}/regions/${region}`);
    }
    return ok(regionBody(project, region));
  });
  face.router.route("GET", `${base}/regions`, true, (ctx) => {
    const project = param(ctx, "project");
    return ok({
      kind: "compute#regionList",
      id: `projects/${project}/regions`,
      items: applyFilter(regions(), ctx.query, (r) => regionBody(project, r)).map((r) => regionBody(project, r)),
      selfLink: `${st.endpoint}/compute/v1/projects/${project}/regions`,
    });
  });
  // projects.get (GET /compute/v1/projects/{project}): the Project resource, whose `quotas[]` are
  // the project-wide quotas ("globally" in GCE's refusal) with their limit and usage.
  face.router.route("GET", base, true, (ctx) => {
    const project = param(ctx, "project");
    return ok({
      kind: "compute#project",
      name: project,
      quotas: face.limits.quotaReport(project, undefined, st.list({ project })),
      selfLink: `${st.endpoint}/compute/v1/projects/${project}`,
    });
  });
  face.router.route("GET", `${base}/zones/{zone}`, true, (ctx) => {
    const project = param(ctx, "project");
    const zone = param(ctx, "zone");
    if (!st.zones.includes(zone)) {
      throw notFound(`projects/${project}/zones/${zone}`);
    }
    return ok(zoneBody(project, zone));
  });
  face.router.route("GET", `${base}/zones`, true, (ctx) => {
    const project = param(ctx, "project");
    return ok({
      kind: "compute#zoneList",
      id: `projects/${project}/zones`,
      items: applyFilter([...st.zones].sort(), ctx.query, (z) => zoneBody(project, z)).map((z) => zoneBody(project, z)),
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
    ["networkEndpointGroups", "zones/{scope}", "networkEndpointGroups"],
    ["httpHealthChecks", "global", "httpHealthChecks"],
    ["firewalls", "global", "firewalls"],
    ["routes", "global", "routes"],
  ];
  for (const [kind, scopeSeg, collection] of collections) {
    const spec = specOf(kind);
    const scopeOf = (ctx: RouteContext): string => (spec.scope === "global" ? "global" : param(ctx, "scope"));
    const displayScope = scopeSeg.replace("{scope}", spec.scope === "zone" ? "{zone}" : "{region}");
    const listPattern = `${base}/${displayScope}/${collection}`;
    const listRoute = (ctx: RouteContext): Reply => {
      const project = param(ctx, "project");
      const scope = scopeOf(ctx);
      st.checkFault(kind, undefined, "get");
      const all = applyFilter(st.list({ kind, project, scope }), ctx.query, (r) => toRest(face.state, r));
      const p = page(all, ctx.query);
      const prefix = spec.scope === "global" ? "global" : `${spec.scope}s/${scope}`;
      const body: JsonObject = {
        kind: `${spec.restKind}List`,
        id: `projects/${project}/${prefix}/${collection}`,
      };
      if (p.items.length > 0) {
        body.items = p.items.map((r) => toRest(face.state, r));
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
        project: param(ctx, "project"),
        scope: scopeOf(ctx),
        name: param(ctx, "name"),
      };
      st.checkFault(kind, key.name, "get");
      return ok(toRest(face.state, st.get(key)));
    };
    // {collection}.delete (e.g. forwardingRules.delete, DELETE .../regions/{region}/forwardingRules/{name}):
    // 404 when absent, GCE's 400 resourceInUseByAnotherResource while another resource uses it
    // (GceState.delete), else an Operation. A repeated `requestId` gets the first request's
    // operation back without acting again ("Specify a unique request ID so that if you must
    // retry your request, the server will know to ignore the request if it has already been
    // completed", the requestId query parameter of every Compute delete method).
    const deleteRoute = (ctx: RouteContext): Reply =>
      face.operations.once(ctx, () => {
        const key: ResourceKey = {
          kind,
          project: param(ctx, "project"),
          scope: scopeOf(ctx),
          name: param(ctx, "name"),
        };
        const targetId = st.get(key).properties.id;
        st.delete(key);
        return face.operations.operation(key, targetId, "delete");
      });
    face.router.aliased("GET", `${base}/${scopeSeg}/${collection}/{name}`, `${listPattern}/{name}`, getRoute);
    face.router.aliased("DELETE", `${base}/${scopeSeg}/${collection}/{name}`, `${listPattern}/{name}`, deleteRoute);
    face.router.aliased("GET", `${base}/${scopeSeg}/${collection}`, listPattern, listRoute);
  }

  face.router.aliased("POST", `${base}/regions/{scope}/addresses`, `${base}/regions/{region}/addresses`, (ctx) =>
    face.operations.once(ctx, () => insertAddress(face, ctx)),
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
    face.router.aliased("POST", `${base}/${scopeSeg}/${collection}`, display, (ctx) =>
      face.operations.once(ctx, () => insertResource(face, kind, ctx)),
    );
    if (["healthChecks", "globalHealthChecks", "httpHealthChecks", "backendServices", "firewalls"].includes(kind)) {
      face.router.aliased("PUT", `${base}/${scopeSeg}/${collection}/{name}`, `${display}/{name}`, (ctx) =>
        face.operations.once(ctx, () => updateResource(face, kind, ctx, false)),
      );
    }
    if (kind === "firewalls") {
      face.router.aliased("PATCH", `${base}/${scopeSeg}/${collection}/{name}`, `${display}/{name}`, (ctx) =>
        face.operations.once(ctx, () => updateResource(face, kind, ctx, true)),
      );
    }
    if (kind === "targetPools" || kind === "instanceGroups") {
      const verb = kind === "targetPools" ? "Instance" : "Instances";
      for (const add of [true, false]) {
        const action = `${add ? "add" : "remove"}${verb}`;
        face.router.aliased(
          "POST",
          `${base}/${scopeSeg}/${collection}/{name}/${action}`,
          `${display}/{name}/${action}`,
          (ctx) => face.operations.once(ctx, () => changeMembers(face, kind, ctx, add)),
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
      const where = scopeSeg === "global" ? "global" : `${scopeSeg.split("/")[0]}/${param(ctx, "scope")}`;
      const path = `projects/${param(ctx, "project")}/${where}/operations/${param(ctx, "operation")}`;
      const op = face.operations.find(path);
      if (op === undefined) {
        throw notFound(path);
      }
      return ok(face.limits.operationView(op));
    };
    face.router.aliased(
      "GET",
      `${base}/${scopeSeg}/operations/{operation}`,
      `${base}/${display}/operations/{operation}`,
      find,
    );
    face.router.aliased(
      "POST",
      `${base}/${scopeSeg}/operations/{operation}/wait`,
      `${base}/${display}/operations/{operation}/wait`,
      find,
    );
  }
  defineEndpointRoutes(face, base);
  face.router.aliased(
    "POST",
    `${base}/zones/{scope}/instanceGroups/{name}/listInstances`,
    `${base}/zones/{zone}/instanceGroups/{name}/listInstances`,
    (ctx) => {
      const key: ResourceKey = {
        kind: "instanceGroups",
        project: param(ctx, "project"),
        scope: param(ctx, "scope"),
        name: param(ctx, "name"),
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
