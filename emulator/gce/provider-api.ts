// The Pulumi resource-provider operations (check, diff, create, read, update, delete) over the
// emulator's state, in plain JSON. The plugin process (provider.ts) translates gRPC to these and
// reaches them through POST /emulator/provider/<op>; unit tests may also call them directly.

import { randomBytes } from "node:crypto";

import { GceError } from "./errors";
import { containsUnknown, isJsonObject, type Json, type JsonObject, toJsonObject } from "./json";
import { defaultFor, type GceKind, isAllocated, type KindSpec, scopeProperty, specOfToken } from "./kinds";
import { NETWORK_ENDPOINT_LIST_TOKEN, NetworkEndpointLists } from "./networkEndpointLists";
import { expandShorthands, NEG_ENDPOINTS } from "./rules";
import type { GceState } from "./state";
import type { ResourceKey, StoredResource } from "./store";
import { type CheckFailure, validateInputs } from "./validation";

/** Provider configuration (`gcp:project`, `gcp:region`, `gcp:zone`), used for absent inputs. */
export interface ProviderConfig {
  readonly project?: string;
  readonly region?: string;
  readonly zone?: string;
}

export interface CheckRequest {
  readonly type: string;
  readonly urn: string;
  readonly olds: JsonObject;
  readonly news: JsonObject;
  readonly config?: ProviderConfig;
}
export interface CheckResponse {
  readonly inputs: JsonObject;
  readonly failures: CheckFailure[];
}

export interface DiffRequest {
  readonly type: string;
  readonly id: string;
  /** The old outputs (state). */
  readonly olds: JsonObject;
  /** The old inputs, when the engine sends them. */
  readonly oldInputs?: JsonObject;
  readonly news: JsonObject;
}
export interface DiffResponse {
  readonly changes: boolean;
  /** Changed properties, in the kind's property order. */
  readonly diffs: string[];
  /** Changed properties that force a replacement. */
  readonly replaces: string[];
  readonly deleteBeforeReplace: boolean;
}

export interface CreateRequest {
  readonly type: string;
  readonly inputs: JsonObject;
  readonly preview?: boolean;
}
export interface CreateResponse {
  readonly id: string;
  readonly outputs: JsonObject;
}

export interface ReadRequest {
  readonly type: string;
  readonly id: string;
  readonly state?: JsonObject;
  readonly inputs?: JsonObject;
}
export interface ReadResponse {
  /** null: the resource is gone. */
  readonly id: string | null;
  readonly outputs: JsonObject;
  readonly inputs: JsonObject;
}

export interface UpdateRequest {
  readonly type: string;
  readonly id: string;
  readonly olds: JsonObject;
  readonly news: JsonObject;
  readonly preview?: boolean;
}
export interface UpdateResponse {
  readonly outputs: JsonObject;
}

export interface DeleteRequest {
  readonly type: string;
  readonly id: string;
  readonly outputs?: JsonObject;
}

export type ProviderOperation = "check" | "diff" | "create" | "read" | "update" | "delete";
export const PROVIDER_OPERATIONS: readonly ProviderOperation[] = [
  "check",
  "diff",
  "create",
  "read",
  "update",
  "delete",
];

function specFor(type: string): KindSpec {
  const spec = specOfToken(type);
  if (spec === undefined) {
    throw new GceError(400, `the GCE emulator does not model resource type ${type}`, "invalid");
  }
  return spec;
}

/** name, project, region/zone (whichever applies), then the kind's inputs. */
function propertyOrder(spec: KindSpec): string[] {
  const scope = scopeProperty(spec);
  return ["name", "project", ...(scope === undefined ? [] : [scope]), ...spec.inputs];
}

/** Pulumi outputs of a stored resource: its properties without GCE's numeric `id`. */
export function outputsOf(r: StoredResource): JsonObject {
  const { id: _gceId, [NEG_ENDPOINTS]: _endpoints, ...rest } = r.properties;
  return rest;
}

function isBlank(v: Json | undefined): v is undefined | null {
  return v === undefined || v === null;
}

export class ProviderApi {
  /** NetworkEndpointList: no GCE kind of its own, the endpoints of its NEG (networkEndpointLists.ts). */
  private readonly endpointLists: NetworkEndpointLists;

  constructor(private readonly state: GceState) {
    this.endpointLists = new NetworkEndpointLists(state);
  }

