// `dccm desired` / `dccm render` as child processes: exit codes, stdout JSON, exact stderr.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";

import * as YAML from "yaml";
import { splitConfig } from "../../../daemon/config";
import { CONFIG_KEYS, parseConfig } from "../../../model/config";
import { desiredState } from "../../../model/desired";
import type { DesiredState } from "../../../model/types";
import { snapshotFromKubectlJson } from "../../../watcher/kubectlDump";

const ROOT = path.resolve(__dirname, "../../../..");
const SNAPSHOT = path.join(ROOT, "test/fixtures/cluster.json");
const CONFIG = path.join(ROOT, "test/fixtures/config.json");

/** The usage text, exactly as `dccm help` prints it. */
import { deployObjects, manifestsYaml } from "../../../deploy/manifests";
import { MANIFESTS_HELP } from "../../../bin/manifestsCommand";
import { PREVIEW_HELP } from "../../../bin/previewCommand";
import { DESIRED_HELP, RENDER_HELP } from "../../../bin/options";
import { DAEMON_HELP as SOURCE_DAEMON_HELP } from "../../../bin/daemonCommand";
import { GC_HELP as SOURCE_GC_HELP } from "../../../bin/gcCommand";
import { ADOPT_HELP as SOURCE_ADOPT_HELP } from "../../../bin/adoptCommand";
import { STATUS_HELP } from "../../../bin/statusCommand";
import { DEMO_HELP } from "../../../bin/demoCommand";
import { DRIFT_HELP } from "../../../bin/driftCommand";
import { REFRESH_HELP } from "../../../bin/refreshCommand";
import { runDccm, type CliRun } from "../../support/cli";

const USAGE = [
  "usage:",
  "  dccm demo    [--listen HOST:PORT]                                  the main job with no cluster and no GCP account: apiserver, GCE emulator, daemon (dccm demo --help)",
  "  dccm desired --snapshot FILE [--config FILE] [--<key> VALUE ...]   print the DesiredState JSON",
  "  dccm render  --snapshot FILE [--config FILE] [--<key> VALUE ...]   print every resource the stack program declares",
  "  dccm daemon  [--kubeconfig FILE] [--config FILE] [FLAG ...]        run the controller (its flags: dccm daemon --help)",
  "  dccm gc      --dry-run | --yes | RESOURCE ... [FLAG ...]           list leaked GCE resources, delete proven ones (dccm gc --help)",
  "  dccm adopt   [--dry-run] [--allow-replace] [FLAG ...]              adopt the stock GCE CCM's load balancers and routes (dccm adopt --help)",
  "  dccm manifests --config FILE --image IMAGE [FLAG ...]            print the in-cluster install as YAML (dccm manifests --help)",
  "  dccm preview [--snapshot FILE] [--json] [FLAG ...]                 what the daemon would change: exit 0 none, 2 some, 1 error (dccm preview --help)",
  "  dccm status  [--url URL] [--config FILE] [--json]                  one row per stack, from the daemon or its backend (dccm status --help)",
  "  dccm drift   [--json] [FLAG ...]                                   what differs in GCE from the stacks, changing nothing: exit 0 none, 2 some, 1 error (dccm drift --help)",
  "  dccm refresh NAMESPACE/NAME [--timeout DURATION]                   refresh one Service's stack now, print the daemon's answer (dccm refresh --help)",
  "  dccm help                                                          print this text",
  "  dccm version                                                       print the version (also --version)",
  "one config file (YAML or JSON) serves every command: desired and render ignore the daemon's and node controller's keys",
  "config keys (file or flags): project region network subnetwork nodeTags clusterName clusterId clusterCIDR backendMode configureRoutes podCIDRSource podCIDRStack loadBalancerClasses instanceGroupLimit enableL4DenyFirewall instanceGroupZones addressReservation healthCheckSourceRanges healthCheckSourceRangesIPv6 nodeHealthCheckPort nodeHealthCheckPath networkProject firewallManagement",
  "",
].join("\n");

