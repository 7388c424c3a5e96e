/** Reading a file:// backend without the CLI (stacks/checkpoints.ts): certain reads, and "unsure" for everything else. */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import fc from "fast-check";
import {
  FileBackend,
  layoutVersion,
  parseCheckpoint,
  stackNamesOf,
  type CheckpointRead,
} from "../../../stacks/checkpoints";
import { holdsSecret } from "../../../stacks/deployment";
import { hasProgramOutputs, PROGRAM_OUTPUTS } from "../../../components/outputs";

const DEPLOYMENT = {
  manifest: { time: "2026-11-23T11:22:36Z", magic: "m", version: "v3.248.0" },
  resources: [
    {
      urn: "urn:pulumi:cluster::dccm-c::pulumi:pulumi:Stack::dccm-c-cluster",
      type: "pulumi:pulumi:Stack",
      outputs: { dccmDesiredHash: "abc" },
    },
  ],
};

function checkpoint(latest: unknown, version: unknown = 3, features?: unknown): string {
  return JSON.stringify({
    version,
    ...(features === undefined ? {} : { features }),
    checkpoint: { stack: "organization/dccm-c/cluster", ...(latest === undefined ? {} : { latest }) },
  });
}

describe("checkpoints: layoutVersion (.pulumi/meta.yaml)", () => {
  const cases: [string, string, number | undefined][] = [
    ["the project layout", "version: 1\n", 1],
    ["an empty file (legacy)", "", 0],
    ["no version key (legacy)", "other: x\n", 0],
    ["a future layout", "version: 2\n", 2],
    ["not a number", "version: one\n", undefined],
    ["not YAML", "version: [1\n", undefined],
    ["a list", "- 1\n", undefined],
  ];
  for (const [name, text, expected] of cases) it(name, () => assert.equal(layoutVersion(text), expected));
});

describe("checkpoints: parseCheckpoint", () => {
  const cases: [string, string, CheckpointRead][] = [
    ["a deployment", checkpoint(DEPLOYMENT), { kind: "read", version: 3, deployment: DEPLOYMENT }],
    ["a stack never updated (no latest)", checkpoint(undefined), { kind: "read", version: 3, deployment: undefined }],
    ["a stack never updated (latest null)", checkpoint(null), { kind: "read", version: 3, deployment: undefined }],
    [
      "version 4 with its features",
      checkpoint(DEPLOYMENT, 4, ["replaceWith"]),
      { kind: "read", version: 4, features: ["replaceWith"], deployment: DEPLOYMENT },
    ],
    [
      "features that are not names",
      checkpoint(DEPLOYMENT, 4, [1]),
      { kind: "unsure", reason: "the checkpoint's `features` is not a list of names" },
    ],
    [
      "a later checkpoint version",
      checkpoint(DEPLOYMENT, 5),
      { kind: "unsure", reason: "checkpoint version 5, not 3 or 4" },
    ],
    [
      "no version",
      JSON.stringify({ checkpoint: { latest: DEPLOYMENT } }),
      { kind: "unsure", reason: "checkpoint version undefined, not 3 or 4" },
    ],
    [
      "no checkpoint object",
      JSON.stringify({ version: 3 }),
      { kind: "unsure", reason: "the checkpoint has no `checkpoint` object" },
    ],
    ["latest not an object", checkpoint([1]), { kind: "unsure", reason: "the checkpoint's `latest` is not an object" }],
    [
      "truncated JSON",
      checkpoint(DEPLOYMENT).slice(0, 40),
      { kind: "unsure", reason: `the checkpoint is not JSON (${jsonError(checkpoint(DEPLOYMENT).slice(0, 40))})` },
    ],
  ];
  for (const [name, text, expected] of cases) it(name, () => assert.deepEqual(parseCheckpoint(text), expected));

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const read = parseCheckpoint(text);
        return read.kind === "unsure" || read.kind === "read";
      }),
    );
  });
});

