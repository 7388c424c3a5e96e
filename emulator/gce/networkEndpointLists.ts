// The provider face of `gcp:compute/networkEndpointList:NetworkEndpointList` (terraform-provider-google
// google_compute_network_endpoints): every endpoint of one network endpoint group, attached and
// detached in batches. It is no GCE resource of its own: it lives in its NEG's endpoints
// (state.ts changeEndpoints), so the REST face and the provider face see the same endpoints.

import { GceError } from "./errors";
import { containsUnknown, isJsonObject, type Json, type JsonObject } from "./json";
import type { EndpointRequest, StoredEndpoint } from "./rules";
import type { GceState } from "./state";
import type { ResourceKey } from "./store";
import type { CheckFailure } from "./validation";

export const NETWORK_ENDPOINT_LIST_TOKEN = "gcp:compute/networkEndpointList:NetworkEndpointList";

/**
 * Endpoints per attach or detach call: 500, the batch GKE's NEG controller sends
 * (kubernetes/ingress-gce pkg/neg/syncers/transaction.go MAX_NETWORK_ENDPOINTS_PER_BATCH = 500;
 * the terraform provider's google_compute_network_endpoints pages its changes likewise).
 */
export const ENDPOINTS_PER_CALL = 500;

const INPUTS = ["deletionPolicy", "networkEndpointGroup", "networkEndpoints", "project", "zone"];
/** resource_compute_network_endpoints.go schema: network_endpoint_group, project and zone are ForceNew. */
const FORCE_NEW = ["networkEndpointGroup", "project", "zone"];

/** One endpoint as the provider's state holds it: the instance's name, the IP, no port. */
interface Endpoint {
  readonly instance: string;
  readonly ipAddress: string;
}

function lastSegment(s: string): string {
  return s.slice(s.lastIndexOf("/") + 1);
}

function endpointKey(e: Endpoint): string {
  return `${e.instance}/${e.ipAddress}`;
}

/** The endpoints of an input list, instances by name (the provider compares names: instance takes a name). */
function endpointsOf(v: Json | undefined): Endpoint[] {
  if (!Array.isArray(v)) {
    return [];
  }
  return v.flatMap((e) =>
    isJsonObject(e) && typeof e.instance === "string" && typeof e.ipAddress === "string"
      ? [{ instance: lastSegment(e.instance), ipAddress: e.ipAddress }]
      : [],
  );
}

function asJson(list: readonly Endpoint[]): Json[] {
  return list.map((e) => ({ instance: e.instance, ipAddress: e.ipAddress }));
}

function chunks<T>(list: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += ENDPOINTS_PER_CALL) {
    out.push(list.slice(i, i + ENDPOINTS_PER_CALL));
  }
  return out;
}

/** The provider operations of NetworkEndpointList on the emulator's state. */
export class NetworkEndpointLists {
  constructor(private readonly state: GceState) {}

  check(
    news: JsonObject,
    config: { project?: string; zone?: string },
  ): { inputs: JsonObject; failures: CheckFailure[] } {
    const inputs: JsonObject = { ...news };
    const failures: CheckFailure[] = [];
    inputs.project ??= config.project ?? this.state.project;
    inputs.zone ??= config.zone ?? this.state.zones[0] ?? `${this.state.region}-a`;
    for (const k of Object.keys(inputs)) {
      if (!INPUTS.includes(k)) {
        failures.push({ property: k, reason: `${k} is not a property of NetworkEndpointList` });
      }
    }
    if (inputs.networkEndpointGroup === undefined || inputs.networkEndpointGroup === null) {
      failures.push({ property: "networkEndpointGroup", reason: `Missing required argument: "networkEndpointGroup"` });
    }
    const list = inputs.networkEndpoints;
    if (Array.isArray(list) && !containsUnknown(list)) {
      list.forEach((e, i) => {
        if (!isJsonObject(e) || typeof e.ipAddress !== "string") {
          failures.push({ property: "networkEndpoints", reason: `networkEndpoints[${i}].ipAddress is required` });
        }
      });
    }
    return { inputs, failures };
  }

  diff(olds: JsonObject, news: JsonObject): { changes: boolean; diffs: string[]; replaces: string[] } {
    const diffs: string[] = [];
    for (const field of FORCE_NEW) {
      const nv = news[field];
      if (nv === undefined || nv === null) {
        continue;
      }
      const ov = olds[field];
      const same =
        typeof nv === "string" && typeof ov === "string" && !containsUnknown(nv) && lastSegment(nv) === lastSegment(ov);
      if (!same) {
        diffs.push(field);
      }
    }
    const nv = news.networkEndpoints;
    const sameEndpoints =
      !containsUnknown(nv ?? null) &&
      JSON.stringify(endpointsOf(nv).map(endpointKey).sort()) ===
        JSON.stringify(endpointsOf(olds.networkEndpoints).map(endpointKey).sort());
    if (!sameEndpoints) {
      diffs.push("networkEndpoints");
    }
    return { changes: diffs.length > 0, diffs, replaces: diffs.filter((f) => FORCE_NEW.includes(f)) };
  }

