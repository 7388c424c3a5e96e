// `dccm gc` as a child process, up to the point where it would talk to the cluster: its help, and
// the usage errors that stop it before anything is read (what it lists and deletes against a real
// apiserver, engine and emulator is test/e2e/leaks.e2e.ts).
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runDccm, type CliRun } from "../../support/cli";

const ROOT = path.resolve(__dirname, "../../../..");
const EXAMPLE_CONFIG = path.join(ROOT, "examples/dccm.yaml");

const GC_HELP = [
  "usage: dccm gc [--kubeconfig FILE] [--config FILE] [FLAG ...] --dry-run | --yes | RESOURCE ...",
  "lists the GCE resources of this cluster that no stack owns and says why each is taken for this cluster's;",
  "deletes only proven ones (dccm's ledger in the cluster, or the cluster ID in name and description), and only",
  "those confirmed: --yes for all of them, or each RESOURCE (kind/scope/name, as --dry-run prints it).",
  "  --dry-run                            print the leaks, delete nothing",
  "  --yes                                delete every proven leak",
  "  --kubeconfig FILE                    the cluster (default: $KUBECONFIG, else ~/.kube/config)",
  "  --config FILE                        the config file of dccm daemon (GCP keys, stateDir, backendUrl, computeEndpoint)",
  "  --state-dir DIR                      [stateDir] where the daemon's default backend is (default /var/lib/dccm)",
  "  --backend-url URL                    [backendUrl] the daemon's Pulumi backend (default $PULUMI_BACKEND_URL, else file://<state-dir>/backend)",
  "  --compute-endpoint URL               [computeEndpoint] Compute API (default https://compute.googleapis.com/compute/v1/, credentials from ADC)",
  "  -h, --help                           print this help",
  "and the GCP flags of dccm daemon --help (--project, --clusterId, ...).",
  "",
].join("\n");

function dccm(...args: string[]): CliRun {
  return runDccm(args);
}

describe("bin/dccm gc (child process, before it talks to the cluster)", function () {
  this.timeout(120_000);
  let tmp: string;
  let kubeconfig: string;
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-gc-cli-"));
    // Never dialled: every check below comes first.
    kubeconfig = path.join(tmp, "kubeconfig.yaml");
    fs.writeFileSync(
      kubeconfig,
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    );
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("dccm gc --help (and -h) prints its flags, exit 0", () => {
    for (const flag of ["--help", "-h"])
      assert.deepStrictEqual(dccm("gc", flag), { status: 0, stdout: GC_HELP, stderr: "" }, flag);
  });

  it("every flag its help lists is accepted by its parser (all at once, then --help)", () => {
    const args = [
      "--dry-run",
      "--yes",
      "--kubeconfig",
      "x",
      "--config",
      "x",
      "--state-dir",
      "x",
      "--backend-url",
      "x",
      "--compute-endpoint",
      "x",
      "--project",
      "x",
      "--clusterId",
      "x",
    ];
    assert.deepStrictEqual(dccm("gc", ...args, "--help"), { status: 0, stdout: GC_HELP, stderr: "" });
  });

  const usageErrors: Array<[string, string[], string]> = [
    [
      "nothing confirmed and no dry run",
      ["--kubeconfig", "K", "--config", EXAMPLE_CONFIG],
      "gc deletes only what you confirm: --dry-run to see the leaks, then --yes (every proven leak) or the resources by name (dccm gc --help)",
    ],
    [
      "--dry-run and --yes at once",
      ["--dry-run", "--yes"],
      "gc: --dry-run, --yes and RESOURCE names exclude each other",
    ],
    [
      "--yes and names at once",
      ["--yes", "forwardingRules/us-central1/a1"],
      "gc: --dry-run, --yes and RESOURCE names exclude each other",
    ],
    [
      "a name that is not kind/scope/name",
      ["a1"],
      'gc: "a1" is not a resource as --dry-run prints it (kind/scope/name)',
    ],
    ["an unknown flag", ["--dry-run", "--force"], "unknown flag --force"],
  ];
  for (const [title, args, message] of usageErrors) {
    it(`${title}: exit 2, the message and where gc's usage is, nothing on stdout`, () => {
      const run = dccm("gc", ...args.map((arg) => (arg === "K" ? kubeconfig : arg)));
      assert.deepStrictEqual(run, { status: 2, stdout: "", stderr: `dccm: ${message}\nsee dccm gc --help\n` });
    });
  }

  it("a config key no command knows: exit 2, named", () => {
    const file = path.join(tmp, "typo.yaml");
    fs.writeFileSync(file, `${fs.readFileSync(EXAMPLE_CONFIG, "utf8")}lisen: 127.0.0.1:10258\n`);
    const run = dccm("gc", "--dry-run", "--kubeconfig", kubeconfig, "--config", file);
    assert.equal(run.status, 2);
    assert.equal(run.stdout, "");
    assert.match(run.stderr, /^dccm: invalid configuration:\n {2}lisen: unknown key \(GCP keys: /);
  });

  it("a cluster it cannot reach: exit 1, saying what failed, nothing on stdout", () => {
    const run = dccm("gc", "--dry-run", "--kubeconfig", kubeconfig, "--config", EXAMPLE_CONFIG);
    assert.deepStrictEqual(run, {
      status: 1,
      stdout: "",
      stderr:
        "dccm gc: reading Namespace kube-system (its UID identifies the cluster the stacks belong to): " +
        "request to https://127.0.0.1:1/api/v1/namespaces/kube-system failed, reason: connect ECONNREFUSED 127.0.0.1:1\n",
    });
  });

  it("a computeEndpoint that is not a URL: exit 2, named", () => {
    const run = dccm(
      "gc",
      "--dry-run",
      "--kubeconfig",
      kubeconfig,
      "--config",
      EXAMPLE_CONFIG,
      "--compute-endpoint",
      "compute",
    );
    assert.deepStrictEqual(run, {
      status: 2,
      stdout: "",
      stderr:
        'dccm: invalid configuration:\n  computeEndpoint: expected an http(s) URL such as https://compute.googleapis.com/compute/v1/, got "compute"\n',
    });
  });
});