/** `dccm daemon --help`, exactly: every flag the daemon accepts, with its config key and default. */
const DAEMON_HELP = [
  "usage: dccm daemon [--kubeconfig FILE] [--config FILE] [FLAG ...]",
  "runs the service controller and the node controller. Durations: 500ms, 30s, 10m, 1h.",
  "daemon flags (a flag wins over the config file key in brackets):",
  "  --kubeconfig FILE                    the cluster (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)",
  "  --config FILE                        YAML or JSON file of the keys below (one file serves every dccm command)",
  "  --state-dir DIR                      [stateDir] stack workspaces and the default backend, mode 0700 (default /var/lib/dccm)",
  "  --listen HOST:PORT                   [listen] /healthz, /readyz, /metrics and /status, GET and HEAD only (default 0.0.0.0:10258)",
  "  --parallelism N                      [parallelism] stacks run at once (default: one per core, at most one per 512 MiB of memory beyond 256 MiB)",
  "  --drift-interval DURATION            [driftInterval] list GCE this often and up --refresh the stacks that drifted, ±10 % (default 10m)",
  "  --full-refresh-interval DURATION     [fullRefreshInterval] up --refresh of every stack, spread over this period, at most half the workers at once (default 24h)",
  "  --backend-url URL                    [backendUrl] Pulumi backend (default $PULUMI_BACKEND_URL, else file://<state-dir>/backend)",
  "  --secrets-provider URL               [secretsProvider] stack encryption, e.g. gcpkms://… (default: the passphrase in $PULUMI_CONFIG_PASSPHRASE or $PULUMI_CONFIG_PASSPHRASE_FILE)",
  "  --compute-endpoint URL               [computeEndpoint] Compute API of the node controller and the leak check (default https://compute.googleapis.com/compute/v1/, credentials from ADC)",
  "  --operation-timeout DURATION         [operationTimeout] a pulumi run (up, refresh, destroy) still going after this is cancelled and retried (default 20m)",
  "  --shutdown-timeout DURATION          on SIGTERM, exit 1 if stopping takes longer than this (default 30s)",
  "  --confirm-orphan-destroys N          allow up to N held destroys of stacks whose Service is absent (held when more than 5, or more than half, at once; default 0)",
  "  --adopt                              at start-up, adopt the stock GCE CCM's load balancers and routes into dccm's stacks, keeping every IP (dccm adopt --help)",
  "  --allow-replace                      with --adopt: adopt stacks even where the first up would replace a resource",
  "  --no-leader-election                 [leaderElection: false] no Lease kube-system/dccm: run a single replica only",
  "  --no-node-controller                 run the service controller only (Node initialization, addresses and lifecycle are left to another controller)",
  "  --shared-provider                    start the gcp provider plugin once and attach every pulumi run to it, restarted when it exits (default: one plugin per run; see the README before using it with Google's plugin)",
  "  --identity NAME                      holder identity in the Lease (default <hostname>_<pid>)",
  "  --log-level LEVEL                    fatal, error, warn, info, debug, trace or silent (default info)",
  "  -h, --help                           print this help",
  "node controller flags (each wins over the config file key of the same name):",
  "  --nodeAddressRefreshPeriod DURATION  Node addresses are refreshed this often (default 5m)",
  "  --nodeLifecyclePeriod DURATION       NotReady Nodes are checked this often (default 30s)",
  "  --nodeWorkers N                      Nodes reconciled at once, 1 to 100 (default 10)",
  "  --nodeZones ZONE,…                   zones searched for Nodes without spec.providerID (default: the region's zones)",
  "GCP flags (each wins over the config file key of the same name; dccm desired and dccm render read them too):",
  "  --project ID                         GCP project of every resource (required)",
  "  --region REGION                      region of the load balancers (required)",
  "  --network NAME                       VPC network of the nodes (required)",
  "  --subnetwork NAME                    default subnetwork of internal load balancers",
  "  --nodeTags TAG,…                     network tags of the nodes: the target of every firewall (required)",
  "  --clusterName NAME                   routes are named <clusterName cut to 26>-<node UID> (required)",
  "  --clusterId ID                       names the instance groups and the node health check (required unless ConfigMap kube-system/ingress-uid has it)",
  "  --clusterCIDR CIDR                   pod range: a node podCIDR outside it gets no route",
  "  --backendMode MODE                   backend-service, target-pool (external only) or neg (default backend-service)",
  "  --configureRoutes BOOL               one route per node podCIDR (default true; false with podCIDRSource cloud)",
  "  --podCIDRSource SOURCE               none (kube-controller-manager allocates) or cloud (each VM's alias IP range; no routes) (default none)",
  "  --podCIDRStack STACK                 with podCIDRSource cloud: IPv4, IPv4_IPv6, IPv6_IPv4 or IPv6 (default IPv4)",
  "  --loadBalancerClasses CLASS,…        loadBalancerClass values handled besides none (default dccm.io/gce)",
  "  --instanceGroupLimit N               instances per instance group, 1 to 1000; more nodes in a zone open more groups (default 1000)",
  "  --enableL4DenyFirewall BOOL          a deny rule k8s-fw-<lb>-deny per external load balancer, its allow rules above it at 999 (default false)",
  "  --instanceGroupZones ZONE,…          zones whose instance group is declared even with no Node, listed by every backend-service load balancer: a zone's first and last Node then change the cluster stack only",
  "  --addressReservation MODE            transient (an ephemeral IP, reserved only while a change replaces the forwarding rule, as the stock CCM) or always (<lb> reserved for the Service's life) (default transient)",
  "  --healthCheckSourceRanges CIDRS      IPv4 ranges Google's health checkers probe from, opened by the health-check firewalls (default Google's: 130.211.0.0/22, 35.191.0.0/16, 209.85.152.0/22, 209.85.204.0/22)",
  "  --healthCheckSourceRangesIPv6 CIDRS  IPv6 ranges of the health checkers (default 2600:1901:8001::/48, 2600:2d00:1:b029::/64)",
  "  --nodeHealthCheckPort PORT           port of the node probe every externalTrafficPolicy Cluster load balancer checks (default 10256, kube-proxy's)",
  "  --nodeHealthCheckPath PATH           path of the node probe (default /healthz)",
  "  --networkProject PROJECT             Shared VPC host project: firewalls and routes live there (default: project)",
  "  --firewallManagement MODE            managed (dccm writes the firewalls) or manual (it publishes the gcloud commands instead) (default managed)",
  "",
].join("\n");

const EXAMPLE_CONFIG = path.join(ROOT, "examples/dccm.yaml");

const BROKEN_STDERR =
  'Service default/broken: spec.loadBalancerSourceRanges: "10.0.0.0/33" is not a CIDR (expected a.b.c.d/n)\n' +
  "Service default/broken: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)\n";

type Run = CliRun;

function dccm(...args: string[]): Run {
  return runDccm(args);
}

function dccmWithEnv(env: NodeJS.ProcessEnv, ...args: string[]): Run {
  return runDccm(args, { env });
}

let tmp: string;
function tmpFile(name: string, contents: string): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, contents);
  return file;
}

function fixtureConfigWithout(key: string): Record<string, unknown> {
  const raw = JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>;
  delete raw[key];
  return raw;
}

function inProcessDesired(config: Record<string, unknown>): DesiredState {
  return desiredState(
    snapshotFromKubectlJson(fs.readFileSync(SNAPSHOT, "utf8"), SNAPSHOT).snapshot,
    parseConfig(config),
  );
}

