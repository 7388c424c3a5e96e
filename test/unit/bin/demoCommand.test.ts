// `dccm demo`'s pure parts: the launcher's line checked, and the daemon's command line (the demo
// run end to end: test/e2e/demo.e2e.ts).
import * as assert from "node:assert/strict";
import { DEMO_BINARIES, demoDaemonArgs, parseLaunchedEnvironment } from "../../../bin/demoCommand";
import { demoFiles } from "../../../bin/demoSetup";

const LINE = {
  kubeconfig: "/tmp/k/admin.kubeconfig",
  computeEndpoint: "http://127.0.0.1:4000/compute/v1/",
  backendUrl: "gs://dccm-e2e-state/dccm",
  dir: "/tmp/d",
  env: { PULUMI_HOME: "/tmp/d/pulumi-home" },
};

describe("bin/demoCommand", () => {
  it("the launcher's JSON line is read whole", () => {
    assert.deepEqual(parseLaunchedEnvironment(JSON.stringify(LINE)), LINE);
  });

  for (const [what, line, message] of [
    [
      "not JSON",
      "testenv: building",
      `the offline environment's launcher printed "testenv: building", not its JSON line`,
    ],
    [
      "no backendUrl (a launcher of another version)",
      JSON.stringify({ ...LINE, backendUrl: undefined }),
      `the offline environment's launcher printed ${JSON.stringify(JSON.stringify({ ...LINE, backendUrl: undefined }))}: expected kubeconfig, computeEndpoint, backendUrl, dir and env`,
    ],
    [
      "an env value not a string",
      JSON.stringify({ ...LINE, env: { PORT: 1 } }),
      `the offline environment's launcher printed ${JSON.stringify(JSON.stringify({ ...LINE, env: { PORT: 1 } }))}: expected kubeconfig, computeEndpoint, backendUrl, dir and env`,
    ],
  ] as const) {
    it(`the launcher's line refused: ${what}`, () => {
      assert.throws(() => parseLaunchedEnvironment(line), { message });
    });
  }

  it("the daemon reads the demo's config file; only the kubeconfig, the listener and the identity are flags", () => {
    assert.deepEqual(demoDaemonArgs(LINE, demoFiles("/tmp/d/demo"), "127.0.0.1:0"), [
      "--kubeconfig",
      "/tmp/k/admin.kubeconfig",
      "--config",
      "/tmp/d/demo/dccm.yaml",
      "--listen",
      "127.0.0.1:0",
      "--identity",
      "dccm-demo",
      "--log-level",
      "info",
    ]);
  });

  it("builds only what it starts: no helm, no stock CCM", () => {
    assert.deepEqual(DEMO_BINARIES, ["kube-apiserver", "etcd", "pulumi", "pulumi-language-nodejs", "fake-gcs-server"]);
  });
});
