// A small typed client for the parts of the Compute Engine v1 REST API dccm calls itself: instances
// get / list / aggregatedList and regions get (the node controller), and list / get / delete of the
// collections dccm manages (the leak detector and `dccm gc`, leaks/). It speaks plain HTTP through
// fetch (transport.ts) so the same code runs against compute.googleapis.com and against the GCE
// emulator's HTTP face (`computeEndpoint`), and it exposes exactly the outcomes callers must tell
// apart: an instance that exists, an instance that is definitively gone (404 naming that
// instance), and everything else (a ComputeError saying which call on which resource failed, and how).

import { randomUUID } from "node:crypto";

import type { Registry } from "prom-client";

import {
  listItems,
  nextPageToken,
  operationFailure,
  operationPath,
  operationStatus,
  parseAggregatedInstances,
  parseInstance,
  parseInstanceList,
  parseRegion,
} from "./parse";
import type { NegEndpoint } from "../model";
import { parseQuotas, type QuotaApi, type QuotaReading } from "./quotas";
import { bodyOf, ComputeTransport, type Request, type TransportOptions } from "./transport";
import {
  type AddressInsert,
  type CallOptions,
  type CollectionCall,
  type ComputeApi,
  type ComputeCall,
  ComputeError,
  type ComputeResourceApi,
  DEFAULT_COMPUTE_ENDPOINT,
  type GetInstanceResult,
  type Instance,
  type Region,
} from "./types";

export interface ComputeClientOptions extends Omit<TransportOptions, "endpoint"> {
  /** Base URL ending in `/compute/v1/`. Default compute.googleapis.com. */
  readonly endpoint?: string;
}

const PAGE_SIZE = 500;
// A runaway nextPageToken loop (a server bug) must not pin a worker forever.
const MAX_PAGES = 1000;
// operations.wait returns after about 2 minutes even when the operation still runs; deletes of the
// resources dccm manages take seconds, so this many waits means something is stuck.
const MAX_OPERATION_WAITS = 15;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

export class ComputeClient implements ComputeApi, ComputeResourceApi, QuotaApi {
  private readonly transport: ComputeTransport;

  constructor(opts: ComputeClientOptions = {}) {
    this.transport = new ComputeTransport({ ...opts, endpoint: opts.endpoint ?? DEFAULT_COMPUTE_ENDPOINT });
  }

  async getInstance(project: string, zone: string, name: string, opts?: CallOptions): Promise<GetInstanceResult> {
    const resource = `projects/${project}/zones/${zone}/instances/${name}`;
    const res = await this.transport.send({ call: "instances.get", method: "GET", resource }, opts);
    if (res.kind === "notFound") {
      return { kind: "notFound", project, zone, name };
    }
    return { kind: "found", instance: parseInstance(res.body, { project, zone }, { call: "instances.get", resource }) };
  }

  async listInstances(project: string, zone: string, opts?: CallOptions): Promise<Instance[]> {
    const origin = { call: "instances.list", resource: `projects/${project}/zones/${zone}/instances` } as const;
    const out: Instance[] = [];
    await this.paginate(origin, {}, opts, (body) => out.push(...parseInstanceList(body, project, zone, origin)));
    return out;
  }

  /**
   * All instances of the project across zones (one call per page of 500), optionally narrowed by
   * a Compute `filter` expression such as `name = "node-1"`.
   */
  async aggregatedListInstances(project: string, filter?: string, opts?: CallOptions): Promise<Instance[]> {
    const origin = { call: "instances.aggregatedList", resource: `projects/${project}/aggregated/instances` } as const;
    const out: Instance[] = [];
    await this.paginate(origin, filter === undefined ? {} : { filter }, opts, (body) =>
      out.push(...parseAggregatedInstances(body, project, origin)),
    );
    return out;
  }

  async getRegion(project: string, region: string, opts?: CallOptions): Promise<Region> {
    const res = await this.transport.send(
      { call: "regions.get", method: "GET", resource: `projects/${project}/regions/${region}` },
      opts,
    );
    return parseRegion(bodyOf(res), region);
  }

  /** regions.get's `quotas`: the region's quotas with their limit and usage (gce/quotas.ts). */
  async getRegionQuotas(project: string, region: string, opts?: CallOptions): Promise<QuotaReading[]> {
    const res = await this.transport.send(
      { call: "regions.get", method: "GET", resource: `projects/${project}/regions/${region}` },
      opts,
    );
    return parseQuotas(bodyOf(res));
  }