function jsonError(text: string): string {
  try {
    JSON.parse(text);
    return "";
  } catch (error) {
    return (error as Error).message;
  }
}

describe("checkpoints: stackNamesOf (what `pulumi stack ls` lists)", () => {
  it("takes .json, .json.gz and .json.zst, once each, and leaves backups and sidecars", () => {
    assert.deepEqual(
      stackNamesOf([
        "cluster.json",
        "cluster.json.attrs",
        "cluster.json.bak",
        "cluster.json.bak.attrs",
        "service.default.web.json.gz",
        "service.default.web.json.gz.attrs",
        "service.default.api.json.zst",
        "service.default.both.json",
        "service.default.both.json.gz",
        ".json",
        "notes.txt",
      ]),
      ["cluster", "service.default.api", "service.default.both", "service.default.web"],
    );
  });
});

describe("checkpoints: FileBackend", () => {
  let dir: string;
  let backend: FileBackend;
  const stacks = (): string => path.join(dir, ".pulumi", "stacks", "dccm-c");

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-checkpoints-"));
    backend = new FileBackend(dir);
    fs.mkdirSync(stacks(), { recursive: true });
    fs.writeFileSync(path.join(dir, ".pulumi", "meta.yaml"), "version: 1\n");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("is only made for file:// URLs", () => {
    assert.equal(FileBackend.fromUrl("file:///var/dccm/backend")?.dir, "/var/dccm/backend");
    assert.equal(FileBackend.fromUrl("gs://bucket/dccm"), undefined);
    assert.equal(FileBackend.fromUrl("https://api.pulumi.com"), undefined);
  });

  it("reads a plain and a gzipped checkpoint; a missing one is absent", () => {
    fs.writeFileSync(path.join(stacks(), "cluster.json"), checkpoint(DEPLOYMENT));
    fs.writeFileSync(path.join(stacks(), "service.default.web.json.gz"), zlib.gzipSync(checkpoint(DEPLOYMENT)));
    assert.deepEqual(backend.readCheckpoint("dccm-c", "cluster"), { kind: "read", version: 3, deployment: DEPLOYMENT });
    assert.deepEqual(backend.readCheckpoint("dccm-c", "service.default.web"), {
      kind: "read",
      version: 3,
      deployment: DEPLOYMENT,
    });
    assert.deepEqual(backend.readCheckpoint("dccm-c", "service.default.api"), { kind: "absent" });
    assert.deepEqual(backend.listStacks("dccm-c"), ["cluster", "service.default.web"]);
    assert.deepEqual(backend.listStacks("dccm-other"), []);
  });

  it("leaves to the CLI what it cannot be sure of", () => {
    fs.writeFileSync(path.join(stacks(), "both.json"), checkpoint(DEPLOYMENT));
    fs.writeFileSync(path.join(stacks(), "both.json.gz"), zlib.gzipSync(checkpoint(DEPLOYMENT)));
    fs.writeFileSync(path.join(stacks(), "zst.json.zst"), "x");
    fs.writeFileSync(path.join(stacks(), "badgz.json.gz"), "not gzip");
    fs.writeFileSync(path.join(stacks(), "journaled.json"), checkpoint(DEPLOYMENT));
    fs.mkdirSync(path.join(dir, ".pulumi", "journal", "dccm-c", "journaled"), { recursive: true });
    fs.writeFileSync(path.join(dir, ".pulumi", "journal", "dccm-c", "journaled", "manifest.json"), "{}");
    assert.deepEqual(backend.readCheckpoint("dccm-c", "both"), {
      kind: "unsure",
      reason: "the stack has checkpoints .json and .json.gz",
    });
    assert.deepEqual(backend.readCheckpoint("dccm-c", "zst"), {
      kind: "unsure",
      reason: "the checkpoint is zstd-compressed",
    });
    assert.deepEqual(backend.readCheckpoint("dccm-c", "badgz"), {
      kind: "unsure",
      reason: "reading the checkpoint failed (incorrect header check)",
    });
    assert.deepEqual(backend.readCheckpoint("dccm-c", "journaled"), {
      kind: "unsure",
      reason: "the stack has an update journal",
    });
  });

  it("an empty journal directory (cleaned up after an update) is no journal", () => {
    fs.writeFileSync(path.join(stacks(), "cluster.json"), checkpoint(DEPLOYMENT));
    fs.mkdirSync(path.join(dir, ".pulumi", "journal", "dccm-c", "cluster"), { recursive: true });
    assert.deepEqual(backend.readCheckpoint("dccm-c", "cluster"), { kind: "read", version: 3, deployment: DEPLOYMENT });
  });

  it("without the project layout (meta.yaml version 1) nothing is read", () => {
    fs.writeFileSync(path.join(stacks(), "cluster.json"), checkpoint(DEPLOYMENT));
    fs.rmSync(path.join(dir, ".pulumi", "meta.yaml"));
    assert.deepEqual(backend.readCheckpoint("dccm-c", "cluster"), {
      kind: "unsure",
      reason: "the backend has no .pulumi/meta.yaml",
    });
    assert.deepEqual(backend.listStacks("dccm-c"), { unsure: "the backend has no .pulumi/meta.yaml" });
    fs.writeFileSync(path.join(dir, ".pulumi", "meta.yaml"), "");
    assert.deepEqual(backend.readCheckpoint("dccm-c", "cluster"), {
      kind: "unsure",
      reason: "backend layout version 0, not 1",
    });
  });

  it("a backend nothing was written to has no stacks", () => {
    fs.rmSync(path.join(dir, ".pulumi"), { recursive: true });
    assert.deepEqual(backend.listStacks("dccm-c"), []);
  });
});

