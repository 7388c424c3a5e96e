// The provider plugin process (provider.ts): gRPC to the emulator's provider API, and GCE's 403s through it.

import * as assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";
import * as readline from "node:readline";

import * as grpc from "@grpc/grpc-js";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { Empty } from "google-protobuf/google/protobuf/empty_pb";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";

import { type GceEmulator, pluginBinDir, startGceEmulator } from "../index";
import { type Json, type JsonObject, SECRET_SIG, SIG_KEY, toJsonObject } from "../json";
import { PROJECT, REGION, NOW, ADDRESS, EMPTY_LABELS_FINGERPRINT, NAME_REASON } from "./emulatorFixtures";

describe("GCE emulator", function () {
  let gce: GceEmulator;
  let link: (rel: string) => string;

  beforeEach(async function () {
    gce = await startGceEmulator({ now: () => new Date(NOW) });
    link = (rel) => `${gce.endpoint}/compute/v1/projects/${PROJECT}/${rel}`;
  });

  afterEach(async function () {
    await gce.stop();
  });

  describe("provider plugin process (gRPC)", function () {
    let child: ChildProcess | undefined;
    let client: provrpc.ResourceProviderClient | undefined;

    afterEach(async function () {
      client?.close();
      const c = child;
      if (c !== undefined && c.exitCode === null && c.signalCode === null) {
        const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
        c.kill("SIGTERM");
        await exited;
      }
    });

    /** Starts the shim as the engine would and connects to the port it prints. */
    async function startPlugin(): Promise<provrpc.ResourceProviderClient> {
      const c = spawn(path.join(pluginBinDir(), "pulumi-resource-gcp"), ["127.0.0.1:1"], {
        env: { ...process.env, ...gce.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = c;
      const stderr: string[] = [];
      c.stderr.on("data", (d: Buffer) => stderr.push(d.toString()));
      const port = await new Promise<string>((resolve, reject) => {
        const lines = readline.createInterface({ input: c.stdout });
        lines.once("line", (line) => resolve(line.trim()));
        c.once("exit", (code) =>
          reject(new Error(`plugin exited with ${String(code)} before printing its port: ${stderr.join("")}`)),
        );
      });
      assert.match(port, /^\d+$/);
      client = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      return client;
    }

    function unary<Req, Res>(
      fn: (req: Req, cb: (err: grpc.ServiceError | null, res: Res) => void) => grpc.ClientUnaryCall,
      req: Req,
    ): Promise<Res> {
      return new Promise((resolve, reject) => {
        fn(req, (err, res) => (err !== null ? reject(err) : resolve(res)));
      });
    }

    function detailedDiff(d: provproto.DiffResponse): Array<[string, provproto.PropertyDiff.Kind]> {
      const out: Array<[string, provproto.PropertyDiff.Kind]> = [];
      d.getDetaileddiffMap().forEach((v, k) => out.push([k, v.getKind()]));
      return out.sort(([a], [b]) => a.localeCompare(b));
    }

    const urn = `urn:pulumi:e2e::p::${ADDRESS}::addr`;
    const secret = (v: Json): JsonObject => ({ [SIG_KEY]: SECRET_SIG, value: v });

    it("serves check, create, read, diff and delete against the emulator", async function () {
      this.timeout(30_000);
      const c = await startPlugin();
      const info = await unary<Empty, plugproto.PluginInfo>((r, cb) => c.getPluginInfo(r, cb), new Empty());
      assert.equal(info.getVersion(), "9.37.0");
      const configured = await unary<provproto.ConfigureRequest, provproto.ConfigureResponse>(
        (r, cb) => c.configure(r, cb),
        new provproto.ConfigureRequest().setArgs(
          Struct.fromJavaScript({ project: PROJECT, region: REGION, version: "9.37.0" }),
        ),
      );
      assert.deepEqual(
        [configured.getAcceptsecrets(), configured.getSupportspreview(), configured.getAcceptresources()],
        [true, true, false],
      );

      const check = (news: JsonObject): Promise<provproto.CheckResponse> =>
        unary<provproto.CheckRequest, provproto.CheckResponse>(
          (r, cb) => c.check(r, cb),
          new provproto.CheckRequest()
            .setUrn(urn)
            .setType(ADDRESS)
            .setOlds(Struct.fromJavaScript({}))
            .setNews(Struct.fromJavaScript(news)),
        );
      const bad = await check({ name: "Bad_Name" });
      assert.deepEqual(
        bad.getFailuresList().map((f) => [f.getProperty(), f.getReason()]),
        [["name", NAME_REASON("Bad_Name")]],
      );
      const checked = await check({ name: "lb-1", description: secret("for default/svc") });
      assert.deepEqual(checked.getFailuresList(), []);
      const inputs = checked.getInputs();
      assert.deepEqual(inputs?.toJavaScript(), {
        name: "lb-1",
        description: secret("for default/svc"),
        project: PROJECT,
        region: REGION,
      });

      const created = await unary<provproto.CreateRequest, provproto.CreateResponse>(
        (r, cb) => c.create(r, cb),
        new provproto.CreateRequest().setUrn(urn).setType(ADDRESS).setProperties(inputs),
      );
      const id = `projects/${PROJECT}/regions/${REGION}/addresses/lb-1`;
      assert.equal(created.getId(), id);
      const outputs = created.getProperties()?.toJavaScript();
      assert.deepEqual(outputs, {
        name: "lb-1",
        project: PROJECT,
        region: REGION,
        description: secret("for default/svc"),
        address: "203.0.113.1",
        addressType: "EXTERNAL",
        networkTier: "PREMIUM",
        labelFingerprint: EMPTY_LABELS_FINGERPRINT,
        creationTimestamp: NOW,
        selfLink: link(`regions/${REGION}/addresses/lb-1`),
        fingerprint: "anKGecSRv8A=",
      });

      const read = await unary<provproto.ReadRequest, provproto.ReadResponse>(
        (r, cb) => c.read(r, cb),
        new provproto.ReadRequest()
          .setId(id)
          .setUrn(urn)
          .setType(ADDRESS)
          .setProperties(created.getProperties())
          .setInputs(inputs),
      );
      assert.equal(read.getId(), id);
      assert.deepEqual(read.getProperties()?.toJavaScript(), outputs);
      assert.deepEqual(read.getInputs()?.toJavaScript(), inputs?.toJavaScript());

      const diff = await unary<provproto.DiffRequest, provproto.DiffResponse>(
        (r, cb) => c.diff(r, cb),
        new provproto.DiffRequest()
          .setId(id)
          .setUrn(urn)
          .setType(ADDRESS)
          .setOlds(created.getProperties())
          .setOldInputs(inputs)
          .setNews(
            Struct.fromJavaScript({
              ...toJsonObject(inputs?.toJavaScript()),
              description: "changed",
              labels: { a: "b" },
            }),
          ),
      );
      assert.deepEqual(
        {
          changes: diff.getChanges(),
          diffs: diff.getDiffsList(),
          replaces: diff.getReplacesList(),
          deleteBeforeReplace: diff.getDeletebeforereplace(),
          detailed: detailedDiff(diff),
        },
        {
          changes: provproto.DiffResponse.DiffChanges.DIFF_SOME,
          diffs: ["description", "labels"],
          replaces: ["description"],
          deleteBeforeReplace: true,
          detailed: [
            ["description", provproto.PropertyDiff.Kind.UPDATE_REPLACE],
            ["labels", provproto.PropertyDiff.Kind.UPDATE],
          ],
        },
      );

      const conflict = await unary<provproto.CreateRequest, provproto.CreateResponse>(
        (r, cb) => c.create(r, cb),
        new provproto.CreateRequest().setUrn(urn).setType(ADDRESS).setProperties(inputs),
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(conflict instanceof Error && "details" in conflict);
      assert.equal(
        conflict.details,
        `Error creating Address: googleapi: Error 409: The resource '${id}' already exists, alreadyExists`,
      );

      await unary<provproto.DeleteRequest, Empty>(
        (r, cb) => c.delete(r, cb),
        new provproto.DeleteRequest().setId(id).setUrn(urn).setType(ADDRESS).setProperties(created.getProperties()),
      );
      assert.deepEqual(gce.listResources(), []);
      const gone = await unary<provproto.ReadRequest, provproto.ReadResponse>(
        (r, cb) => c.read(r, cb),
        new provproto.ReadRequest()
          .setId(id)
          .setUrn(urn)
          .setType(ADDRESS)
          .setProperties(created.getProperties())
          .setInputs(inputs),
      );
      assert.equal(gone.getId(), "");
      assert.deepEqual(gce.calls(), {
        "POST /emulator/provider/check": 2,
        "POST /emulator/provider/create": 2,
        "POST /emulator/provider/delete": 1,
        "POST /emulator/provider/diff": 1,
        "POST /emulator/provider/read": 2,
      });
    });
  });

  describe("provider plugin process: GCE's 403s", function () {
    let child: ChildProcess | undefined;
    let client: provrpc.ResourceProviderClient | undefined;
    afterEach(async function () {
      client?.close();
      const c = child;
      if (c !== undefined && c.exitCode === null && c.signalCode === null) {
        const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
        c.kill("SIGTERM");
        await exited;
      }
    });

    it("retries a per-minute rate quota refusal as the provider does (is403QuotaExceededPerMinuteError); a project quota refusal is final", async function () {
      this.timeout(30_000);
      const c = spawn(path.join(pluginBinDir(), "pulumi-resource-gcp"), ["127.0.0.1:1"], {
        env: { ...process.env, ...gce.env },
        stdio: ["ignore", "pipe", "ignore"],
      });
      child = c;
      const port = await new Promise<string>((resolve) =>
        readline.createInterface({ input: c.stdout }).once("line", (line) => resolve(line.trim())),
      );
      const rpc = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      client = rpc;
      const create = (name: string): Promise<unknown> =>
        new Promise((resolve) => {
          rpc.create(
            new provproto.CreateRequest()
              .setUrn(`urn:pulumi:e2e::p::${ADDRESS}::${name}`)
              .setType(ADDRESS)
              .setProperties(Struct.fromJavaScript({ name, project: PROJECT, region: REGION })),
            (err, res) => resolve(err ?? res.getId()),
          );
        });
      const perMinute =
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:123456789012'.";
      gce.injectFault({
        kind: "addresses",
        name: "limited",
        operation: "create",
        status: 403,
        reason: "rateLimitExceeded",
        message: perMinute,
        count: 2,
      });
      assert.equal(await create("limited"), `projects/${PROJECT}/regions/${REGION}/addresses/limited`);
      assert.equal(gce.calls()["POST /emulator/provider/create"], 3);
      gce.resetCalls();
      gce.injectFault({
        kind: "addresses",
        name: "capped",
        operation: "create",
        status: 403,
        reason: "quotaExceeded",
        message: "Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1.",
      });
      const refused = await create("capped");
      assert.ok(refused instanceof Error && "details" in refused);
      assert.equal(
        refused.details,
        "Error creating Address: googleapi: Error 403: Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1., quotaExceeded",
      );
      assert.equal(gce.calls()["POST /emulator/provider/create"], 1);
    });
  });
});
