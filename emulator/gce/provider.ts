// The Pulumi provider face of the GCE emulator: a resource-provider plugin for package `gcp`
// (launched as `pulumi-resource-gcp` through the shim in ./bin) that the real Pulumi engine runs.
// It speaks the provider gRPC protocol (stubs from @pulumi/pulumi/proto) and forwards every
// resource operation to the emulator named by DCCM_GCE_EMULATOR_URL (POST /emulator/provider/<op>),
// so the emulator keeps the one model of what exists.
//
// Why not @pulumi/pulumi/provider's main(): it answers CheckConfig/DiffConfig with UNIMPLEMENTED
// (tolerated by the engine) but gives diff() only the old outputs, never the old inputs, and
// cannot report which properties changed (`diffs`); a direct server is as short and exact.
//
// Secrets: Configure accepts secrets; they are unwrapped before forwarding, and every top-level
// output whose input was (or contained) a secret is returned as a secret. Unknowns (preview
// only) are forwarded as the engine's sentinel string; the emulator skips validating them and
// diffs them as changes.

import * as grpc from "@grpc/grpc-js";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { Empty } from "google-protobuf/google/protobuf/empty_pb";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";

import {
  canonical,
  containsSecret,
  isJsonObject,
  type Json,
  type JsonObject,
  makeSecret,
  toJsonObject,
  unwrap,
} from "./json";
import { specOfToken } from "./kinds";

const VERSION = "9.37.0";

/** An error the engine shows as the operation's failure. */
class ProviderError extends Error {
  constructor(
    message: string,
    readonly code: grpc.status = grpc.status.UNKNOWN,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "ProviderError";
  }
}

function emulatorUrl(): string {
  const url = process.env.DCCM_GCE_EMULATOR_URL;
  if (url === undefined || url === "") {
    throw new ProviderError(
      "pulumi-resource-gcp (GCE emulator plugin): DCCM_GCE_EMULATOR_URL is not set",
      grpc.status.FAILED_PRECONDITION,
    );
  }
  return url.replace(/\/+$/, "");
}

/** The resource type from the request, or from the URN's last type segment. */
function typeOf(type: string, urn: string): string {
  if (type !== "") {
    return type;
  }
  const qualified = urn.split("::")[2] ?? "";
  return qualified.split("$").pop() ?? "";
}

function structToJson(s: Struct | undefined, where: string): JsonObject {
  return s === undefined ? {} : toJsonObject(s.toJavaScript(), where);
}

function jsonToStruct(o: JsonObject): Struct {
  return Struct.fromJavaScript(o);
}

/** Top-level keys whose value is or contains a secret, in any of the given property bags. */
function secretKeys(...bags: JsonObject[]): Set<string> {
  const keys = new Set<string>();
  for (const bag of bags) {
    for (const [k, v] of Object.entries(bag)) {
      if (containsSecret(v)) {
        keys.add(k);
      }
    }
  }
  return keys;
}

function unwrapObject(o: JsonObject): JsonObject {
  const u = unwrap(o);
  return isJsonObject(u) ? u : {};
}

function rewrapSecrets(o: JsonObject, keys: ReadonlySet<string>): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(o)) {
    out[k] = keys.has(k) ? makeSecret(v) : v;
  }
  return out;
}

interface GoogleErrorBody {
  readonly code: number;
  readonly message: string;
  readonly reason: string;
}

function googleError(body: Json): GoogleErrorBody | undefined {
  if (!isJsonObject(body) || !isJsonObject(body.error)) {
    return undefined;
  }
  const e = body.error;
  const first = Array.isArray(e.errors) ? e.errors[0] : undefined;
  return {
    code: typeof e.code === "number" ? e.code : 0,
    message: typeof e.message === "string" ? e.message : JSON.stringify(body),
    reason: isJsonObject(first) && typeof first.reason === "string" ? first.reason : "",
  };
}

const VERBS: Readonly<Record<string, string>> = {
  check: "checking",
  diff: "diffing",
  create: "creating",
  read: "reading",
  update: "updating",
  delete: "deleting",
};

/**
 * GCE's per-minute rate quota refusal, which the provider retries (terraform-provider-google
 * transport/error_retry_predicates.go is403QuotaExceededPerMinuteError, one of the default retry
 * predicates of every request: "Quota exceeded for quota metric '…' and limit '… per minute' of
 * service", HTTP 403).
 */
const PER_MINUTE_QUOTA = /Quota exceeded for quota metric '.*' and limit '.* per minute' of service/;
/**
 * How the provider retries it: transport_tpg.Retry runs terraform-plugin-sdk's retry.RetryContext
 * (helper/retry: a StateChangeConf with MinTimeout 500 ms, the wait doubling up to 10 s) within
 * the resource's timeout (20 minutes for the compute resources dccm uses).
 */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;
