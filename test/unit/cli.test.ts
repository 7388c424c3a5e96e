// `dccm desired` / `dccm render` as child processes: exit codes, stdout JSON, exact stderr.
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";

import { parseConfig } from "../../model/config";
import { desiredState } from "../../model/desired";
import type { DesiredState } from "../../model/types";
import { snapshotFromKubectlJson } from "../../watcher/kubectlDump";

const ROOT = path.resolve(__dirname, "../../..");
const CLI = path.resolve(__dirname, "../../bin/dccm.js");
const SNAPSHOT = path.join(ROOT, "test/fixtures/cluster.json");
const CONFIG = path.join(ROOT, "test/fixtures/config.json");

/** The usage text, as `dccm help` prints it (other commands are being added to it). */
let USAGE = "";
const USAGE_LINES = [
    "usage:",
    "  dccm desired --snapshot FILE [--config FILE] [--<key> VALUE ...]   print the DesiredState JSON",
    "  dccm render  --snapshot FILE [--config FILE] [--<key> VALUE ...]   print every resource the stack program declares",
    "config keys (file or flags): project region network subnetwork nodeTags clusterName clusterId clusterCIDR backendMode configureRoutes loadBalancerClasses",
];

const BROKEN_STDERR =
    "Service default/broken: spec.loadBalancerSourceRanges: \"10.0.0.0/33\" is not a CIDR (expected a.b.c.d/n)\n" +
    "Service default/broken: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)\n";

interface Run {
    status: number | null;
    stdout: string;
    stderr: string;
}

function dccm(...args: string[]): Run {
    const result = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    if (result.error) throw result.error;
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
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
    return desiredState(snapshotFromKubectlJson(fs.readFileSync(SNAPSHOT, "utf8"), SNAPSHOT).snapshot, parseConfig(config));
}

