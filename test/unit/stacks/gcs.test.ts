/** Reading a gs:// backend through the GCS JSON API (stacks/gcs.ts): pure parts, retries, bounds, and the same "unsure" rule as file://. */
import * as assert from "node:assert/strict";
import * as zlib from "node:zlib";
import fc from "fast-check";
import {
  GcsBackend,
  GcsClient,
  gcsLocation,
  MAX_IN_FLIGHT,
  retriable,
  stacksOfListing,
  storageEndpoint,
  type Fetch,
  type GcsLocation,
} from "../../../stacks/gcs";
import { stackNamesOf, type CheckpointRead } from "../../../stacks/checkpoints";

const DEPLOYMENT = {
  resources: [
    {
      urn: "urn:pulumi:cluster::dccm-c::pulumi:pulumi:Stack::dccm-c-cluster",
      type: "pulumi:pulumi:Stack",
      outputs: { dccmDesiredHash: "abc" },
    },
  ],
};
const CHECKPOINT = JSON.stringify({
  version: 3,
  checkpoint: { stack: "organization/dccm-c/cluster", latest: DEPLOYMENT },
});
const EMULATOR = { STORAGE_EMULATOR_HOST: "127.0.0.1:4443" };

describe("stacks/gcs: gcsLocation (the diy backend's bucket and prefix)", () => {
  const cases: [string, GcsLocation | undefined][] = [
    ["gs://acme-state/prod", { bucket: "acme-state", prefix: "prod/" }],
    ["gs://acme-state/prod/", { bucket: "acme-state", prefix: "prod/" }],
    ["gs://acme-state/a/b", { bucket: "acme-state", prefix: "a/b/" }],
    ["gs://acme-state", { bucket: "acme-state", prefix: "" }],
    ["gs://acme-state/", { bucket: "acme-state", prefix: "" }],
    // Options only the CLI's gcsblob knows: left to the CLI.
    ["gs://acme-state/prod?anonymous=true", undefined],
    ["gs://", undefined],
    ["file:///var/dccm", undefined],
    ["s3://acme-state/prod", undefined],
    ["https://api.pulumi.com", undefined],
  ];
  for (const [url, expected] of cases) it(url, () => assert.deepEqual(gcsLocation(url), expected));
});

describe("stacks/gcs: storageEndpoint and retriable", () => {
  const endpoints: [Record<string, string | undefined>, { root: string; emulator: boolean }][] = [
    [{}, { root: "https://storage.googleapis.com", emulator: false }],
    [{ STORAGE_EMULATOR_HOST: "" }, { root: "https://storage.googleapis.com", emulator: false }],
    [{ STORAGE_EMULATOR_HOST: "127.0.0.1:4443" }, { root: "http://127.0.0.1:4443", emulator: true }],
    [{ STORAGE_EMULATOR_HOST: "https://gcs.test:4443/" }, { root: "https://gcs.test:4443", emulator: true }],
  ];
  for (const [env, expected] of endpoints)
    it(`endpoint of ${JSON.stringify(env)}`, () => assert.deepEqual(storageEndpoint(env), expected));

  const statuses: [number, boolean][] = [
    [400, false],
    [401, false],
    [403, false],
    [408, true],
    [412, false],
    [429, true],
    [500, true],
    [502, true],
    [503, true],
  ];
  for (const [status, expected] of statuses)
    it(`HTTP ${status} ${expected ? "is" : "is not"} retried`, () => assert.equal(retriable(status), expected));
});

describe("stacks/gcs: stacksOfListing", () => {
  const dir = "p/.pulumi/stacks/dccm-c/";
  const journal = "p/.pulumi/journal/dccm-c/";
  it("the checkpoints directly in the project's directory, their encodings and journals", () => {
    const names = [
      `${dir}cluster.json`,
      `${dir}cluster.json.bak`,
      `${dir}web.json.gz`,
      `${dir}both.json`,
      `${dir}both.json.gz`,
      `${dir}sub/x.json`,
      "p/.pulumi/stacks/other/y.json",
    ];
    assert.deepEqual(
      [...stacksOfListing(dir, names, journal, [`${journal}web/0001`])],
      [
        ["both", { encodings: [".json", ".json.gz"], journaled: false }],
        ["cluster", { encodings: [".json"], journaled: false }],
        ["web", { encodings: [".json.gz"], journaled: true }],
      ],
    );
  });

  it("lists the stacks stackNamesOf finds among the direct children, whatever the names", () => {
    const name = fc.stringMatching(/^[a-z.]{1,8}(\.json|\.json\.gz|\.json\.zst|\.json\.bak|)$/);
    fc.assert(
      fc.property(fc.array(name), (files) => {
        const stacks = stacksOfListing(
          dir,
          files.map((file) => dir + file),
          journal,
          [],
        );
        assert.deepEqual([...stacks.keys()], stackNamesOf(files));
      }),
    );
  });
});