  check(req: CheckRequest): CheckResponse {
    if (req.type === NETWORK_ENDPOINT_LIST_TOKEN) {
      return this.endpointLists.check(req.news, req.config ?? {});
    }
    const spec = specFor(req.type);
    const inputs: JsonObject = { ...req.news };
    const failures: CheckFailure[] = [];
    if (isBlank(inputs.name)) {
      const oldName = req.olds.name;
      const urnName = req.urn.split("::").pop() ?? "resource";
      inputs.name = typeof oldName === "string" ? oldName : `${urnName}-${randomBytes(4).toString("hex").slice(0, 7)}`;
    }
    if (isBlank(inputs.project)) {
      inputs.project = req.config?.project ?? this.state.project;
    }
    const scope = scopeProperty(spec);
    if (scope === "region" && isBlank(inputs.region)) {
      inputs.region = req.config?.region ?? this.state.region;
    }
    if (scope === "zone" && isBlank(inputs.zone)) {
      inputs.zone = req.config?.zone ?? this.state.zones[0] ?? `${this.state.region}-a`;
    }
    const known = new Set(propertyOrder(spec));
    for (const [k, v] of Object.entries(inputs)) {
      if (!known.has(k)) {
        failures.push({ property: k, reason: `${k} is not a property of ${spec.typeName}` });
      } else if (["project", "region", "zone"].includes(k) && typeof v !== "string") {
        failures.push({ property: k, reason: `${k} must be a string, got ${JSON.stringify(v)}` });
      }
    }
    failures.push(...validateInputs(spec.kind, inputs));
    return { inputs, failures };
  }

  diff(req: DiffRequest): DiffResponse {
    if (req.type === NETWORK_ENDPOINT_LIST_TOKEN) {
      const d = this.endpointLists.diff(req.olds, req.news);
      return { ...d, deleteBeforeReplace: d.replaces.length > 0 };
    }
    const spec = specFor(req.type);
    const kind: GceKind = spec.kind;
    const news = expandShorthands(kind, req.news);
    const olds = req.olds;
    const identity = ["name", "project", "region", "zone"];
    const ctx = this.state.refContext(this.keyForDiff(spec, news, olds));
    const diffs: string[] = [];
    for (const field of propertyOrder(spec)) {
      let nv: Json | undefined = news[field];
      const ov = olds[field];
      if (isBlank(nv)) {
        // Optional + Computed in the provider's schema: an omitted input keeps what the resource
        // has (terraform-plugin-sdk helper/schema/schema.go, schemaMap.diffList / diffString: "If we
        // have an old value and no new value is set ... and we're computed, then nothing has
        // changed"; hashicorp/terraform#28811).
        if (spec.optionalComputed.includes(field)) {
          continue;
        }
        const d = defaultFor(kind, field);
        if (d !== undefined) {
          nv = d;
        } else {
          if (!isBlank(req.oldInputs?.[field]) || !isBlank(ov)) {
            diffs.push(field);
          }
          continue;
        }
      }
      if (identity.includes(field)) {
        if (containsUnknown(nv) || nv !== ov) {
          diffs.push(field);
        }
      } else if (!this.state.sameValue(kind, field, nv, ov, ctx)) {
        diffs.push(field);
      }
    }
    const replaces = diffs.filter((f) => identity.includes(f) || spec.immutable.includes(f));
    const sameKey = replaces.length > 0 && !replaces.some((f) => identity.includes(f));
    return { changes: diffs.length > 0, diffs, replaces, deleteBeforeReplace: sameKey };
  }

  create(req: CreateRequest): CreateResponse {
    if (req.preview === true) {
      if (req.type !== NETWORK_ENDPOINT_LIST_TOKEN) {
        specFor(req.type);
      }
      return { id: "", outputs: req.inputs };
    }
    if (req.type === NETWORK_ENDPOINT_LIST_TOKEN) {
      return this.endpointLists.create(req.inputs);
    }
    const spec = specFor(req.type);
    const stored = this.state.create(spec.kind, req.inputs);
    return { id: this.state.path(stored), outputs: outputsOf(stored) };
  }

  read(req: ReadRequest): ReadResponse {
    if (req.type === NETWORK_ENDPOINT_LIST_TOKEN) {
      return this.endpointLists.read(req.id, req.state ?? req.inputs ?? {});
    }
    const spec = specFor(req.type);
    const key = this.keyForId(spec, req.id, req.state ?? req.inputs ?? {});
    this.state.checkFault(spec.kind, key.name, "read");
    const live = this.state.find(key);
    if (live === undefined) {
      return { id: null, outputs: {}, inputs: {} };
    }
    const outputs = outputsOf(live);
    const ctx = this.state.refContext(key);
    const inputs: JsonObject = {};
    const fields = propertyOrder(spec);
    if (req.inputs !== undefined && Object.keys(req.inputs).length > 0) {
      for (const [k, old] of Object.entries(req.inputs)) {
        const now = live.properties[k];
        if (!fields.includes(k) || ["name", "project", "region", "zone"].includes(k)) {
          inputs[k] = old;
        } else if (isBlank(now)) {
          if (isAllocated(spec.kind, k)) {
            inputs[k] = old;
          }
        } else if (!isBlank(old) && this.state.sameValue(spec.kind, k, old, now, ctx)) {
          inputs[k] = old;
        } else {
          inputs[k] = now;
        }
      }
    } else {
      for (const k of fields) {
        const now = live.properties[k];
        if (!isBlank(now)) {
          inputs[k] = now;
        }
      }
    }
    return { id: this.state.path(key), outputs, inputs };
  }

