/** The one reader of a backend (stacks/reader.ts) on a file:// backend, and the one identity check (stacks/identity.ts). */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { StackReader } from "../../../stacks/reader";
import { checkStackIdentity, isForeignStack, recordedClusterUid } from "../../../stacks/identity";

const OURS = "0ur00000-0000-4000-8000-000000000001";
const OTHER = "0ther000-0000-4000-8000-000000000009";
const withUid = (uid: string): Record<string, unknown> => ({
  resources: [{ urn: "urn:stack", type: "pulumi:pulumi:Stack", outputs: { dccmClusterUid: uid } }],
});

describe("stacks/reader: StackReader on a file:// backend", () => {
  let dir: string;
  const stacks = (): string => path.join(dir, "backend", ".pulumi", "stacks", "dccm-c");
  const reader = (unsure: string[] = []): StackReader =>
    new StackReader({
      backendUrl: `file://${path.join(dir, "backend")}`,
      projectName: "dccm-c",
      workDir: path.join(dir, "workspaces"),
      onCheckpointUnsure: (stack, reason) => unsure.push(`${stack}: ${reason}`),
    });
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-reader-"));
    fs.mkdirSync(stacks(), { recursive: true });
    fs.writeFileSync(path.join(dir, "backend", ".pulumi", "meta.yaml"), "version: 1\n");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("lists the project's stacks and reads their checkpoint files, no CLI and no workspace", async () => {
    fs.writeFileSync(
      path.join(stacks(), "service.default.web.json"),
      JSON.stringify({ version: 3, checkpoint: { latest: withUid(OURS) } }),
    );
    fs.writeFileSync(path.join(stacks(), "cluster.json"), JSON.stringify({ version: 3, checkpoint: {} }));
    const read = reader();
    assert.deepEqual(await read.listStacks(), ["cluster", "service.default.web"]);
    assert.deepEqual(await read.readDeployment("service.default.web"), withUid(OURS));
    assert.deepEqual(await read.exportStack("service.default.web"), { version: 3, deployment: withUid(OURS) });
    // A stack never updated records no deployment.
    assert.equal(await read.readDeployment("cluster"), undefined);
    // A stack whose checkpoint is gone since the listing records none either.
    assert.equal(await read.readListed("service.default.gone"), undefined);
    assert.equal(read.readsCheckpoints, true);
    assert.equal(fs.existsSync(path.join(dir, "workspaces")), false);
  });

  it("tells what it cannot read with certainty", async () => {
    fs.writeFileSync(path.join(stacks(), "cluster.json.zst"), "x");
    const unsure: string[] = [];
    assert.equal(await reader(unsure).readCheckpoint("cluster"), undefined);
    assert.deepEqual(unsure, ["cluster: the checkpoint is zstd-compressed"]);
  });

  it("reads file:// and gs:// directly, nothing when told not to, or for another backend", () => {
    assert.equal(
      new StackReader({ backendUrl: `file://${dir}`, projectName: "p", workDir: dir, readCheckpoints: false })
        .readsCheckpoints,
      false,
    );
    assert.equal(
      new StackReader({
        backendUrl: "gs://bucket/dccm",
        projectName: "p",
        workDir: dir,
        env: { STORAGE_EMULATOR_HOST: "127.0.0.1:1" },
      }).readsCheckpoints,
      true,
    );
    assert.equal(
      new StackReader({ backendUrl: "gs://bucket/dccm?anonymous=true", projectName: "p", workDir: dir })
        .readsCheckpoints,
      false,
    );
    assert.equal(
      new StackReader({ backendUrl: "s3://bucket/dccm", projectName: "p", workDir: dir }).readsCheckpoints,
      false,
    );
    assert.equal(
      new StackReader({ backendUrl: "https://api.pulumi.com", projectName: "p", workDir: dir }).readsCheckpoints,
      false,
    );
  });
});

describe("stacks/identity: whose a stack is", () => {
  it("a stack recording another cluster's identity is foreign; one recording none, or ours, is not", () => {
    assert.equal(isForeignStack(OTHER, OURS), true);
    assert.equal(isForeignStack(OURS, OURS), false);
    assert.equal(isForeignStack(undefined, OURS), false);
    assert.equal(isForeignStack(OTHER, undefined), false);
    assert.equal(recordedClusterUid(withUid(OTHER)), OTHER);
    assert.equal(recordedClusterUid({ resources: [] }), undefined);
  });

  it("checkStackIdentity throws ForeignStackError for a foreign stack only", () => {
    checkStackIdentity("cluster", OURS, OURS);
    checkStackIdentity("cluster", undefined, OURS);
    assert.throws(() => checkStackIdentity("cluster", OTHER, OURS), {
      name: "ForeignStackError",
      message: `stack cluster belongs to the cluster whose kube-system Namespace has UID ${OTHER}, and this cluster's is ${OURS}: refusing to touch it (check --kubeconfig, clusterId and the backend)`,
    });
  });
});