const RETRY_TIMEOUT_MS = 20 * 60_000;

/** callEmulator, retrying a per-minute rate quota refusal as the provider does. */
async function callEmulatorRetrying(op: string, type: string, body: JsonObject): Promise<JsonObject> {
  const deadline = Date.now() + RETRY_TIMEOUT_MS;
  for (let wait = RETRY_FIRST_MS; ; wait = Math.min(RETRY_MAX_MS, wait * 2)) {
    try {
      return await callEmulator(op, type, body);
    } catch (e) {
      if (!(e instanceof ProviderError) || !PER_MINUTE_QUOTA.test(e.message) || Date.now() + wait > deadline) {
        throw e;
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** POSTs to /emulator/provider/<op>; a Google error becomes `Error creating X: googleapi: Error 409: ..., alreadyExists`. */
async function callEmulator(op: string, type: string, body: JsonObject): Promise<JsonObject> {
  const url = `${emulatorUrl()}/emulator/provider/${op}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch (cause) {
    throw new ProviderError(
      `GCE emulator unreachable at ${url}: ${cause instanceof Error ? cause.message : String(cause)}`,
      grpc.status.UNAVAILABLE,
      {
        cause,
      },
    );
  }
  const text = await res.text();
  let parsed: JsonObject;
  try {
    parsed = toJsonObject(JSON.parse(text), `${op} response`);
  } catch (cause) {
    throw new ProviderError(
      `GCE emulator answered ${op} with HTTP ${res.status} and a body that is not a JSON object: ${text.slice(0, 200)}`,
      grpc.status.INTERNAL,
      {
        cause,
      },
    );
  }
  if (!res.ok) {
    const g = googleError(parsed);
    const typeName = specOfToken(type)?.typeName ?? type;
    const detail =
      g === undefined ? text : `googleapi: Error ${g.code}: ${g.message}${g.reason === "" ? "" : `, ${g.reason}`}`;
    throw new ProviderError(`Error ${VERBS[op] ?? op} ${typeName}: ${detail}`);
  }
  return parsed;
}

function objectField(o: JsonObject, k: string): JsonObject {
  const v = o[k];
  return isJsonObject(v) ? v : {};
}

class EmulatorProvider {
  private config: { project?: string; region?: string; zone?: string } = {};

  configure(args: JsonObject, variables: ReadonlyMap<string, string>): void {
    const plain = unwrapObject(args);
    const pick = (k: string): string | undefined => {
      const v = plain[k];
      if (typeof v === "string" && v !== "") {
        return v;
      }
      const fromVar = variables.get(`gcp:config:${k}`) ?? variables.get(`gcp:${k}`);
      return fromVar === undefined || fromVar === "" ? undefined : fromVar;
    };
    const project = pick("project");
    const region = pick("region");
    const zone = pick("zone");
    this.config = {
      ...(project === undefined ? {} : { project }),
      ...(region === undefined ? {} : { region }),
      ...(zone === undefined ? {} : { zone }),
    };
  }

  async check(
    type: string,
    urn: string,
    olds: JsonObject,
    news: JsonObject,
  ): Promise<{ inputs: JsonObject; failures: Array<{ property: string; reason: string }> }> {
    const secrets = secretKeys(news);
    const res = await callEmulator("check", type, {
      type,
      urn,
      olds: unwrapObject(olds),
      news: unwrapObject(news),
      config: this.config,
    });
    const failures: Array<{ property: string; reason: string }> = [];
    if (Array.isArray(res.failures)) {
      for (const f of res.failures) {
        if (isJsonObject(f) && typeof f.property === "string" && typeof f.reason === "string") {
          failures.push({ property: f.property, reason: f.reason });
        }
      }
    }
    return { inputs: rewrapSecrets(objectField(res, "inputs"), secrets), failures };
  }

  async diff(
    type: string,
    id: string,
    olds: JsonObject,
    oldInputs: JsonObject | undefined,
    news: JsonObject,
  ): Promise<{ changes: boolean; diffs: string[]; replaces: string[]; deleteBeforeReplace: boolean }> {
    const res = await callEmulator("diff", type, {
      type,
      id,
      olds: unwrapObject(olds),
      ...(oldInputs === undefined ? {} : { oldInputs: unwrapObject(oldInputs) }),
      news: unwrapObject(news),
    });
    const strings = (v: Json | undefined): string[] =>
      Array.isArray(v) ? v.filter((e): e is string => typeof e === "string") : [];
    return {
      changes: res.changes === true,
      diffs: strings(res.diffs),
      replaces: strings(res.replaces),
      deleteBeforeReplace: res.deleteBeforeReplace === true,
    };
  }

  async create(type: string, inputs: JsonObject, preview: boolean): Promise<{ id: string; outputs: JsonObject }> {
    const secrets = secretKeys(inputs);
    const res = await callEmulatorRetrying("create", type, { type, inputs: unwrapObject(inputs), preview });
    const id = typeof res.id === "string" ? res.id : "";
    return { id, outputs: rewrapSecrets(objectField(res, "outputs"), secrets) };
  }

  async read(
    type: string,
    id: string,
    state: JsonObject,
    inputs: JsonObject | undefined,
  ): Promise<{ id: string; outputs: JsonObject; inputs: JsonObject | undefined }> {
    const secrets = secretKeys(state, inputs ?? {});
    const res = await callEmulatorRetrying("read", type, {
      type,
      id,
      state: unwrapObject(state),
      ...(inputs === undefined ? {} : { inputs: unwrapObject(inputs) }),
    });
    if (typeof res.id !== "string" || res.id === "") {
      // Gone: an empty ID tells the engine to drop the resource from the state.
      return { id: "", outputs: {}, inputs: undefined };
    }
    return {
      id: res.id,
      outputs: rewrapSecrets(objectField(res, "outputs"), secrets),
      inputs: rewrapSecrets(objectField(res, "inputs"), secrets),
    };
  }

  async update(type: string, id: string, olds: JsonObject, news: JsonObject, preview: boolean): Promise<JsonObject> {
    const secrets = secretKeys(news);
    const res = await callEmulatorRetrying("update", type, {
      type,
      id,
      olds: unwrapObject(olds),
      news: unwrapObject(news),
      preview,
    });
    return rewrapSecrets(objectField(res, "outputs"), secrets);
  }

  async delete(type: string, id: string, outputs: JsonObject): Promise<void> {
    await callEmulatorRetrying("delete", type, { type, id, outputs: unwrapObject(outputs) });
  }
}

function toServiceError(e: unknown): Partial<grpc.StatusObject> {
  if (e instanceof ProviderError) {
    return { code: e.code, details: e.message };
  }
  return { code: grpc.status.INTERNAL, details: e instanceof Error ? e.message : String(e) };
}

/** Runs `work` and answers the unary call with its result or its error. */
function answer<Req, Res>(work: (req: Req) => Promise<Res> | Res): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    void Promise.resolve()
      .then(() => work(call.request))
      .then(
        (res) => callback(null, res),
        (e: unknown) => callback(toServiceError(e), null),
      );
  };
}

function unimplemented<Req, Res>(what: string): grpc.handleUnaryCall<Req, Res> {
  return (_call, callback) =>
    callback(
      { code: grpc.status.UNIMPLEMENTED, details: `${what} is not implemented by the GCE emulator plugin` },
      null,
    );
}

export function makeServer(provider: EmulatorProvider): provrpc.IResourceProviderServer {
  return {
    handshake: unimplemented("Handshake"),
    parameterize: unimplemented("Parameterize"),
    getSchema: answer((_req: provproto.GetSchemaRequest) => {
      return new provproto.GetSchemaResponse().setSchema(JSON.stringify({ name: "gcp", version: VERSION }));
    }),
    checkConfig: answer((req: provproto.CheckRequest) => {
      const resp = new provproto.CheckResponse();
      const news = req.getNews();
      if (news !== undefined) {
        resp.setInputs(news);
      }
      return resp;
    }),
    diffConfig: answer((req: provproto.DiffRequest) => {
      const strip = (s: Struct | undefined): string => {
        const { version: _version, ...rest } = structToJson(s, "provider config");
        return canonical(unwrap(rest));
      };
      const same = strip(req.getOlds()) === strip(req.getNews());
      return new provproto.DiffResponse().setChanges(
        same ? provproto.DiffResponse.DiffChanges.DIFF_NONE : provproto.DiffResponse.DiffChanges.DIFF_SOME,
      );
    }),
    configure: answer((req: provproto.ConfigureRequest) => {
      const variables = new Map<string, string>();
      req.getVariablesMap().forEach((v, k) => variables.set(k, v));
      provider.configure(structToJson(req.getArgs(), "provider args"), variables);
      // @pulumi/gcp is a Terraform-bridged provider, whose Configure answers SupportsPreview: true
      // (pulumi-terraform-bridge pkg/tfbridge/provider.go, Provider.Configure): in a preview the
      // engine asks Create and Update for their planned outputs, and an update keeps the outputs it
      // does not change (a self link) known, so what points at an updated resource is not shown
      // changing. Create and Update answer previews without touching the state (provider-api.ts).
      return new provproto.ConfigureResponse()
        .setAcceptsecrets(true)
        .setSupportspreview(true)
        .setAcceptresources(false)
        .setAcceptoutputs(false);
    }),
    invoke: unimplemented("Invoke"),
    call: unimplemented("Call"),
    check: answer(async (req: provproto.CheckRequest) => {
      const type = typeOf(req.getType(), req.getUrn());
      const { inputs, failures } = await provider.check(
        type,
        req.getUrn(),
        structToJson(req.getOlds(), "olds"),
        structToJson(req.getNews(), "news"),
      );
      return new provproto.CheckResponse()
        .setInputs(jsonToStruct(inputs))
        .setFailuresList(failures.map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(f.reason)));
    }),
    diff: answer(async (req: provproto.DiffRequest) => {
      const type = typeOf(req.getType(), req.getUrn());
      const oldInputs = req.getOldInputs();
      const d = await provider.diff(
        type,
        req.getId(),
        structToJson(req.getOlds(), "olds"),
        oldInputs === undefined ? undefined : structToJson(oldInputs, "oldInputs"),
        structToJson(req.getNews(), "news"),
      );
      const resp = new provproto.DiffResponse()
        .setChanges(
          d.changes ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE,
        )
        .setDiffsList(d.diffs)
        .setReplacesList(d.replaces)
        .setDeletebeforereplace(d.deleteBeforeReplace)
        .setHasdetaileddiff(true);
      const detailed = resp.getDetaileddiffMap();
      for (const field of d.diffs) {
        detailed.set(
          field,
          new provproto.PropertyDiff()
            .setKind(
              d.replaces.includes(field)
                ? provproto.PropertyDiff.Kind.UPDATE_REPLACE
                : provproto.PropertyDiff.Kind.UPDATE,
            )
            .setInputdiff(true),
        );
      }
      return resp;
    }),
    create: answer(async (req: provproto.CreateRequest) => {
      const type = typeOf(req.getType(), req.getUrn());
      const res = await provider.create(type, structToJson(req.getProperties(), "properties"), req.getPreview());
      return new provproto.CreateResponse().setId(res.id).setProperties(jsonToStruct(res.outputs));
    }),
    read: answer(async (req: provproto.ReadRequest) => {
      const type = typeOf(req.getType(), req.getUrn());
      const inputs = req.getInputs();
      const res = await provider.read(
        type,
        req.getId(),
        structToJson(req.getProperties(), "properties"),
        inputs === undefined ? undefined : structToJson(inputs, "inputs"),
      );
      const resp = new provproto.ReadResponse().setId(res.id).setProperties(jsonToStruct(res.outputs));
      if (res.inputs !== undefined) {
        resp.setInputs(jsonToStruct(res.inputs));
      }
      return resp;
    }),
    list: (call) => {
      call.emit("error", {
        code: grpc.status.UNIMPLEMENTED,
        details: "List is not implemented by the GCE emulator plugin",
      });
    },
    update: answer(async (req: provproto.UpdateRequest) => {
      const type = typeOf(req.getType(), req.getUrn());
      const outputs = await provider.update(
        type,
        req.getId(),
        structToJson(req.getOlds(), "olds"),
        structToJson(req.getNews(), "news"),
        req.getPreview(),
      );
      return new provproto.UpdateResponse().setProperties(jsonToStruct(outputs));
    }),
    delete: answer(async (req: provproto.DeleteRequest) => {
      const type = typeOf(req.getType(), req.getUrn());
      await provider.delete(type, req.getId(), structToJson(req.getProperties(), "properties"));
      return new Empty();
    }),
    construct: unimplemented("Construct"),
    cancel: answer(() => new Empty()),
    getPluginInfo: answer(() => new plugproto.PluginInfo().setVersion(VERSION)),
    attach: answer(() => new Empty()),
    getMapping: answer(() => new provproto.GetMappingResponse()),
    getMappings: answer(() => new provproto.GetMappingsResponse()),
  };
}

async function main(): Promise<void> {
  emulatorUrl(); // fail fast, before the engine waits on a port
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 400 * 1024 * 1024,
    "grpc.max_send_message_length": 400 * 1024 * 1024,
  });
  server.addService(provrpc.ResourceProviderService, makeServer(new EmulatorProvider()));
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => {
      if (err !== null) {
        reject(new Error("pulumi-resource-gcp: cannot bind the gRPC server", { cause: err }));
      } else {
        resolve(p);
      }
    });
  });
  // The engine reads the port from the first line of stdout.
  process.stdout.write(`${port}\n`);
  const shutdown = (): void => {
    server.tryShutdown(() => process.exit(0));
  };
  process.once("SIGTERM", shutdown);
  process.once("SIGINT", shutdown);
  // The engine SIGKILLs its plugins when it closes them; if the engine itself dies first (an
  // aborted `up`), this process would be reparented and linger: leave with it instead.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) {
      server.forceShutdown();
      process.exit(0);
    }
  }, PARENT_CHECK_MS).unref();
}

const PARENT_CHECK_MS = 1_000;

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(
      `pulumi-resource-gcp (GCE emulator): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
    );
    process.exit(1);
  });
}

export { EmulatorProvider };