  update(req: UpdateRequest): UpdateResponse {
    if (req.type === NETWORK_ENDPOINT_LIST_TOKEN) {
      return req.preview === true
        ? { outputs: { ...req.olds, ...req.news } }
        : this.endpointLists.update(req.id, req.olds, req.news);
    }
    const spec = specFor(req.type);
    const key = this.keyForId(spec, req.id, req.olds);
    const stored = this.state.get(key).properties;
    // An omitted Optional + Computed input keeps the resource's value (see diff).
    const news: JsonObject = { ...req.news };
    for (const field of spec.optionalComputed) {
      if (isBlank(news[field]) && !isBlank(stored[field])) {
        news[field] = stored[field];
      }
    }
    if (req.preview === true) {
      return { outputs: { ...outputsOf(this.state.get(key)), ...news } };
    }
    return { outputs: outputsOf(this.state.update(key, news)) };
  }

  delete(req: DeleteRequest): void {
    if (req.type === NETWORK_ENDPOINT_LIST_TOKEN) {
      this.endpointLists.delete(req.id, req.outputs ?? {});
      return;
    }
    const spec = specFor(req.type);
    const key = this.keyForId(spec, req.id, req.outputs ?? {});
    try {
      this.state.delete(key);
    } catch (e) {
      // Like the provider: deleting what is already gone succeeds.
      if (e instanceof GceError && e.status === 404 && e.reason === "notFound" && this.state.find(key) === undefined) {
        return;
      }
      throw e;
    }
  }

  /** Dispatches a JSON request body for `op` (the HTTP face's /emulator/provider/<op>). */
  dispatch(op: ProviderOperation, body: JsonObject): JsonObject {
    const str = (k: string): string => {
      const v = body[k];
      if (typeof v !== "string") {
        throw new GceError(400, `provider ${op}: "${k}" must be a string`, "invalid");
      }
      return v;
    };
    const obj = (k: string): JsonObject => {
      const v = body[k];
      if (v === undefined || v === null) {
        return {};
      }
      if (!isJsonObject(v)) {
        throw new GceError(400, `provider ${op}: "${k}" must be an object`, "invalid");
      }
      return v;
    };
    const optObj = (k: string): JsonObject | undefined =>
      body[k] === undefined || body[k] === null ? undefined : obj(k);
    switch (op) {
      case "check": {
        const config = obj("config");
        const cfg: ProviderConfig = {
          ...(typeof config.project === "string" ? { project: config.project } : {}),
          ...(typeof config.region === "string" ? { region: config.region } : {}),
          ...(typeof config.zone === "string" ? { zone: config.zone } : {}),
        };
        const res = this.check({
          type: str("type"),
          urn: str("urn"),
          olds: obj("olds"),
          news: obj("news"),
          config: cfg,
        });
        return toJsonObject(res);
      }
      case "diff": {
        const oldInputs = optObj("oldInputs");
        return toJsonObject(
          this.diff({
            type: str("type"),
            id: str("id"),
            olds: obj("olds"),
            news: obj("news"),
            ...(oldInputs === undefined ? {} : { oldInputs }),
          }),
        );
      }
      case "create":
        return toJsonObject(this.create({ type: str("type"), inputs: obj("inputs"), preview: body.preview === true }));
      case "read": {
        const state = optObj("state");
        const inputs = optObj("inputs");
        return toJsonObject(
          this.read({
            type: str("type"),
            id: str("id"),
            ...(state === undefined ? {} : { state }),
            ...(inputs === undefined ? {} : { inputs }),
          }),
        );
      }
      case "update":
        return toJsonObject(
          this.update({
            type: str("type"),
            id: str("id"),
            olds: obj("olds"),
            news: obj("news"),
            preview: body.preview === true,
          }),
        );
      case "delete":
        this.delete({ type: str("type"), id: str("id"), outputs: obj("outputs") });
        return {};
    }
  }

  private keyForId(spec: KindSpec, id: string, props: JsonObject): ResourceKey {
    const fromId = this.state.keyOfPath(id);
    if (fromId !== undefined && fromId.kind === spec.kind) {
      return fromId;
    }
    return this.state.keyOf(spec.kind, props);
  }

  private keyForDiff(spec: KindSpec, news: JsonObject, olds: JsonObject): ResourceKey {
    const pick = (k: string): Json | undefined => {
      const v = news[k];
      return typeof v === "string" && !containsUnknown(v) ? v : olds[k];
    };
    const props: JsonObject = {};
    for (const k of ["name", "project", "region", "zone"]) {
      const v = pick(k);
      if (v !== undefined) {
        props[k] = v;
      }
    }
    if (typeof props.name !== "string") {
      props.name = "unknown";
    }
    return this.state.keyOf(spec.kind, props);
  }
}