describe("bin/dccm (child process)", function () {
  this.timeout(120_000);

  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-cli-test-"));
  });
  after(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  describe("desired", () => {
    let run: Run;
    before(() => {
      run = dccm("desired", "--snapshot", SNAPSHOT, "--config", CONFIG);
    });
    it("exits 0", () => assert.equal(run.status, 0));
    it("prints the DesiredState as indented JSON on stdout, identical to desiredState() in process", () => {
      const expected = inProcessDesired(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>);
      assert.equal(run.stdout, `${JSON.stringify(expected, null, 2)}\n`);
      const parsed = JSON.parse(run.stdout) as DesiredState;
      assert.deepStrictEqual(
        parsed.services.map((s) => s.key),
        ["db/internal", "default/local", "default/restricted", "default/web", "kube-system/dns"],
      );
      assert.deepStrictEqual(
        parsed.cluster.instanceGroups.map((g) => [g.zone, g.instances]),
        [
          ["us-central1-a", ["node-a1", "node-a2"]],
          ["us-central1-b", ["node-b1"]],
        ],
      );
    });
    it("prints exactly one stderr line per rejection of the broken Service", () =>
      assert.equal(run.stderr, BROKEN_STDERR));
  });

  describe("render", () => {
    let run: Run;
    before(() => {
      run = dccm("render", "--snapshot", SNAPSHOT, "--config", CONFIG);
    });
    it("exits 0 although a Service is rejected", () => assert.equal(run.status, 0));
    it("prints exactly the rejections on stderr", () => assert.equal(run.stderr, BROKEN_STDERR));
    it("prints every resource as JSON on stdout", () => {
      const resources = JSON.parse(run.stdout) as {
        stack: string;
        type: string;
        name: string;
        inputs: Record<string, unknown>;
      }[];
      assert.deepStrictEqual(
        resources.map((r) => `${r.stack} ${r.type} ${r.name}`),
        [
          "cluster gcp:compute/firewall:Firewall cluster:node-hc-fw",
          "cluster gcp:compute/instanceGroup:InstanceGroup cluster:ig-us-central1-a",
          "cluster gcp:compute/instanceGroup:InstanceGroup cluster:ig-us-central1-b",
          "cluster gcp:compute/regionHealthCheck:RegionHealthCheck cluster:node-hc",
          "cluster gcp:compute/route:Route cluster:route-node-a1",
          "cluster gcp:compute/route:Route cluster:route-node-a2",
          "cluster gcp:compute/route:Route cluster:route-node-b1",
          "cluster gcp:compute/route:Route cluster:route-node-b2",
          "cluster gcp:compute/route:Route cluster:route-node-c1",
          "service.db.internal gcp:compute/address:Address db/internal:address",
          "service.db.internal gcp:compute/firewall:Firewall db/internal:firewall",
          "service.db.internal gcp:compute/forwardingRule:ForwardingRule db/internal:forwarding-rule-tcp",
          "service.db.internal gcp:compute/regionBackendService:RegionBackendService db/internal:backend-tcp",
          "service.default.local gcp:compute/address:Address default/local:address",
          "service.default.local gcp:compute/firewall:Firewall default/local:firewall",
          "service.default.local gcp:compute/firewall:Firewall default/local:hc-firewall",
          "service.default.local gcp:compute/forwardingRule:ForwardingRule default/local:forwarding-rule-tcp",
          "service.default.local gcp:compute/regionBackendService:RegionBackendService default/local:backend-tcp",
          "service.default.local gcp:compute/regionHealthCheck:RegionHealthCheck default/local:hc",
          "service.default.restricted gcp:compute/address:Address default/restricted:address",
          "service.default.restricted gcp:compute/firewall:Firewall default/restricted:firewall",
          "service.default.restricted gcp:compute/forwardingRule:ForwardingRule default/restricted:forwarding-rule-tcp",
          "service.default.restricted gcp:compute/regionBackendService:RegionBackendService default/restricted:backend-tcp",
          "service.default.web gcp:compute/address:Address default/web:address",
          "service.default.web gcp:compute/firewall:Firewall default/web:firewall",
          "service.default.web gcp:compute/forwardingRule:ForwardingRule default/web:forwarding-rule-tcp",
          "service.default.web gcp:compute/regionBackendService:RegionBackendService default/web:backend-tcp",
          "service.kube-system.dns gcp:compute/address:Address kube-system/dns:address",
          "service.kube-system.dns gcp:compute/firewall:Firewall kube-system/dns:firewall",
          "service.kube-system.dns gcp:compute/forwardingRule:ForwardingRule kube-system/dns:forwarding-rule-tcp",
          "service.kube-system.dns gcp:compute/forwardingRule:ForwardingRule kube-system/dns:forwarding-rule-udp",
          "service.kube-system.dns gcp:compute/regionBackendService:RegionBackendService kube-system/dns:backend-tcp",
          "service.kube-system.dns gcp:compute/regionBackendService:RegionBackendService kube-system/dns:backend-udp",
        ],
      );
      assert.deepStrictEqual(resources.find((r) => r.name === "cluster:route-node-a1")?.inputs, {
        project: "dccm-test",
        name: "prod-11111111-1111-4111-8111-111111111111",
        network: "k8s-net",
        destRange: "10.64.1.0/24",
        nextHopInstance:
          "https://www.googleapis.com/compute/v1/projects/dccm-test/zones/us-central1-a/instances/node-a1",
        nextHopInstanceZone: "us-central1-a",
        priority: 1000,
        description: "k8s-node-route",
      });
      assert.equal(run.stdout, `${JSON.stringify(resources, null, 2)}\n`);
    });
  });

  describe("warnings", () => {
    it("render: a podCIDR outside clusterCIDR is reported as a Pulumi warning after the rejections; the route is left out", () => {
      const list = JSON.parse(fs.readFileSync(SNAPSHOT, "utf8")) as {
        items: { metadata: { name: string }; spec: { podCIDRs?: string[] } }[];
      };
      const nodeA1 = list.items.find((item) => item.metadata.name === "node-a1");
      assert.ok(nodeA1 !== undefined);
      nodeA1.spec.podCIDRs = ["10.200.1.0/24"];
      const snapshot = tmpFile("outside.json", JSON.stringify(list));
      const run = dccm("render", "--snapshot", snapshot, "--config", CONFIG);
      assert.equal(run.status, 0);
      assert.equal(
        run.stderr,
        `${BROKEN_STDERR}warning: [runtime] node node-a1: spec.podCIDRs: 10.200.1.0/24 is outside clusterCIDR 10.64.0.0/14\n`,
      );
      const names = (JSON.parse(run.stdout) as { name: string }[])
        .map((r) => r.name)
        .filter((name) => name.startsWith("cluster:route-"));
      assert.deepStrictEqual(names, [
        "cluster:route-node-a2",
        "cluster:route-node-b1",
        "cluster:route-node-b2",
        "cluster:route-node-c1",
      ]);
    });
  });

  describe("flags override the config file", () => {
    it("desired: --clusterName, --clusterId and --nodeTags (comma list) win over config.json", () => {
      const run = dccm(
        "desired",
        "--snapshot",
        SNAPSHOT,
        "--config",
        CONFIG,
        "--clusterName",
        "staging",
        "--clusterId",
        "feedface",
        "--nodeTags",
        "tag-a,tag-b",
      );
      assert.equal(run.status, 0);
      assert.equal(run.stderr, BROKEN_STDERR);
      const raw = {
        ...(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>),
        clusterName: "staging",
        clusterId: "feedface",
        nodeTags: "tag-a,tag-b",
      };
      assert.equal(run.stdout, `${JSON.stringify(inProcessDesired(raw), null, 2)}\n`);
      const parsed = JSON.parse(run.stdout) as DesiredState;
      assert.deepStrictEqual(
        parsed.cluster.routes.map((r) => r.name)[0],
        "staging-11111111-1111-4111-8111-111111111111",
      );
      assert.deepStrictEqual(
        parsed.cluster.instanceGroups.map((g) => g.name),
        ["k8s-ig--feedface", "k8s-ig--feedface"],
      );
      assert.deepStrictEqual(parsed.cluster.nodeHealthCheckFirewall.targetTags, ["tag-a", "tag-b"]);
      assert.deepStrictEqual(parsed.services[0].firewall.targetTags, ["tag-a", "tag-b"]);
      assert.equal(parsed.services[0].healthCheck.spec.name, "k8s-feedface-node");
    });
    it("render: the flags reach the stack program", () => {
      const run = dccm(
        "render",
        "--snapshot",
        SNAPSHOT,
        "--config",
        CONFIG,
        "--clusterName",
        "staging",
        "--nodeTags",
        "tag-a,tag-b",
      );
      assert.equal(run.status, 0);
      const resources = JSON.parse(run.stdout) as { name: string; inputs: Record<string, unknown> }[];
      assert.equal(
        resources.find((r) => r.name === "cluster:route-node-a1")?.inputs.name,
        "staging-11111111-1111-4111-8111-111111111111",
      );
      assert.deepStrictEqual(resources.find((r) => r.name === "default/web:firewall")?.inputs.targetTags, [
        "tag-a",
        "tag-b",
      ]);
    });
    it("flags alone, without a config file", () => {
      const run = dccm(
        "desired",
        "--snapshot",
        SNAPSHOT,
        "--project",
        "dccm-test",
        "--region",
        "us-central1",
        "--network",
        "k8s-net",
        "--nodeTags",
        "k8s-node",
        "--clusterName",
        "prod",
        "--clusterId",
        "c0ffee1234",
        "--clusterCIDR",
        "10.64.0.0/14",
        "--subnetwork",
        "k8s-subnet",
      );
      assert.equal(run.status, 0);
      assert.equal(
        run.stdout,
        `${JSON.stringify(inProcessDesired(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>), null, 2)}\n`,
      );
    });
    it("a YAML config file", () => {
      const yaml = tmpFile(
        "config.yaml",
        "project: dccm-test\nregion: us-central1\nnetwork: k8s-net\nsubnetwork: k8s-subnet\nnodeTags:\n  - k8s-node\nclusterName: prod\nclusterId: c0ffee1234\nclusterCIDR: 10.64.0.0/14\n",
      );
      const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", yaml);
      assert.equal(run.status, 0);
      assert.equal(
        run.stdout,
        `${JSON.stringify(inProcessDesired(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>), null, 2)}\n`,
      );
    });
  });

  describe("clusterId from the snapshot's ConfigMap kube-system/ingress-uid", () => {
    it("used when the config has none; the config wins when it has one", () => {
      const list = JSON.parse(fs.readFileSync(SNAPSHOT, "utf8")) as { items: unknown[] };
      list.items.push({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "ingress-uid", namespace: "kube-system" },
        data: { "provider-uid": "abc123", uid: "ignored" },
      });
      const snapshot = tmpFile("with-uid.json", JSON.stringify(list));
      const config = tmpFile("no-cluster-id.json", JSON.stringify(fixtureConfigWithout("clusterId")));
      const fromMap = dccm("desired", "--snapshot", snapshot, "--config", config);
      assert.equal(fromMap.status, 0, fromMap.stderr);
      assert.equal((JSON.parse(fromMap.stdout) as DesiredState).cluster.clusterId, "abc123");
      const fromConfig = dccm("desired", "--snapshot", snapshot, "--config", CONFIG);
      assert.equal((JSON.parse(fromConfig.stdout) as DesiredState).cluster.clusterId, "c0ffee1234");
    });
  });

  describe("errors", () => {
    for (const command of ["desired", "render"]) {
      it(`${command}: a missing required key → exit 2, the key named, nothing on stdout`, () => {
        const config = tmpFile(`missing-${command}.json`, JSON.stringify(fixtureConfigWithout("clusterId")));
        const run = dccm(command, "--snapshot", SNAPSHOT, "--config", config);
        assert.equal(run.status, 2);
        assert.equal(run.stdout, "");
        assert.equal(run.stderr, "dccm: invalid configuration:\n  clusterId: required\n");
      });
    }
    it("several config problems are all listed", () => {
      const raw = { ...fixtureConfigWithout("project"), backendMode: "pool", zone: "x" };
      const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", tmpFile("several.json", JSON.stringify(raw)));
      assert.equal(run.status, 2);
      assert.equal(
        run.stderr,
        "dccm: invalid configuration:\n" +
          "  zone: unknown key (GCP keys: project, region, network, subnetwork, nodeTags, clusterName, clusterId, clusterCIDR, backendMode, configureRoutes, podCIDRSource, podCIDRStack, " +
          "loadBalancerClasses, instanceGroupLimit, enableL4DenyFirewall, instanceGroupZones, addressReservation, healthCheckSourceRanges, healthCheckSourceRangesIPv6, nodeHealthCheckPort, nodeHealthCheckPath, networkProject, firewallManagement; daemon keys: stateDir, listen, parallelism, driftInterval, fullRefreshInterval, backendUrl, secretsProvider, operationTimeout, leaderElection; " +
          "node controller keys: computeEndpoint, nodeAddressRefreshPeriod, nodeLifecyclePeriod, nodeWorkers, nodeZones)\n" +
          "  project: required\n" +
          '  backendMode: "pool" is not backend-service, target-pool or neg\n',
      );
    });
    it("unreadable snapshot → exit 2, the file and the cause named, then the usage", () => {
      const missing = path.join(tmp, "nope.json");
      const run = dccm("desired", "--snapshot", missing, "--config", CONFIG);
      assert.equal(run.status, 2);
      assert.equal(run.stdout, "");
      assert.equal(
        run.stderr,
        `dccm: --snapshot ${missing}: ENOENT: no such file or directory, open '${missing}'\nsee dccm desired --help\n`,
      );
    });
    it("snapshot that is not JSON → exit 2 with a clear message", () => {
      const file = tmpFile("not-json.json", "apiVersion: v1\nkind: List\n");
      const run = dccm("render", "--snapshot", file, "--config", CONFIG);
      assert.equal(run.status, 2);
      assert.equal(run.stdout, "");
      assert.equal(
        run.stderr,
        `dccm: ${file}: not JSON (expected the output of kubectl get nodes,services -A -o json)\n`,
      );
    });
    it("snapshot that is JSON but not a List → exit 2 with a clear message", () => {
      const file = tmpFile("not-list.json", JSON.stringify({ kind: "Node", metadata: { name: "n" } }));
      const run = dccm("desired", "--snapshot", file, "--config", CONFIG);
      assert.equal(run.status, 2);
      assert.equal(
        run.stderr,
        `dccm: ${file}: expected a Kubernetes List with an "items" array (kubectl get nodes,services -A -o json)\n`,
      );
    });
    it("snapshot item without a name → exit 2 naming the item", () => {
      const file = tmpFile(
        "no-name.json",
        JSON.stringify({ kind: "List", items: [{ kind: "Service", metadata: {} }] }),
      );
      const run = dccm("desired", "--snapshot", file, "--config", CONFIG);
      assert.equal(run.status, 2);
      assert.equal(run.stderr, `dccm: ${file}: items[0] (Service) has no metadata.name\n`);
    });
    it("no --snapshot → exit 2 with the usage", () => {
      const run = dccm("desired", "--config", CONFIG);
      assert.equal(run.status, 2);
      assert.equal(
        run.stderr,
        `dccm: --snapshot FILE is required (the output of kubectl get nodes,services -A -o json)\nsee dccm desired --help\n`,
      );
    });
    it("unreadable config file → exit 2 naming it", () => {
      const missing = path.join(tmp, "no-config.json");
      const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", missing);
      assert.equal(run.status, 2);
      assert.equal(
        run.stderr,
        `dccm: --config ${missing}: ENOENT: no such file or directory, open '${missing}'\nsee dccm desired --help\n`,
      );
    });
    it("config file that is a list → exit 2", () => {
      const file = tmpFile("list-config.json", "[1, 2]");
      const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", file);
      assert.equal(run.status, 2);
      assert.equal(run.stderr, `dccm: --config ${file}: expected a mapping of config keys\nsee dccm desired --help\n`);
    });
    it("unknown command → exit 2, one line, then where the usage is", () => {
      const run = dccm("deploy");
      assert.equal(run.status, 2);
      assert.equal(run.stderr, `dccm: unknown command "deploy"\nsee dccm help\n`);
    });
    it("no command → usage on stdout, exit 2; help → exit 0", () => {
      const none = dccm();
      assert.equal(none.status, 2);
      assert.equal(none.stdout, USAGE);
      const help = dccm("help");
      assert.equal(help.status, 0);
      assert.equal(help.stdout, USAGE);
    });
    // BUG: bin/dccm.ts only maps UsageError/ConfigError/SnapshotError to exit 2; node:util parseArgs
    // throws a TypeError (code ERR_PARSE_ARGS_UNKNOWN_OPTION) for an unknown flag, so a typo prints a
    // stack trace and exits 1.
    it("an unknown flag is a usage error (exit 2, message, usage), not a crash", () => {
      let message = "";
      try {
        parseArgs({
          args: ["--bogus", "1"],
          options: { snapshot: { type: "string" } },
          strict: true,
          allowPositionals: false,
        });
      } catch (error) {
        message = (error as Error).message;
      }
      assert.equal(message, "Unknown option '--bogus'");
      const run = dccm("desired", "--snapshot", SNAPSHOT, "--bogus", "1");
      assert.equal(run.stderr, "dccm: unknown flag --bogus\nsee dccm desired --help\n");
      assert.equal(run.status, 2);
    });
  });

  describe("one config file serves every command (examples/dccm.yaml)", () => {
    const modelKeys = (): Record<string, unknown> => {
      const all = YAML.parse(fs.readFileSync(EXAMPLE_CONFIG, "utf8")) as Record<string, unknown>;
      return Object.fromEntries(
        Object.entries(all).filter(([key]) => (CONFIG_KEYS as readonly string[]).includes(key)),
      );
    };
    it("the file holds daemon and node controller keys, and splitConfig sorts each to its reader with nothing unknown", () => {
      const shared = splitConfig(YAML.parse(fs.readFileSync(EXAMPLE_CONFIG, "utf8")) as Record<string, unknown>);
      assert.deepStrictEqual(shared, {
        model: {
          project: "my-gcp-project",
          region: "us-central1",
          network: "k8s-net",
          subnetwork: "k8s-subnet",
          nodeTags: ["k8s-node"],
          clusterName: "prod",
          clusterId: "c0ffee1234",
          clusterCIDR: "10.64.0.0/14",
        },
        daemon: {
          stateDir: "/var/lib/dccm",
          listen: "0.0.0.0:10258",
          parallelism: 4,
          driftInterval: "10m",
          fullRefreshInterval: "24h",
        },
        node: { nodeAddressRefreshPeriod: "5m", nodeLifecyclePeriod: "30s" },
        unknown: [],
      });
    });
    it("desired --config examples/dccm.yaml: exit 0, the daemon's keys ignored, the DesiredState of the GCP keys", () => {
      const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", EXAMPLE_CONFIG);
      assert.equal(run.stderr, BROKEN_STDERR);
      assert.equal(run.status, 0);
      assert.equal(run.stdout, `${JSON.stringify(inProcessDesired(modelKeys()), null, 2)}\n`);
    });
    it("render --config examples/dccm.yaml: exit 0, the rejections and the program's warnings only", () => {
      const run = dccm("render", "--snapshot", SNAPSHOT, "--config", EXAMPLE_CONFIG);
      assert.equal(
        run.stderr,
        BROKEN_STDERR +
          ["node-a1", "node-a2", "node-b1", "node-b2", "node-c1"]
            .map((node) => `warning: [runtime] node ${node}: instance is in project dccm-test, not my-gcp-project\n`)
            .join(""),
      );
      assert.equal(run.status, 0);
      const resources = JSON.parse(run.stdout) as { name: string; inputs: Record<string, unknown> }[];
      const firewall = resources.find((r) => r.name === "default/web:firewall")?.inputs;
      assert.deepStrictEqual(
        [firewall?.project, firewall?.network, firewall?.targetTags],
        ["my-gcp-project", "k8s-net", ["k8s-node"]],
      );
    });
    describe("daemon (stopped before it talks to the cluster)", () => {
      // A kubeconfig that is never dialled: the config carries clusterId, and config checks come first.
      const kubeconfig = (): string =>
        tmpFile(
          "kubeconfig.yaml",
          "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
        );
      const noPassphrase = (): NodeJS.ProcessEnv => {
        const env = { ...process.env };
        delete env.PULUMI_CONFIG_PASSPHRASE;
        delete env.PULUMI_CONFIG_PASSPHRASE_FILE;
        return env;
      };
      it("accepts every key of examples/dccm.yaml: the next check (the passphrase) is the one that stops it", () => {
        const run = dccmWithEnv(noPassphrase(), "daemon", "--kubeconfig", kubeconfig(), "--config", EXAMPLE_CONFIG);
        assert.deepStrictEqual(
          [run.status, run.stderr],
          [
            2,
            `dccm: set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) or --secrets-provider (e.g. gcpkms://…) so stacks can be encrypted\nsee dccm daemon --help\n`,
          ],
        );
      });
      it("refuses a key no command knows, named, exit 2", () => {
        const file = tmpFile("typo-daemon.yaml", `${fs.readFileSync(EXAMPLE_CONFIG, "utf8")}lisen: 127.0.0.1:10258\n`);
        const run = dccmWithEnv(noPassphrase(), "daemon", "--kubeconfig", kubeconfig(), "--config", file);
        assert.equal(run.status, 2);
        assert.equal(
          run.stderr,
          "dccm: invalid configuration:\n" +
            "  lisen: unknown key (GCP keys: project, region, network, subnetwork, nodeTags, clusterName, clusterId, clusterCIDR, backendMode, configureRoutes, podCIDRSource, podCIDRStack, " +
            "loadBalancerClasses, instanceGroupLimit, enableL4DenyFirewall, instanceGroupZones, addressReservation, healthCheckSourceRanges, healthCheckSourceRangesIPv6, nodeHealthCheckPort, nodeHealthCheckPath, networkProject, firewallManagement; daemon keys: stateDir, listen, parallelism, driftInterval, fullRefreshInterval, backendUrl, secretsProvider, operationTimeout, leaderElection; " +
            "node controller keys: computeEndpoint, nodeAddressRefreshPeriod, nodeLifecyclePeriod, nodeWorkers, nodeZones)\n",
        );
      });
    });
    for (const command of ["desired", "render"]) {
      it(`${command}: a key no command knows is still refused, named, exit 2`, () => {
        const file = tmpFile(
          `typo-${command}.yaml`,
          `${fs.readFileSync(EXAMPLE_CONFIG, "utf8")}lisen: 127.0.0.1:10258\n`,
        );
        const run = dccm(command, "--snapshot", SNAPSHOT, "--config", file);
        assert.equal(run.status, 2);
        assert.equal(run.stdout, "");
        assert.equal(
          run.stderr,
          "dccm: invalid configuration:\n" +
            "  lisen: unknown key (GCP keys: project, region, network, subnetwork, nodeTags, clusterName, clusterId, clusterCIDR, backendMode, configureRoutes, podCIDRSource, podCIDRStack, " +
            "loadBalancerClasses, instanceGroupLimit, enableL4DenyFirewall, instanceGroupZones, addressReservation, healthCheckSourceRanges, healthCheckSourceRangesIPv6, nodeHealthCheckPort, nodeHealthCheckPath, networkProject, firewallManagement; daemon keys: stateDir, listen, parallelism, driftInterval, fullRefreshInterval, backendUrl, secretsProvider, operationTimeout, leaderElection; " +
            "node controller keys: computeEndpoint, nodeAddressRefreshPeriod, nodeLifecyclePeriod, nodeWorkers, nodeZones)\n",
        );
      });
    }
  });

  describe("help", () => {
    const SUBCOMMANDS: [string, string][] = [
      ["desired", DESIRED_HELP],
      ["render", RENDER_HELP],
      ["daemon", SOURCE_DAEMON_HELP],
      ["gc", SOURCE_GC_HELP],
      ["adopt", SOURCE_ADOPT_HELP],
      ["manifests", MANIFESTS_HELP],
      ["preview", PREVIEW_HELP],
      ["status", STATUS_HELP],
      ["demo", DEMO_HELP],
      ["drift", DRIFT_HELP],
      ["refresh", REFRESH_HELP],
    ];
    it("every subcommand: --help prints its own usage (exit 0); an unknown flag exits 2, one line, then where that usage is", function () {
      // 22 processes: on a loaded machine more than the suite's bound for one.
      this.timeout(600_000);
      const runs = SUBCOMMANDS.map(([command]) => [dccm(command, "--help"), dccm(command, "--no-such-flag")]);
      assert.deepStrictEqual(
        runs.map(([help, wrong]) => [help.status, help.stdout, help.stderr, wrong.status, wrong.stdout, wrong.stderr]),
        SUBCOMMANDS.map(([command, usage]) => {
          return [0, `${usage}\n`, "", 2, "", `dccm: unknown flag --no-such-flag\nsee dccm ${command} --help\n`];
        }),
      );
    });
    it("adopt: each wrong combination is a usage error naming it (exit 2, adopt's usage), before any cluster or GCE access", () => {
      const cases: [string[], string][] = [
        [["--service", "default/web"], "adopt: --service goes with --to backend-service"],
        [["--to", "target-pool", "--service", "default/web"], 'adopt: --to "target-pool" is not backend-service'],
        [["--to", "backend-service"], "adopt: --to backend-service needs --service NAMESPACE/NAME"],
        [["--to", "backend-service", "--service", "web"], "adopt: --to backend-service needs --service NAMESPACE/NAME"],
        [
          ["--to", "backend-service", "--service", "default/web", "--dry-run"],
          "adopt: --to backend-service takes neither --dry-run nor --allow-replace",
        ],
      ];
      for (const [args, message] of cases) {
        const run = dccm(
          "adopt",
          "--project",
          "p",
          "--region",
          "r",
          "--network",
          "n",
          "--nodeTags",
          "t",
          "--clusterName",
          "c",
          "--clusterId",
          "c1",
          ...args,
        );
        assert.deepStrictEqual(
          [run.status, run.stdout, run.stderr],
          [2, "", `dccm: ${message}\nsee dccm adopt --help\n`],
          args.join(" "),
        );
      }
    });
    it("dccm help and dccm --help print the usage, exit 0", () => {
      for (const args of [["help"], ["--help"], ["-h"]]) {
        const run = dccm(...args);
        assert.deepStrictEqual([run.status, run.stdout, run.stderr], [0, USAGE, ""], args.join(" "));
      }
    });
    it("desired --help and render --help print their own usage, exit 0", () => {
      for (const command of ["desired", "render"]) {
        const run = dccm(command, "--help");
        assert.deepStrictEqual(
          [run.status, run.stdout, run.stderr],
          [0, `${command === "desired" ? DESIRED_HELP : RENDER_HELP}\n`, ""],
          command,
        );
      }
    });
    it("dccm daemon --help (and -h) prints every flag with its key and default, exit 0", () => {
      for (const flag of ["--help", "-h"]) {
        const run = dccm("daemon", flag);
        assert.deepStrictEqual([run.status, run.stderr], [0, ""], flag);
        assert.equal(run.stdout, DAEMON_HELP);
      }
    });
    it("every flag the daemon's help lists is accepted by its parser (all at once, then --help)", () => {
      const args: string[] = [];
      for (const line of DAEMON_HELP.split("\n")) {
        const match = /^ {2}(--[A-Za-z0-9-]+)(?: (\S+))? {2,}/.exec(line);
        if (match === null || match[1] === "--help") continue;
        args.push(match[1], ...(match[2] !== undefined ? [match[1] === "--log-level" ? "debug" : "x"] : []));
      }
      assert.equal(args.filter((arg) => arg.startsWith("--")).length, 47);
      const run = dccm("daemon", ...args, "--help");
      assert.deepStrictEqual([run.status, run.stderr, run.stdout], [0, "", DAEMON_HELP]);
    });
    it("daemon: a flag the help does not list is refused, exit 2, with the flag it most likely meant", () => {
      const cases: [string[], string][] = [
        [["--loglevel", "debug"], "unknown flag --loglevel (did you mean --log-level?)"],
        [["--stateDir", "/tmp/x"], "unknown flag --stateDir (did you mean --state-dir?)"],
        [["--state_dir", "/tmp/x"], "unknown flag --state_dir (did you mean --state-dir?)"],
        [["--kubconfig", "k"], "unknown flag --kubconfig (did you mean --kubeconfig?)"],
        [["--cluster-id", "c"], "unknown flag --cluster-id (did you mean --clusterId?)"],
        [["--bogus"], "unknown flag --bogus"],
      ];
      assert.deepStrictEqual(
        cases.map(([args]) => {
          const run = dccm("daemon", ...args);
          return [run.status, run.stdout, run.stderr];
        }),
        cases.map(([, message]) => [2, "", `dccm: ${message}\nsee dccm daemon --help\n`]),
      );
    });
    it("daemon: --log-level takes only pino's levels, exit 2 naming them", () => {
      const run = dccm("daemon", "--log-level", "loud");
      assert.deepStrictEqual(
        [run.status, run.stderr],
        [
          2,
          `dccm: --log-level: "loud" is not one of fatal, error, warn, info, debug, trace, silent\nsee dccm daemon --help\n`,
        ],
      );
    });
    it("daemon: a kubeconfig that is missing, or none at all, is one line naming it (no stack trace), exit 2", () => {
      const missing = path.join(os.tmpdir(), "dccm-no-such-kubeconfig.yaml");
      const withPassphrase = { ...process.env, PULUMI_CONFIG_PASSPHRASE: "p" };
      const named = dccmWithEnv(
        withPassphrase,
        "daemon",
        "--kubeconfig",
        missing,
        "--config",
        EXAMPLE_CONFIG,
        "--state-dir",
        path.join(os.tmpdir(), "dccm-cli-state"),
      );
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-empty-home-"));
      const noEnv: NodeJS.ProcessEnv = { ...withPassphrase, HOME: home };
      delete noEnv.KUBECONFIG;
      delete noEnv.KUBERNETES_SERVICE_HOST;
      const none = dccmWithEnv(
        noEnv,
        "daemon",
        "--config",
        EXAMPLE_CONFIG,
        "--state-dir",
        path.join(os.tmpdir(), "dccm-cli-state"),
      );
      fs.rmSync(home, { recursive: true, force: true });
      assert.deepStrictEqual(
        [named, none],
        [
          {
            status: 2,
            stdout: "",
            stderr: `dccm: --kubeconfig ${missing}: ENOENT: no such file or directory, open '${missing}'\nsee dccm daemon --help\n`,
          },
          {
            status: 2,
            stdout: "",
            stderr:
              "dccm: no cluster: pass --kubeconfig FILE or set $KUBECONFIG (there is no ~/.kube/config, and this is not a pod) — or try dccm demo\nsee dccm daemon --help\n",
          },
        ],
      );
    });
    it("dccm --version, -v and dccm version print the package's version, exit 0", () => {
      const version = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string })
        .version;
      assert.deepStrictEqual(
        ["--version", "-v", "version"].map((arg) => dccm(arg)),
        ["--version", "-v", "version"].map(() => ({ status: 0, stdout: `dccm ${version}\n`, stderr: "" })),
      );
    });
  });

  describe("manifests", () => {
    const GCP = "project: my-project\nregion: us-central1\nnetwork: k8s-net\nnodeTags: [k8s-node]\nclusterName: prod\n";
    it("prints the objects deployObjects builds, the config file's backendUrl and secretsProvider taken as backend and secrets", () => {
      const config = tmpFile(
        "install.yaml",
        `${GCP}backendUrl: gs://acme/dccm\nsecretsProvider: gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k\n`,
      );
      const run = dccm(
        "manifests",
        "--config",
        config,
        "--image",
        "ghcr.io/acme/dccm:0.1.0",
        "--gcp-credentials-secret",
        "dccm-gcp/key.json",
        "--replicas",
        "3",
      );
      assert.deepStrictEqual([run.status, run.stderr], [0, ""]);
      const expected = deployObjects({
        image: "ghcr.io/acme/dccm:0.1.0",
        config: {
          project: "my-project",
          region: "us-central1",
          network: "k8s-net",
          nodeTags: ["k8s-node"],
          clusterName: "prod",
        },
        backend: { url: "gs://acme/dccm" },
        secrets: { provider: "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k" },
        gcpCredentialsSecret: { name: "dccm-gcp", key: "key.json" },
        replicas: 3,
      });
      assert.equal(run.stdout, manifestsYaml(expected));
    });
    it("flags win over the file: a claim backend and a passphrase Secret", () => {
      const config = tmpFile("install-claim.yaml", `${GCP}backendUrl: gs://acme/dccm\n`);
      const run = dccm(
        "manifests",
        "--config",
        config,
        "--image",
        "dccm:1",
        "--replicas",
        "1",
        "--backend-claim",
        "dccm-state",
        "--passphrase-secret",
        "dccm/passphrase",
      );
      assert.deepStrictEqual([run.status, run.stderr], [0, ""]);
      const expected = deployObjects({
        image: "dccm:1",
        config: {
          project: "my-project",
          region: "us-central1",
          network: "k8s-net",
          nodeTags: ["k8s-node"],
          clusterName: "prod",
        },
        backend: { volumeClaim: "dccm-state" },
        secrets: { passphraseSecret: { name: "dccm", key: "passphrase" } },
        replicas: 1,
      });
      assert.equal(run.stdout, manifestsYaml(expected));
    });
    it("what is missing or wrong is named, exit 2, nothing printed", () => {
      const config = tmpFile("install-bad.yaml", `${GCP}backendUrl: file:///var/lib/dccm/backend\n`);
      const run = dccm("manifests", "--config", config);
      assert.deepStrictEqual(
        [run.status, run.stdout, run.stderr],
        [
          2,
          "",
          "dccm: invalid deploy arguments:\n" +
            "  image: required (the dccm image built from the Dockerfile, e.g. ghcr.io/acme/dccm:0.1.0)\n" +
            "  backend.url: file:///var/lib/dccm/backend is on the pod's own disk and every stack is lost when the pod restarts; use gs://BUCKET/PREFIX, https://api.pulumi.com, or backend.volumeClaim\n" +
            "  secrets: required: provider (e.g. gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K) or passphraseSecret\n",
        ],
      );
    });
    it("bad flags: exit 2 with the message", () => {
      const config = tmpFile("install-ok.yaml", GCP);
      const cases: [string[], string][] = [
        [["--passphrase-secret", "dccm"], '--passphrase-secret: expected NAME/KEY of a Secret, got "dccm"'],
        [["--replicas", "two"], '--replicas: expected a whole number, got "two"'],
        [["--backend-claim", "c", "--backend-url", "gs://b"], "--backend-claim and --backend-url: give one backend"],
        [
          ["--image-pull-policy", "Sometimes"],
          '--image-pull-policy: "Sometimes" is not one of Always, IfNotPresent, Never',
        ],
      ];
      for (const [args, message] of cases) {
        const run = dccm("manifests", "--config", config, "--image", "dccm:1", ...args);
        assert.deepStrictEqual(
          [run.status, run.stdout, run.stderr],
          [2, "", `dccm: ${message}\nsee dccm manifests --help\n`],
          args.join(" "),
        );
      }
    });
    it("--help prints its own usage, exit 0", () => {
      const run = dccm("manifests", "--help");
      assert.deepStrictEqual([run.status, run.stderr, run.stdout], [0, "", `${MANIFESTS_HELP}\n`]);
    });
  });

  describe("malformed objects in the snapshot: one line each, naming the object and the field; everything else proceeds", () => {
    const MALFORMED_STDERR =
      BROKEN_STDERR +
      "Service default/null-port: spec.ports[1]: expected an object, got null\n" +
      "Service default/numeric-annotation: metadata.annotations[cloud.google.com/network-tier]: expected a string, got 5\n";
    let snapshot = "";
    before(() => {
      const list = JSON.parse(fs.readFileSync(SNAPSHOT, "utf8")) as { items: unknown[] };
      list.items.push(
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "null-port", namespace: "default", uid: "5ec00010-7a1b-4c2d-8e3f-a0b1c2d3e4f5" },
          spec: { type: "LoadBalancer", ports: [{ protocol: "TCP", port: 80 }, null] },
        },
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: {
            name: "numeric-annotation",
            namespace: "default",
            uid: "5ec00011-7a1b-4c2d-8e3f-a0b1c2d3e4f5",
            annotations: { "cloud.google.com/network-tier": 5 },
          },
          spec: { type: "LoadBalancer", ports: [{ protocol: "TCP", port: 80 }] },
        },
        {
          apiVersion: "v1",
          kind: "Node",
          metadata: {
            name: "node-bad",
            uid: "99999999-9999-4999-8999-999999999999",
            labels: { "topology.kubernetes.io/zone": "us-central1-a" },
          },
          spec: { providerID: "gce://dccm-test/us-central1-a/node-bad", taints: [null] },
        },
      );
      snapshot = tmpFile("malformed.json", JSON.stringify(list));
    });
    it("desired: exit 0, one stderr line per malformed Service, the rest exactly as without them", () => {
      const run = dccm("desired", "--snapshot", snapshot, "--config", CONFIG);
      assert.equal(run.stderr, MALFORMED_STDERR);
      assert.equal(run.status, 0);
      const parsed = JSON.parse(run.stdout) as DesiredState;
      const clean = inProcessDesired(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>);
      assert.deepStrictEqual(parsed.services, clean.services);
      assert.deepStrictEqual(parsed.cluster, clean.cluster);
      assert.deepStrictEqual(
        parsed.warnings,
        [...clean.warnings, "node node-bad: spec.taints[0]: expected an object, got null; the Node is left out"].sort(),
      );
    });
    it("render: exit 0, the rejections and the Node's warning on stderr, the same resources as without them", () => {
      const run = dccm("render", "--snapshot", snapshot, "--config", CONFIG);
      assert.equal(
        run.stderr,
        `${MALFORMED_STDERR}warning: [runtime] node node-bad: spec.taints[0]: expected an object, got null; the Node is left out\n`,
      );
      assert.equal(run.status, 0);
      assert.equal(run.stdout, dccm("render", "--snapshot", SNAPSHOT, "--config", CONFIG).stdout);
    });
  });
});