  /** Attaches every endpoint, in calls of ENDPOINTS_PER_CALL. ID `{{project}}/{{zone}}/{{network_endpoint_group}}` as the provider's. */
  create(inputs: JsonObject): { id: string; outputs: JsonObject } {
    const key = this.negKey(inputs);
    this.attach(key, endpointsOf(inputs.networkEndpoints));
    return { id: `${key.project}/${key.scope}/${key.name}`, outputs: this.outputs(key, inputs) };
  }

  /** The NEG's endpoints (listNetworkEndpoints); a NEG that is gone is a list that is gone. */
  read(id: string, props: JsonObject): { id: string | null; outputs: JsonObject; inputs: JsonObject } {
    const key = this.keyForId(id, props);
    if (this.state.find(key) === undefined) {
      return { id: null, outputs: {}, inputs: {} };
    }
    const outputs = this.outputs(key, props);
    return { id: `${key.project}/${key.scope}/${key.name}`, outputs, inputs: outputs };
  }

  /** Detaches the endpoints no longer listed, then attaches the new ones, each in calls of ENDPOINTS_PER_CALL. */
  update(id: string, olds: JsonObject, news: JsonObject): { outputs: JsonObject } {
    const key = this.keyForId(id, olds);
    const current = this.live(key);
    const wanted = endpointsOf(news.networkEndpoints);
    const wantedKeys = new Set(wanted.map(endpointKey));
    const currentKeys = new Set(current.map(endpointKey));
    this.detach(
      key,
      current.filter((e) => !wantedKeys.has(endpointKey(e))),
    );
    this.attach(
      key,
      wanted.filter((e) => !currentKeys.has(endpointKey(e))),
    );
    return { outputs: this.outputs(key, news) };
  }

  /**
   * Detaches the endpoints the list holds. A NEG already gone is success: the provider treats the
   * 404 of its NEG as the list being gone (resource_compute_network_endpoints.go delete,
   * transport_tpg.HandleNotFoundError).
   */
  delete(id: string, outputs: JsonObject): void {
    const key = this.keyForId(id, outputs);
    if (this.state.find(key) === undefined) {
      return;
    }
    const held = new Set(endpointsOf(outputs.networkEndpoints).map(endpointKey));
    this.detach(
      key,
      this.live(key).filter((e) => held.has(endpointKey(e))),
    );
  }

  private live(key: ResourceKey): Endpoint[] {
    return this.state.endpointsOf(key).map((e: StoredEndpoint) => ({
      instance: lastSegment(e.instance),
      ipAddress: e.ipAddress,
    }));
  }

  private attach(key: ResourceKey, list: readonly Endpoint[]): void {
    for (const batch of chunks(list)) {
      this.state.changeEndpoints(
        key,
        batch.map((e): EndpointRequest => ({ ...e })),
        true,
      );
    }
  }

  private detach(key: ResourceKey, list: readonly Endpoint[]): void {
    for (const batch of chunks(list)) {
      this.state.changeEndpoints(
        key,
        batch.map((e): EndpointRequest => ({ ...e })),
        false,
      );
    }
  }

  private outputs(key: ResourceKey, inputs: JsonObject): JsonObject {
    const out: JsonObject = {
      networkEndpointGroup: typeof inputs.networkEndpointGroup === "string" ? inputs.networkEndpointGroup : key.name,
      networkEndpoints: asJson(this.live(key)),
      project: key.project,
      zone: key.scope,
    };
    if (typeof inputs.deletionPolicy === "string") {
      out.deletionPolicy = inputs.deletionPolicy;
    }
    return out;
  }

  /** The NEG an input names: a link or path, or a name in the list's project and zone. */
  private negKey(props: JsonObject): ResourceKey {
    const neg = props.networkEndpointGroup;
    if (typeof neg !== "string" || neg === "" || containsUnknown(neg)) {
      throw new GceError(
        400,
        "Invalid value for field 'networkEndpointGroup': a network endpoint group is required.",
        "invalid",
      );
    }
    const fromPath = this.state.keyOfPath(neg);
    if (fromPath !== undefined && fromPath.kind === "networkEndpointGroups") {
      return fromPath;
    }
    return this.state.keyOf("networkEndpointGroups", {
      name: lastSegment(neg),
      ...(typeof props.project === "string" ? { project: props.project } : {}),
      ...(typeof props.zone === "string" ? { zone: props.zone } : {}),
    });
  }

  private keyForId(id: string, props: JsonObject): ResourceKey {
    const m = /^([^/]+)\/([^/]+)\/([^/]+)$/.exec(id);
    if (m?.[1] !== undefined && m[2] !== undefined && m[3] !== undefined) {
      return { kind: "networkEndpointGroups", project: m[1], scope: m[2], name: m[3] };
    }
    return this.negKey(props);
  }
}
