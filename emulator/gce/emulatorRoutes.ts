// The HTTP face's test-only routes under /emulator/: listing, out-of-band inserts, changes and
// deletes, the history, instance seeding, fault injection, call counts, reset, and the provider API
// the plugin process forwards to.

import { GceError } from "./errors";
import type { FaultOperation } from "./faults";
import type { InstanceSpec, NetworkInterfaceSpec } from "./instances";
import { isJsonObject, type JsonObject, toJson } from "./json";
import { type GceKind, isGceKind, kindOf } from "./kinds";
import { PROVIDER_OPERATIONS, type ProviderApi } from "./provider-api";
import { toListing } from "./rest";
import { badRequest, ok, param, type RouteContext, type Router } from "./router";
import type { GceState } from "./state";
import type { ResourceKey } from "./store";

/** What the test routes act on; `reset` forgets everything the face and the state hold. */
export interface EmulatorFace {
  readonly router: Router;
  readonly state: GceState;
  readonly provider: ProviderApi;
  readonly reset: () => void;
}

export function defineEmulatorRoutes(face: EmulatorFace): void {
  const st = face.state;
  const keyFrom = (ctx: RouteContext): ResourceKey => {
    const rawKind = param(ctx, "kind");
    let kind: GceKind;
    try {
      kind = kindOf(rawKind);
    } catch (cause) {
      throw new GceError(400, `unknown kind ${rawKind}`, "invalid", { cause });
    }
    return {
      kind,
      project: param(ctx, "project"),
      scope: param(ctx, "scope"),
      name: param(ctx, "name"),
    };
  };
  const objectBody = (ctx: RouteContext, what: string): JsonObject => {
    if (!isJsonObject(ctx.body)) {
      throw badRequest(`${what}: the request body must be a JSON object`);
    }
    return ctx.body;
  };

  face.router.route("GET", "/emulator/resources", false, (ctx) => {
    const kind = ctx.query.get("kind");
    if (kind !== null && !isGceKind(kind)) {
      throw badRequest(`unknown kind ${kind}`);
    }
    return ok(st.list(kind === null ? {} : { kind }).map((r) => toJson(toListing(r))));
  });
  face.router.route("POST", "/emulator/resources/{kind}/{project}/{scope}", false, (ctx) => {
    const kind = param(ctx, "kind");
    try {
      kindOf(kind);
    } catch (cause) {
      throw new GceError(400, `unknown kind ${kind}`, "invalid", { cause });
    }
    const created = st.insertOutOfBand(kind, objectBody(ctx, "POST resource"), {
      project: param(ctx, "project"),
      scope: param(ctx, "scope"),
    });
    return ok(toJson(toListing(created)));
  });
  face.router.route("GET", "/emulator/history", false, () => ok(st.history().map((e) => toJson(e))));
  face.router.route("DELETE", "/emulator/history", false, () => {
    st.clearHistory();
    return ok({});
  });
  face.router.route("GET", "/emulator/resources/{kind}/{project}/{scope}/{name}", false, (ctx) =>
    ok(toJson(toListing(st.get(keyFrom(ctx))))),
  );
  face.router.route("PATCH", "/emulator/resources/{kind}/{project}/{scope}/{name}", false, (ctx) =>
    ok(toJson(toListing(st.patchOutOfBand(keyFrom(ctx), objectBody(ctx, "PATCH"))))),
  );
  face.router.route("DELETE", "/emulator/resources/{kind}/{project}/{scope}/{name}", false, (ctx) => {
    st.deleteOutOfBand(keyFrom(ctx));
    return ok({});
  });
  face.router.route("PUT", "/emulator/instances/{project}/{zone}/{name}", false, (ctx) => {
    const spec = parseInstanceSpec(ctx.body === undefined ? {} : objectBody(ctx, "PUT instance"));
    const r = st.putInstance(param(ctx, "project"), param(ctx, "zone"), param(ctx, "name"), spec);
    return ok(r.properties);
  });
  face.router.route("DELETE", "/emulator/instances/{project}/{zone}/{name}", false, (ctx) => {
    st.deleteOutOfBand({
      kind: "instances",
      project: param(ctx, "project"),
      scope: param(ctx, "zone"),
      name: param(ctx, "name"),
    });
    return ok({});
  });
  // Shared VPC set-up, as a Shared VPC Admin's `gcloud compute shared-vpc enable <host>` and
  // `gcloud compute shared-vpc associated-projects add <service> --host-project <host>` (networks.ts).
  face.router.route("POST", "/emulator/xpn/{host}", false, (ctx) => {
    st.enableXpnHost(param(ctx, "host"));
    return ok({});
  });
  face.router.route("POST", "/emulator/xpn/{host}/services/{service}", false, (ctx) => {
    st.enableXpnResource(param(ctx, "host"), param(ctx, "service"));
    return ok({});
  });
  face.router.route("POST", "/emulator/faults", false, (ctx) => {
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
  face.router.route("DELETE", "/emulator/faults", false, () => {
    st.clearFaults();
    return ok({});
  });
  // permissions.ts: {"project": P, "writable": false} refuses the daemon's writes to P with GCE's 403.
  face.router.route("POST", "/emulator/permissions", false, (ctx) => {
    const { project, writable } = objectBody(ctx, "POST /emulator/permissions");
    if (typeof project !== "string" || project === "" || typeof writable !== "boolean")
      throw badRequest("a permission needs project (a project ID) and writable (true or false)");
    st.setProjectWritable(project, writable);
    return ok({ readOnlyProjects: st.readOnlyProjects() });
  });
  face.router.route("GET", "/emulator/permissions", false, () => ok({ readOnlyProjects: st.readOnlyProjects() }));
  face.router.route("GET", "/emulator/calls", false, () => ok(face.router.calls()));
  face.router.route("DELETE", "/emulator/calls", false, () => {
    face.router.resetCalls();
    return ok({});
  });
  face.router.route("POST", "/emulator/reset", false, () => {
    face.reset();
    return ok({});
  });
  for (const op of PROVIDER_OPERATIONS) {
    face.router.route("POST", `/emulator/provider/${op}`, true, (ctx) =>
      ok(face.provider.dispatch(op, objectBody(ctx, `provider ${op}`))),
    );
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
        subnetwork?: string;
        accessConfigs?: Array<{ natIP?: string }>;
        aliasIpRanges?: Array<{ ipCidrRange: string; subnetworkRangeName?: string }>;
      } = {};
      for (const k of ["networkIP", "ipv6Address", "network", "subnetwork"] as const) {
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