  /** projects.get's `quotas`: the project-wide quotas with their limit and usage (gce/quotas.ts). */
  async getProjectQuotas(project: string, opts?: CallOptions): Promise<QuotaReading[]> {
    const res = await this.transport.send(
      { call: "projects.get", method: "GET", resource: `projects/${project}` },
      opts,
    );
    return parseQuotas(bodyOf(res));
  }

  async listCollection(call: `${CollectionCall}.list`, collectionPath: string, opts?: CallOptions): Promise<unknown[]> {
    const out: unknown[] = [];
    await this.paginate({ call, resource: collectionPath }, {}, opts, (body) => out.push(...listItems(body)));
    return out;
  }

  /**
   * The links of an unmanaged instance group's members (instanceGroups.listInstances: a POST,
   * paginated like a list, whose items are `{ instance, status }`).
   */
  async listGroupInstances(project: string, zone: string, group: string, opts?: CallOptions): Promise<string[]> {
    const out: string[] = [];
    const origin = {
      call: "instanceGroups.listInstances",
      resource: `projects/${project}/zones/${zone}/instanceGroups/${group}/listInstances`,
    } as const;
    const onPage = (body: unknown): void => {
      for (const item of listItems(body)) {
        const instance = typeof item === "object" && item !== null && "instance" in item ? item.instance : undefined;
        if (typeof instance === "string") out.push(instance);
      }
    };
    await this.paginate(origin, {}, opts, onPage, "POST");
    return out;
  }

  /**
   * A zonal NEG's endpoints (networkEndpointGroups.listNetworkEndpoints: a POST, paginated, items
   * `{ networkEndpoint: { instance, ipAddress } }` with the instance by its name); undefined when
   * GCE answers that the NEG does not exist.
   */
  async listNetworkEndpoints(
    project: string,
    zone: string,
    group: string,
    opts?: CallOptions,
  ): Promise<NegEndpoint[] | undefined> {
    const out: NegEndpoint[] = [];
    const origin = {
      call: "networkEndpointGroups.listNetworkEndpoints",
      resource: `projects/${project}/zones/${zone}/networkEndpointGroups/${group}/listNetworkEndpoints`,
    } as const;
    const onPage = (body: unknown): void => {
      for (const item of listItems(body)) {
        const endpoint = isObject(item) ? item.networkEndpoint : undefined;
        if (!isObject(endpoint)) continue;
        const { instance, ipAddress } = endpoint;
        if (typeof instance === "string" && typeof ipAddress === "string")
          out.push({ instance: instance.slice(instance.lastIndexOf("/") + 1), ipAddress });
      }
    };
    try {
      await this.paginate(origin, {}, opts, onPage, "POST");
    } catch (error) {
      if (error instanceof ComputeError && error.status === 404) return undefined;
      throw error;
    }
    return out;
  }

  /** Attaches (or detaches) endpoints to a zonal NEG and waits for the operation: GCE takes at most 500 per call (MAX_ENDPOINTS_PER_CALL). */
  async changeNetworkEndpoints(
    change: "attach" | "detach",
    project: string,
    zone: string,
    group: string,
    endpoints: readonly NegEndpoint[],
    opts?: CallOptions,
  ): Promise<void> {
    const call = `networkEndpointGroups.${change}NetworkEndpoints` as const;
    const negPath = `projects/${project}/zones/${zone}/networkEndpointGroups/${group}`;
    // One request ID for every retry: GCE answers a repeat with the first request's operation.
    const res = await this.transport.send(
      {
        call,
        method: "POST",
        resource: `${negPath}/${change}NetworkEndpoints`,
        query: { requestId: randomUUID() },
        body: { networkEndpoints: endpoints.map(({ instance, ipAddress }) => ({ instance, ipAddress })) },
      },
      opts,
    );
    await this.waitOperation(call, negPath, bodyOf(res), opts);
  }

  async getResource(call: `${CollectionCall}.get`, resourcePath: string, opts?: CallOptions): Promise<unknown> {
    const res = await this.transport.send({ call, method: "GET", resource: resourcePath }, opts);
    return res.kind === "notFound" ? undefined : res.body;
  }