/** An in-memory bucket behind the JSON API's URLs; `answers` are served first, in order, whatever the request. */
class FakeBucket {
  readonly objects = new Map<string, Buffer>();
  readonly requests: string[] = [];
  answers: number[] = [];
  /** The status to answer a request (`METHOD ?prefix=…` or `METHOD name`) with instead of serving it. */
  refuse: (request: string) => number | undefined = () => undefined;
  pageSize = 2;

  constructor(readonly bucket = "acme-state") {}

  put(name: string, text: string | Buffer): void {
    this.objects.set(name, typeof text === "string" ? Buffer.from(text) : text);
  }

  readonly fetch: Fetch = (url, init) => {
    const parsed = new URL(url);
    const objectPath = decodeURIComponent(parsed.pathname.replace(`/storage/v1/b/${this.bucket}/o`, ""));
    this.requests.push(
      `${init.method} ${objectPath === "" ? `?prefix=${parsed.searchParams.get("prefix") ?? ""}` : objectPath.slice(1)}`,
    );
    const status = this.answers.shift() ?? this.refuse(this.requests[this.requests.length - 1]);
    if (status !== undefined) return Promise.resolve(new Response("{}", { status }));
    if (objectPath === "") {
      const prefix = parsed.searchParams.get("prefix") ?? "";
      const all = [...this.objects.keys()].filter((name) => name.startsWith(prefix)).sort();
      const start = Number(parsed.searchParams.get("pageToken") ?? "0");
      const next = start + this.pageSize < all.length ? String(start + this.pageSize) : undefined;
      return Promise.resolve(
        Response.json({
          items: all.slice(start, start + this.pageSize).map((name) => ({ name })),
          ...(next !== undefined ? { nextPageToken: next } : {}),
        }),
      );
    }
    const name = objectPath.slice(1);
    const bytes = this.objects.get(name);
    if (bytes === undefined) return Promise.resolve(new Response("{}", { status: 404 }));
    if (init.method === "DELETE") {
      this.objects.delete(name);
      return Promise.resolve(new Response(null, { status: 204 }));
    }
    return Promise.resolve(new Response(bytes));
  };
}

describe("stacks/gcs: GcsClient", () => {
  const sleeps: number[] = [];
  const client = (bucket: FakeBucket): GcsClient =>
    new GcsClient({
      env: EMULATOR,
      fetch: bucket.fetch,
      random: () => 0.5,
      sleep: (ms) => Promise.resolve(void sleeps.push(ms)),
    });
  beforeEach(() => sleeps.splice(0));

  it("lists every page of a prefix", async () => {
    const bucket = new FakeBucket();
    for (const name of ["a/1", "a/2", "a/3", "a/4", "a/5", "b/1"]) bucket.put(name, "x");
    assert.deepEqual(await client(bucket).list("acme-state", "a/"), ["a/1", "a/2", "a/3", "a/4", "a/5"]);
    assert.deepEqual(bucket.requests, ["GET ?prefix=a/", "GET ?prefix=a/", "GET ?prefix=a/"]);
  });

  it("retries 503 and 429 with full-jitter backoff, and reads the object", async () => {
    const bucket = new FakeBucket();
    bucket.put("a/1", "hello");
    bucket.answers = [503, 429, 503];
    assert.equal((await client(bucket).get("acme-state", "a/1"))?.toString(), "hello");
    assert.deepEqual(sleeps, [125, 250, 500]);
    assert.equal(bucket.requests.length, 4);
  });

  it("gives up after its attempts, naming the object and the last answer", async () => {
    const bucket = new FakeBucket();
    bucket.answers = [503, 503, 503, 503];
    await assert.rejects(client(bucket).get("acme-state", "a/1"), {
      name: "GcsRequestError",
      message: "reading gs://acme-state/a/1: HTTP 503",
    });
    assert.equal(bucket.requests.length, 4);
  });

  it("does not retry a refusal (403), and a 404 is no object", async () => {
    const bucket = new FakeBucket();
    bucket.answers = [403];
    await assert.rejects(client(bucket).list("acme-state", "a/"), {
      name: "GcsRequestError",
      message: "listing gs://acme-state/a/: HTTP 403",
    });
    assert.deepEqual([bucket.requests.length, sleeps], [1, []]);
    assert.equal(await client(bucket).get("acme-state", "missing"), undefined);
  });

  it(`holds at most ${MAX_IN_FLIGHT} requests in flight`, async () => {
    let inFlight = 0;
    let most = 0;
    const held: (() => void)[] = [];
    const slow: Fetch = () => {
      inFlight++;
      most = Math.max(most, inFlight);
      return new Promise((resolve) =>
        held.push(() => {
          inFlight--;
          resolve(new Response("x"));
        }),
      );
    };
    const gcs = new GcsClient({ env: EMULATOR, fetch: slow });
    let done = 0;
    const reads = Array.from({ length: 40 }, (_, index) => gcs.get("acme-state", `o/${index}`).then(() => done++));
    while (done < reads.length) {
      await new Promise((resolve) => setImmediate(resolve));
      held.shift()?.();
    }
    await Promise.all(reads);
    assert.equal(most, MAX_IN_FLIGHT);
  });
});

