// `dccm daemon` as a child process, stopped by its settings before it talks to the cluster:
// runDaemon wires flags → settings (daemon/config.ts) → Daemon, and reports every problem at once.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runDccm, type CliRun } from "../../support/cli";

const ROOT = path.resolve(__dirname, "../../../..");
const EXAMPLE_CONFIG = path.join(ROOT, "examples/dccm.yaml");

function dccm(...args: string[]): CliRun {
  return runDccm(args, { unset: ["PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"] });
}

describe("bin/dccm daemon: settings problems (child process)", function () {
  this.timeout(120_000);
  let tmp = "";
  let kubeconfig = "";
  let usage = "";
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-cli-daemon-"));
    // Never dialled: every case stops before the cluster would be asked.
    kubeconfig = path.join(tmp, "kubeconfig.yaml");
    fs.writeFileSync(
      kubeconfig,
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    );
    // A usage error of the daemon is one line, then where its help is (the whole help would bury the line).
    usage = "see dccm daemon --help\n";
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("a bad flag, a bad GCP key, a bad daemon key and a bad node controller key: one list, exit 2, each named as written", () => {
    const config = path.join(tmp, "bad.yaml");
    fs.writeFileSync(config, `${fs.readFileSync(EXAMPLE_CONFIG, "utf8")}nodeWorkers: 0\noperationTimeout: 20 m\n`);
    const run = dccm(
      "daemon",
      "--kubeconfig",
      kubeconfig,
      "--config",
      config,
      "--parallelism",
      "0",
      "--region",
      "Europe",
    );
    assert.deepStrictEqual(run, {
      status: 2,
      stdout: "",
      stderr:
        "dccm: invalid configuration:\n" +
        '  region: "Europe" is not a GCP region (like us-central1)\n' +
        '  --parallelism: expected a whole number ≥ 1, got "0"\n' +
        '  operationTimeout: expected a duration such as 30s, 10m or 1h30m, got "20 m"\n' +
        "  nodeWorkers: expected an integer from 1 to 100, got 0\n",
    });
  });

  it("no clusterId and another problem: the problem, before the cluster is asked (its server is unreachable)", () => {
    const config = path.join(tmp, "no-cluster-id.yaml");
    fs.writeFileSync(config, fs.readFileSync(EXAMPLE_CONFIG, "utf8").replace(/^clusterId:.*\n/m, ""));
    const run = dccm("daemon", "--kubeconfig", kubeconfig, "--config", config, "--drift-interval", "10");
    assert.deepStrictEqual(run, {
      status: 2,
      stdout: "",
      stderr:
        'dccm: invalid configuration:\n  --drift-interval: expected a duration such as 30s, 10m or 1h30m, got "10"\n',
    });
  });

  it("the flags no key sets are read first, as usage errors, all of them", () => {
    const run = dccm(
      "daemon",
      "--config",
      path.join(tmp, "never-read.yaml"),
      "--shutdown-timeout",
      "30",
      "--confirm-orphan-destroys",
      "x",
    );
    assert.deepStrictEqual(run, {
      status: 2,
      stdout: "",
      stderr:
        'dccm: --shutdown-timeout: expected a duration such as 30s, 10m or 1h30m, got "30"; ' +
        `--confirm-orphan-destroys: expected a whole number ≥ 0, got "x"\n${usage}`,
    });
  });
});