describe("checkpoints: holdsSecret (an up's outputs from the checkpoint only when none is a secret)", () => {
  const secret = { "4dabf18193072939515e22adc298c6dd": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "v1:abc" };
  const asset = { "4dabf18193072939515e22adc298c6dd": "c44067f5952c0a294b673a41bacd8c17", text: "x" };
  const cases: [string, unknown, boolean][] = [
    ["plain outputs", { dccmDesiredHash: "abc", loadBalancers: { "default/web": { ingress: ["34.1.2.3"] } } }, false],
    ["a secret at the top", { token: secret }, true],
    ["a secret deep in a map", { loadBalancers: { "default/web": { resources: { key: secret } } } }, true],
    ["a secret in a list", { list: ["a", secret] }, true],
    ["another signature (an asset)", { file: asset }, false],
    ["nothing", {}, false],
  ];
  for (const [name, outputs, expected] of cases) it(name, () => assert.equal(holdsSecret(outputs), expected));
});

describe("stacks: hasProgramOutputs (an up that recorded no stack outputs runs once more)", () => {
  const cases: [string, Record<string, unknown>, boolean][] = [
    [
      "a Service stack's outputs",
      {
        loadBalancers: { "default/web": { ingress: ["34.1.2.3"] } },
        instanceGroups: {},
        routes: {},
        dccmDesiredHash: "abc",
      },
      true,
    ],
    [
      "the cluster stack's (empty maps)",
      { loadBalancers: {}, instanceGroups: { "us-central1-a": "k8s-ig--c" }, routes: {} },
      true,
    ],
    ["nothing recorded (seen once in CI)", {}, false],
    ["only the hash", { dccmDesiredHash: "abc" }, false],
    ["loadBalancers missing", { instanceGroups: {}, routes: {} }, false],
    ["routes not a map", { loadBalancers: {}, instanceGroups: {}, routes: "x" }, false],
  ];
  for (const [name, outputs, expected] of cases) it(name, () => assert.equal(hasProgramOutputs(outputs), expected));
  it("names the program's outputs", () =>
    assert.deepEqual(PROGRAM_OUTPUTS, ["loadBalancers", "instanceGroups", "routes"]));
});
