// The typed surface of dccm's Compute client: the calls it makes, the values they return, and the
// interfaces the node controller (ComputeApi) and the leak detector (ComputeResourceApi) depend on,
// so tests and benchmarks can substitute them.

export const DEFAULT_COMPUTE_ENDPOINT = "https://compute.googleapis.com/compute/v1/";
export const COMPUTE_READONLY_SCOPE = "https://www.googleapis.com/auth/compute.readonly";
/** Needed to delete (`dccm gc`); the daemon only ever reads with its own client. */
export const COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute";

/**
 * The collections dccm manages, by the prefix of their Compute API methods; `healthChecks` are the
 * global ones the stock CCM's internal load balancers use (read and deleted when adopting them).
 */
export type CollectionCall =
  | "addresses"
  | "forwardingRules"
  | "regionBackendServices"
  | "targetPools"
  | "regionHealthChecks"
  | "healthChecks"
  | "httpHealthChecks"
  | "instanceGroups"
  | "networkEndpointGroups"
  | "firewalls"
  | "routes";

export type ComputeCall =
  | "instances.get"
  | "instances.list"
  | "instances.aggregatedList"
  | "regions.get"
  | "projects.get"
  | `${CollectionCall}.${"list" | "get" | "delete"}`
  | "addresses.insert"
  | "instanceGroups.listInstances"
  | "networkEndpointGroups.listNetworkEndpoints"
  | "networkEndpointGroups.attachNetworkEndpoints"
  | "networkEndpointGroups.detachNetworkEndpoints"
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
  /** Interface name (`nic0` is the default interface; older bodies may lack it). */
  readonly name?: string;
  readonly networkIP?: string;
  /** The subnetwork's name (the API returns a URL; we keep its last segment). */
  readonly subnetwork?: string;
  readonly ipv6Address?: string;
  readonly stackType?: string;
  readonly accessConfigs: readonly { readonly natIP?: string }[];
  readonly ipv6AccessConfigs: readonly { readonly externalIpv6?: string }[];
  /** Alias IP ranges (VPC-native pods), in the API's order; absent when the interface has none. */
  readonly aliasIpRanges?: readonly AliasIpRange[];
}

export interface AliasIpRange {
  /** A CIDR such as `10.4.1.0/24` (GCE always reports the allocated range as a CIDR). */
  readonly ipCidrRange: string;
  /** Name of the subnetwork secondary range; absent when taken from the primary range. */
  readonly subnetworkRangeName?: string;
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
  /** The member links of an unmanaged instance group. */
  listGroupInstances(project: string, zone: string, group: string, opts?: CallOptions): Promise<string[]>;
  /** The resource, or undefined when a 404 names it (it does not exist). */
  getResource(call: `${CollectionCall}.get`, resourcePath: string, opts?: CallOptions): Promise<unknown>;
  /**
   * Deletes the resource and waits for its operation: `absent` when a 404 names it. GCE's refusals
   * (`resourceInUseByAnotherResource`, synchronous or in the operation) are ComputeErrors.
   */
  deleteResource(
    call: `${CollectionCall}.delete`,
    resourcePath: string,
    opts?: CallOptions,
  ): Promise<"deleted" | "absent">;
}

/** The fields of a Compute `Address` that `insertAddress` sends (addresses resource reference). */
export interface AddressInsert {
  readonly name: string;
  /** An IP literal: the ephemeral IP of a forwarding rule of the project and region is promoted. */
  readonly address?: string;
  readonly addressType?: "EXTERNAL" | "INTERNAL";
  readonly networkTier?: "PREMIUM" | "STANDARD";
  /** Self link or `projects/…/regions/…/subnetworks/…` (internal addresses). */
  readonly subnetwork?: string;
  readonly purpose?: string;
  readonly description?: string;
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
      reason?: string | undefined;
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