describe("stacks/gcs: GcsBackend", () => {
  const root = "prod/.pulumi/";
  const stacks = `${root}stacks/dccm-c/`;
  let bucket: FakeBucket;
  const backend = (): GcsBackend =>
    GcsBackend.fromUrl("gs://acme-state/prod", EMULATOR, {
      fetch: bucket.fetch,
      sleep: () => Promise.resolve(),
    }) as GcsBackend;
  beforeEach(() => {
    bucket = new FakeBucket();
    bucket.pageSize = 100;
    bucket.put(`${root}meta.yaml`, "version: 1\n");
  });

  it("a restart's reads: one listing, then one GET per stack; a later read lists that stack again", async () => {
    bucket.put(`${stacks}cluster.json`, CHECKPOINT);
    bucket.put(`${stacks}cluster.json.bak`, CHECKPOINT);
    bucket.put(`${stacks}service.default.web.json.gz`, zlib.gzipSync(CHECKPOINT));
    const gcs = backend();
    assert.deepEqual(await gcs.listStacks("dccm-c"), ["cluster", "service.default.web"]);
    const read: CheckpointRead = { kind: "read", version: 3, deployment: DEPLOYMENT };
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "cluster"), read);
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "service.default.web"), read);
    assert.deepEqual(bucket.requests, [
      `GET ?prefix=${root}meta.yaml`,
      `GET ?prefix=${stacks}`,
      `GET ?prefix=${root}journal/dccm-c/`,
      `GET ${root}meta.yaml`,
      `GET ${stacks}cluster.json`,
      `GET ${stacks}service.default.web.json.gz`,
    ]);
    bucket.requests.splice(0);
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "cluster"), read);
    assert.deepEqual(bucket.requests, [
      `GET ?prefix=${stacks}cluster.json`,
      `GET ?prefix=${root}journal/dccm-c/cluster/`,
      `GET ${stacks}cluster.json`,
    ]);
  });

  it("an empty bucket has no stacks", async () => {
    bucket.objects.clear();
    assert.deepEqual(await backend().listStacks("dccm-c"), []);
  });

  it("what it cannot read with certainty is unsure, as on file://", async () => {
    bucket.put(`${stacks}both.json`, CHECKPOINT);
    bucket.put(`${stacks}both.json.gz`, zlib.gzipSync(CHECKPOINT));
    bucket.put(`${stacks}zst.json.zst`, "x");
    bucket.put(`${stacks}badgz.json.gz`, "not gzip");
    bucket.put(`${stacks}journaled.json`, CHECKPOINT);
    bucket.put(`${root}journal/dccm-c/journaled/0001`, "{}");
    const gcs = backend();
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "both"), {
      kind: "unsure",
      reason: "the stack has checkpoints .json and .json.gz",
    });
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "zst"), {
      kind: "unsure",
      reason: "the checkpoint is zstd-compressed",
    });
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "badgz"), {
      kind: "unsure",
      reason: "reading the checkpoint failed (incorrect header check)",
    });
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "journaled"), {
      kind: "unsure",
      reason: "the stack has an update journal",
    });
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "gone"), { kind: "absent" });
    bucket.refuse = (request) => (request === `GET ?prefix=${stacks}both.json` ? 503 : undefined);
    assert.deepEqual(await gcs.readCheckpoint("dccm-c", "both"), {
      kind: "unsure",
      reason: `reading the checkpoint failed (listing gs://acme-state/${stacks}both.json: HTTP 503)`,
    });
  });

  it("a backend of another layout, or none declared, is read by the CLI", async () => {
    bucket.put(`${stacks}cluster.json`, CHECKPOINT);
    bucket.put(`${root}meta.yaml`, "version: 0\n");
    assert.deepEqual(await backend().listStacks("dccm-c"), { unsure: "backend layout version 0, not 1" });
    assert.deepEqual(await backend().readCheckpoint("dccm-c", "cluster"), {
      kind: "unsure",
      reason: "backend layout version 0, not 1",
    });
    bucket.objects.delete(`${root}meta.yaml`);
    assert.deepEqual(await backend().readCheckpoint("dccm-c", "cluster"), {
      kind: "unsure",
      reason: "the backend has no .pulumi/meta.yaml",
    });
  });

  it("clearStaleLocks removes the lock objects only, named under the backend's root", async () => {
    bucket.put(`${root}locks/organization/dccm-c/cluster/abc.json`, "{}");
    bucket.put(`${root}locks/organization/dccm-c/web/def.json`, "{}");
    bucket.put(`${stacks}cluster.json`, CHECKPOINT);
    const gcs = backend();
    assert.deepEqual(await gcs.clearStaleLocks(), [
      ".pulumi/locks/organization/dccm-c/cluster/abc.json",
      ".pulumi/locks/organization/dccm-c/web/def.json",
    ]);
    assert.deepEqual([...bucket.objects.keys()].sort(), [`${root}meta.yaml`, `${stacks}cluster.json`]);
    assert.deepEqual(await gcs.clearStaleLocks(), []);
  });
});