describe("bin/dccm (child process)", function () {
    this.timeout(120_000);

    before(() => {
        tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-cli-test-"));
        USAGE = dccm("help").stdout;
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
            assert.deepStrictEqual(parsed.services.map((s) => s.key), ["db/internal", "default/local", "default/restricted", "default/web", "kube-system/dns"]);
            assert.deepStrictEqual(parsed.cluster.instanceGroups.map((g) => [g.zone, g.instances]), [
                ["us-central1-a", ["node-a1", "node-a2"]],
                ["us-central1-b", ["node-b1"]],
            ]);
        });
        it("prints exactly one stderr line per rejection of the broken Service", () => assert.equal(run.stderr, BROKEN_STDERR));
    });

    describe("render", () => {
        let run: Run;
        before(() => {
            run = dccm("render", "--snapshot", SNAPSHOT, "--config", CONFIG);
        });
        it("exits 0 although a Service is rejected", () => assert.equal(run.status, 0));
        it("prints exactly the rejections on stderr", () => assert.equal(run.stderr, BROKEN_STDERR));
        it("prints every resource as JSON on stdout", () => {
            const resources = JSON.parse(run.stdout) as { stack: string; type: string; name: string; inputs: Record<string, unknown> }[];
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
                nextHopInstance: "node-a1",
                nextHopInstanceZone: "us-central1-a",
                priority: 1000,
                description: "k8s-node-route",
            });
            assert.equal(run.stdout, `${JSON.stringify(resources, null, 2)}\n`);
        });
    });

    describe("warnings", () => {
        it("render: a podCIDR outside clusterCIDR is reported as a Pulumi warning after the rejections; the route is left out", () => {
            const list = JSON.parse(fs.readFileSync(SNAPSHOT, "utf8")) as { items: { metadata: { name: string }; spec: { podCIDRs?: string[] } }[] };
            const nodeA1 = list.items.find((item) => item.metadata.name === "node-a1");
            assert.ok(nodeA1 !== undefined);
            nodeA1.spec.podCIDRs = ["10.200.1.0/24"];
            const snapshot = tmpFile("outside.json", JSON.stringify(list));
            const run = dccm("render", "--snapshot", snapshot, "--config", CONFIG);
            assert.equal(run.status, 0);
            assert.equal(run.stderr, `${BROKEN_STDERR}warning: [runtime] node node-a1: spec.podCIDRs: 10.200.1.0/24 is outside clusterCIDR 10.64.0.0/14\n`);
            const names = (JSON.parse(run.stdout) as { name: string }[]).map((r) => r.name).filter((name) => name.startsWith("cluster:route-"));
            assert.deepStrictEqual(names, ["cluster:route-node-a2", "cluster:route-node-b1", "cluster:route-node-b2", "cluster:route-node-c1"]);
        });
    });

    describe("flags override the config file", () => {
        it("desired: --clusterName, --clusterId and --nodeTags (comma list) win over config.json", () => {
            const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", CONFIG, "--clusterName", "staging", "--clusterId", "feedface", "--nodeTags", "tag-a,tag-b");
            assert.equal(run.status, 0);
            assert.equal(run.stderr, BROKEN_STDERR);
            const raw = { ...(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>), clusterName: "staging", clusterId: "feedface", nodeTags: "tag-a,tag-b" };
            assert.equal(run.stdout, `${JSON.stringify(inProcessDesired(raw), null, 2)}\n`);
            const parsed = JSON.parse(run.stdout) as DesiredState;
            assert.deepStrictEqual(parsed.cluster.routes.map((r) => r.name)[0], "staging-11111111-1111-4111-8111-111111111111");
            assert.deepStrictEqual(parsed.cluster.instanceGroups.map((g) => g.name), ["k8s-ig--feedface", "k8s-ig--feedface"]);
            assert.deepStrictEqual(parsed.cluster.nodeHealthCheckFirewall.targetTags, ["tag-a", "tag-b"]);
            assert.deepStrictEqual(parsed.services[0].firewall.targetTags, ["tag-a", "tag-b"]);
            assert.equal(parsed.services[0].healthCheck.spec.name, "k8s-feedface-node");
        });
        it("render: the flags reach the stack program", () => {
            const run = dccm("render", "--snapshot", SNAPSHOT, "--config", CONFIG, "--clusterName", "staging", "--nodeTags", "tag-a,tag-b");
            assert.equal(run.status, 0);
            const resources = JSON.parse(run.stdout) as { name: string; inputs: Record<string, unknown> }[];
            assert.equal(resources.find((r) => r.name === "cluster:route-node-a1")?.inputs.name, "staging-11111111-1111-4111-8111-111111111111");
            assert.deepStrictEqual(resources.find((r) => r.name === "default/web:firewall")?.inputs.targetTags, ["tag-a", "tag-b"]);
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
            assert.equal(run.stdout, `${JSON.stringify(inProcessDesired(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>), null, 2)}\n`);
        });
        it("a YAML config file", () => {
            const yaml = tmpFile(
                "config.yaml",
                "project: dccm-test\nregion: us-central1\nnetwork: k8s-net\nsubnetwork: k8s-subnet\nnodeTags:\n  - k8s-node\nclusterName: prod\nclusterId: c0ffee1234\nclusterCIDR: 10.64.0.0/14\n",
            );
            const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", yaml);
            assert.equal(run.status, 0);
            assert.equal(run.stdout, `${JSON.stringify(inProcessDesired(JSON.parse(fs.readFileSync(CONFIG, "utf8")) as Record<string, unknown>), null, 2)}\n`);
        });
    });

    describe("clusterId from the snapshot's ConfigMap kube-system/ingress-uid", () => {
        it("used when the config has none; the config wins when it has one", () => {
            const list = JSON.parse(fs.readFileSync(SNAPSHOT, "utf8")) as { items: unknown[] };
            list.items.push({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ingress-uid", namespace: "kube-system" }, data: { "provider-uid": "abc123", uid: "ignored" } });
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
                    "  zone: unknown key (known: project, region, network, subnetwork, nodeTags, clusterName, clusterId, clusterCIDR, backendMode, configureRoutes, loadBalancerClasses)\n" +
                    "  project: required\n" +
                    "  backendMode: \"pool\" is not backend-service or target-pool\n",
            );
        });
        it("unreadable snapshot → exit 2, the file and the cause named, then the usage", () => {
            const missing = path.join(tmp, "nope.json");
            const run = dccm("desired", "--snapshot", missing, "--config", CONFIG);
            assert.equal(run.status, 2);
            assert.equal(run.stdout, "");
            assert.equal(run.stderr, `dccm: --snapshot ${missing}: ENOENT: no such file or directory, open '${missing}'\n${USAGE}`);
        });
        it("snapshot that is not JSON → exit 2 with a clear message", () => {
            const file = tmpFile("not-json.json", "apiVersion: v1\nkind: List\n");
            const run = dccm("render", "--snapshot", file, "--config", CONFIG);
            assert.equal(run.status, 2);
            assert.equal(run.stdout, "");
            assert.equal(run.stderr, `dccm: ${file}: not JSON (expected the output of kubectl get nodes,services -A -o json)\n`);
        });
        it("snapshot that is JSON but not a List → exit 2 with a clear message", () => {
            const file = tmpFile("not-list.json", JSON.stringify({ kind: "Node", metadata: { name: "n" } }));
            const run = dccm("desired", "--snapshot", file, "--config", CONFIG);
            assert.equal(run.status, 2);
            assert.equal(run.stderr, `dccm: ${file}: expected a Kubernetes List with an "items" array (kubectl get nodes,services -A -o json)\n`);
        });
        it("snapshot item without a name → exit 2 naming the item", () => {
            const file = tmpFile("no-name.json", JSON.stringify({ kind: "List", items: [{ kind: "Service", metadata: {} }] }));
            const run = dccm("desired", "--snapshot", file, "--config", CONFIG);
            assert.equal(run.status, 2);
            assert.equal(run.stderr, `dccm: ${file}: items[0] (Service) has no metadata.name\n`);
        });
        it("no --snapshot → exit 2 with the usage", () => {
            const run = dccm("desired", "--config", CONFIG);
            assert.equal(run.status, 2);
            assert.equal(run.stderr, `dccm: --snapshot FILE is required (the output of kubectl get nodes,services -A -o json)\n${USAGE}`);
        });
        it("unreadable config file → exit 2 naming it", () => {
            const missing = path.join(tmp, "no-config.json");
            const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", missing);
            assert.equal(run.status, 2);
            assert.equal(run.stderr, `dccm: --config ${missing}: ENOENT: no such file or directory, open '${missing}'\n${USAGE}`);
        });
        it("config file that is a list → exit 2", () => {
            const file = tmpFile("list-config.json", "[1, 2]");
            const run = dccm("desired", "--snapshot", SNAPSHOT, "--config", file);
            assert.equal(run.status, 2);
            assert.equal(run.stderr, `dccm: --config ${file}: expected a mapping of config keys\n${USAGE}`);
        });
        it("unknown command → exit 2 with the usage", () => {
            const run = dccm("deploy");
            assert.equal(run.status, 2);
            assert.equal(run.stderr, `dccm: unknown command "deploy"\n${USAGE}`);
        });
        it("the usage names desired, render and every config key", () => {
            const lines = USAGE.split("\n");
            assert.equal(lines[0], USAGE_LINES[0]);
            for (const line of USAGE_LINES.slice(1)) assert.ok(lines.includes(line), line);
            assert.equal(USAGE.endsWith(`${USAGE_LINES[3]}\n`), true);
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
                parseArgs({ args: ["--bogus", "1"], options: { snapshot: { type: "string" } }, strict: true, allowPositionals: false });
            } catch (error) {
                message = (error as Error).message;
            }
            assert.equal(message, "Unknown option '--bogus'");
            const run = dccm("desired", "--snapshot", SNAPSHOT, "--bogus", "1");
            assert.equal(run.stderr, `dccm: ${message}\n${USAGE}`);
            assert.equal(run.status, 2);
        });
    });
});