  async deleteResource(
    call: `${CollectionCall}.delete`,
    resourcePath: string,
    opts?: CallOptions,
  ): Promise<"deleted" | "absent"> {
    // One request ID for every retry of this delete: GCE answers a repeat with the first
    // request's operation instead of acting twice (forwardingRules.delete, query parameter requestId).
    const res = await this.transport.send(
      { call, method: "DELETE", resource: resourcePath, query: { requestId: randomUUID() } },
      opts,
    );
    if (res.kind === "notFound") {
      return "absent";
    }
    await this.waitOperation(call, resourcePath, res.body, opts);
    return "deleted";
  }

  /**
   * Reserves a regional address (addresses.insert) and waits for its operation: `created`, or
   * `exists` when GCE answers 409 alreadyExists for the name (the caller decides whether the
   * existing address holds the IP it wants). An `address` literal that is the ephemeral IP of a
   * forwarding rule of the project and region promotes that IP to static; GCE's other refusals
   * (an IP another resource holds: IP_IN_USE_BY_ANOTHER_RESOURCE in the operation) are ComputeErrors.
   */
  async insertAddress(
    project: string,
    region: string,
    address: AddressInsert,
    opts?: CallOptions,
  ): Promise<"created" | "exists"> {
    const resource = `projects/${project}/regions/${region}/addresses`;
    // One request ID for every retry: GCE answers a repeat with the first request's operation
    // (addresses.insert, query parameter requestId), so a retried insert never reserves twice.
    const request = {
      call: "addresses.insert",
      method: "POST",
      resource,
      query: { requestId: randomUUID() },
      body: address,
    } as const;
    const res = await this.transport.send(request, opts).catch((e: unknown) => {
      if (e instanceof ComputeError && e.status === 409 && e.reason === "alreadyExists") {
        return "exists" as const;
      }
      throw e;
    });
    if (res === "exists") {
      return "exists";
    }
    await this.waitOperation("addresses.insert", `${resource}/${address.name}`, bodyOf(res), opts);
    return "created";
  }

  /**
   * Compute mutations answer with an Operation (status PENDING, RUNNING or DONE); it is done when
   * DONE, and failed when DONE with `error.errors` (Compute API reference, Operation resource).
   * Until DONE, `<operation>/wait` is called: it returns when the operation is done or after
   * about two minutes (regionOperations.wait, zoneOperations.wait, globalOperations.wait).
   */
  private async waitOperation(
    call: ComputeCall,
    resource: string,
    first: unknown,
    opts: CallOptions | undefined,
  ): Promise<void> {
    let op = first;
    for (let waits = 0; ; waits++) {
      const status = operationStatus(op);
      if (status === "DONE") {
        const failure = operationFailure(op);
        if (failure !== undefined) {
          throw new ComputeError({
            call,
            resource,
            status: failure.status,
            reason: failure.reason,
            detail: failure.message,
            attempts: 1,
          });
        }
        return;
      }
      const path = operationPath(op);
      if (path === undefined) {
        throw new ComputeError({
          call,
          resource,
          status: 200,
          reason: "badResponse",
          detail: "the response is not an Operation with a selfLink",
          attempts: 1,
        });
      }
      if (waits >= MAX_OPERATION_WAITS) {
        throw new ComputeError({
          call,
          resource,
          status: undefined,
          reason: "timeout",
          detail: `operation ${path.path} still ${status ?? "unknown"} after ${waits} waits`,
          attempts: 1,
        });
      }
      op = bodyOf(await this.transport.send({ call: path.call, method: "POST", resource: `${path.path}/wait` }, opts));
    }
  }

  private async paginate(
    origin: Pick<Request, "call" | "resource">,
    query: Record<string, string>,
    opts: CallOptions | undefined,
    onPage: (body: unknown) => void,
    method: "GET" | "POST" = "GET",
  ): Promise<void> {
    let pageToken: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const q: Record<string, string> = {
        ...query,
        maxResults: String(PAGE_SIZE),
        ...(pageToken === undefined ? {} : { pageToken }),
      };
      const body = bodyOf(await this.transport.send({ ...origin, method, query: q }, opts));
      onPage(body);
      pageToken = nextPageToken(body);
      if (pageToken === undefined) {
        return;
      }
    }
    throw new ComputeError({
      ...origin,
      status: undefined,
      reason: "pagination",
      detail: `more than ${MAX_PAGES} pages`,
      attempts: MAX_PAGES,
    });
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
