// daemon/config.ts: the daemon's flags and keys → settings, or one list of problems naming each flag or key.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import pino from "pino";
import * as YAML from "yaml";
import { DAEMON_FLAGS, NODE_FLAGS } from "../../../bin/daemonCommand";
import {
  DAEMON_FLAG_NAMES,
  DAEMON_KEY_FLAGS,
  DAEMON_KEYS,
  daemonOptions,
  daemonSettings,
  encryptionProblem,
  NODE_FLAG_NAMES,
  readCommandLine,
  resolveDaemonSettings,
  type CommandLine,
  type DaemonFlagValues,
  type DaemonSettings,
  type SettingsInput,
} from "../../../daemon/config";
import { ConfigError, parseConfig } from "../../../model";
import { defaultParallelism } from "../../../runtime/parallelism";

const ROOT = path.resolve(__dirname, "../../../..");
const EXAMPLE = YAML.parse(fs.readFileSync(path.join(ROOT, "examples/dccm.yaml"), "utf8")) as Record<string, unknown>;

const GCP = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "prod",
  clusterId: "c0ffee1234",
};

const COMMAND_LINE: CommandLine = {
  kubeconfig: undefined,
  configFile: undefined,
  shutdownTimeoutMs: 30_000,
  confirmOrphanDestroys: 0,
  adopt: false,
  allowReplace: false,
  nodeController: true,
  sharedProvider: false,
  identity: undefined,
  logLevel: "info",
};

/** A 4-core machine with 16 GiB: the default parallelism is 4. */
const MACHINE = { cores: 4, memoryBytes: 16 * 1024 ** 3 };

function input(
  file: Record<string, unknown>,
  flags: DaemonFlagValues = {},
  env: Record<string, string> = {},
): SettingsInput {
  return { commandLine: COMMAND_LINE, flags, file, env, machine: MACHINE };
}

/** The settings of `file` and `flags`, which must be valid. */
function settingsOf(
  file: Record<string, unknown>,
  flags: DaemonFlagValues = {},
  env: Record<string, string> = {},
): DaemonSettings {
  const result = daemonSettings(input(file, flags, env));
  if (result.kind !== "ok") assert.fail(`expected valid settings, got ${JSON.stringify(result)}`);
  return result.settings;
}

function problemsOf(file: Record<string, unknown>, flags: DaemonFlagValues = {}): readonly string[] {
  const result = daemonSettings(input(file, flags));
  if (result.kind !== "invalid") assert.fail(`expected problems, got ${JSON.stringify(result)}`);
  return result.problems;
}

describe("daemon/config readCommandLine (flags no config key sets)", () => {
  it("defaults", () => assert.deepEqual(readCommandLine({}), { ok: true, value: COMMAND_LINE }));

  it("every flag", () => {
    assert.deepEqual(
      readCommandLine({
        kubeconfig: "/k",
        config: "/c.yaml",
        "shutdown-timeout": "1m30s",
        "confirm-orphan-destroys": "7",
        "no-node-controller": true,
        "shared-provider": true,
        identity: "pod-0",
        "log-level": "debug",
        adopt: true,
        "allow-replace": true,
      }),
      {
        ok: true,
        value: {
          kubeconfig: "/k",
          configFile: "/c.yaml",
          shutdownTimeoutMs: 90_000,
          confirmOrphanDestroys: 7,
          adopt: true,
          allowReplace: true,
          nodeController: false,
          sharedProvider: true,
          identity: "pod-0",
          logLevel: "debug",
        },
      },
    );
  });

  it("every bad value, each naming its flag", () => {
    assert.deepEqual(
      readCommandLine({
        "log-level": "loud",
        "shutdown-timeout": "30",
        "confirm-orphan-destroys": "-1",
        "allow-replace": true,
      }),
      {
        ok: false,
        problems: [
          '--log-level: "loud" is not one of fatal, error, warn, info, debug, trace, silent',
          '--shutdown-timeout: expected a duration such as 30s, 10m or 1h30m, got "30"',
          '--confirm-orphan-destroys: expected a whole number ≥ 0, got "-1"',
          "--allow-replace: only with --adopt",
        ],
      },
    );
  });

  const confirm: [string, number | string][] = [
    ["0", 0],
    ["12", 12],
    ["1.5", '--confirm-orphan-destroys: expected a whole number ≥ 0, got "1.5"'],
    ["many", '--confirm-orphan-destroys: expected a whole number ≥ 0, got "many"'],
  ];
  for (const [text, expected] of confirm) {
    it(`--confirm-orphan-destroys ${text}`, () => {
      const read = readCommandLine({ "confirm-orphan-destroys": text });
      assert.deepEqual(
        read.ok ? read.value.confirmOrphanDestroys : read.problems,
        typeof expected === "number" ? expected : [expected],
      );
    });
  }
});

describe("daemon/config daemonSettings", () => {
  it("examples/dccm.yaml as it is", () => {
    assert.deepEqual(settingsOf(EXAMPLE), {
      ...COMMAND_LINE,
      config: parseConfig({
        project: "my-gcp-project",
        region: "us-central1",
        network: "k8s-net",
        subnetwork: "k8s-subnet",
        nodeTags: ["k8s-node"],
        clusterName: "prod",
        clusterId: "c0ffee1234",
        clusterCIDR: "10.64.0.0/14",
      }),
      nodes: {
        computeEndpoint: undefined,
        addressRefreshMs: 300_000,
        lifecycleCheckMs: 30_000,
        workers: 10,
        zones: undefined,
      },
      stateDir: "/var/lib/dccm",
      listen: { host: "0.0.0.0", port: 10258 },
      parallelism: 4,
      driftMs: 600_000,
      fullRefreshMs: 86_400_000,
      operationTimeoutMs: 1_200_000,
      backendUrl: "file:///var/lib/dccm/backend",
      secretsProvider: undefined,
      leaderElection: true,
    });
  });

  const parallelismDefaults: [string, { cores: number; memoryBytes: number }, number][] = [
    ["a core each when memory is plenty", { cores: 8, memoryBytes: 64 * 1024 ** 3 }, 8],
    ["2 cores, 23 GiB (this CI machine)", { cores: 2, memoryBytes: 23 * 1024 ** 3 }, 2],
    ["memory-bound: the Deployment's 2 GiB limit", { cores: 16, memoryBytes: 2 * 1024 ** 3 }, 3],
    ["exactly one run beyond the daemon's own", { cores: 4, memoryBytes: (256 + 512) * 1024 ** 2 }, 1],
    ["never below one, however small", { cores: 4, memoryBytes: 300 * 1024 ** 2 }, 1],
    ["one core", { cores: 1, memoryBytes: 64 * 1024 ** 3 }, 1],
  ];
  for (const [name, machine, expected] of parallelismDefaults) {
    it(`default parallelism: ${name} → ${expected}`, () => {
      assert.equal(defaultParallelism(machine), expected);
      const result = daemonSettings({ ...input(GCP), machine });
      assert.equal(result.kind === "ok" ? result.settings.parallelism : undefined, expected);
    });
  }

  it("defaults: only the GCP keys", () => {
    const settings = settingsOf(GCP);
    assert.deepEqual(
      [
        settings.stateDir,
        settings.listen,
        settings.parallelism,
        settings.driftMs,
        settings.operationTimeoutMs,
        settings.backendUrl,
        settings.secretsProvider,
        settings.leaderElection,
      ],
      [
        "/var/lib/dccm",
        { host: "0.0.0.0", port: 10258 },
        4,
        600_000,
        1_200_000,
        "file:///var/lib/dccm/backend",
        undefined,
        true,
      ],
    );
  });

  it("every flag wins over its key", () => {
    const file = {
      ...GCP,
      stateDir: "/file",
      listen: "10.0.0.1:1",
      parallelism: 2,
      driftInterval: "1h",
      fullRefreshInterval: "48h",
      backendUrl: "gs://file",
      secretsProvider: "gcpkms://file",
      leaderElection: true,
      operationTimeout: "1h",
      computeEndpoint: "http://file/compute/v1",
      nodeAddressRefreshPeriod: "1h",
      nodeLifecyclePeriod: "1h",
      nodeWorkers: 1,
      nodeZones: ["us-central1-a"],
    };
    const settings = settingsOf(file, {
      "state-dir": "/flag",
      listen: ":9000",
      parallelism: "8",
      "drift-interval": "1h30m",
      "full-refresh-interval": "6h",
      "backend-url": "gs://flag",
      "secrets-provider": "gcpkms://flag",
      "no-leader-election": true,
      "operation-timeout": "5s",
      "compute-endpoint": "http://127.0.0.1:1/compute/v1/",
      nodeAddressRefreshPeriod: "2m",
      nodeLifecyclePeriod: "2s",
      nodeWorkers: "3",
      nodeZones: "us-central1-b,us-central1-c",
      clusterName: "staging",
    });
    assert.deepEqual(
      { ...settings, config: undefined },
      {
        ...COMMAND_LINE,
        config: undefined,
        nodes: {
          computeEndpoint: "http://127.0.0.1:1/compute/v1/",
          addressRefreshMs: 120_000,
          lifecycleCheckMs: 2000,
          workers: 3,
          zones: ["us-central1-b", "us-central1-c"],
        },
        stateDir: "/flag",
        listen: { host: "0.0.0.0", port: 9000 },
        parallelism: 8,
        driftMs: 5_400_000,
        fullRefreshMs: 21_600_000,
        operationTimeoutMs: 5000,
        backendUrl: "gs://flag",
        secretsProvider: "gcpkms://flag",
        leaderElection: false,
      },
    );
    assert.equal(settings.config.clusterName, "staging");
  });

  it("backendUrl: the flag, then the key, then $PULUMI_BACKEND_URL", () => {
    const env = { PULUMI_BACKEND_URL: "gs://env" };
    assert.equal(settingsOf(GCP, {}, env).backendUrl, "gs://env");
    assert.equal(settingsOf({ ...GCP, backendUrl: "gs://file" }, {}, env).backendUrl, "gs://file");
    assert.equal(
      settingsOf({ ...GCP, backendUrl: "gs://file" }, { "backend-url": "gs://flag" }, env).backendUrl,
      "gs://flag",
    );
  });

  // One rule (stacks/backend.ts): "" is unset wherever it is written; the next source is read.
  const backendRows: [string, Record<string, unknown>, DaemonFlagValues, Record<string, string>, string][] = [
    ["nothing: file://<stateDir>/backend", {}, {}, {}, "file:///var/lib/dccm/backend"],
    ["--state-dir moves the default", {}, { "state-dir": "/flag" }, {}, "file:///flag/backend"],
    ["the key stateDir moves it", { stateDir: "/file" }, {}, {}, "file:///file/backend"],
    ["PULUMI_BACKEND_URL= is unset", {}, {}, { PULUMI_BACKEND_URL: "" }, "file:///var/lib/dccm/backend"],
    ['backendUrl: "" is unset', { backendUrl: "" }, {}, { PULUMI_BACKEND_URL: "gs://env" }, "gs://env"],
    ['--backend-url "" is unset: the key is read', { backendUrl: "gs://file" }, { "backend-url": "" }, {}, "gs://file"],
    [
      '--state-dir "" is unset: the key is read',
      { stateDir: "/file" },
      { "state-dir": "" },
      {},
      "file:///file/backend",
    ],
  ];
  for (const [name, file, flags, env, expected] of backendRows)
    it(`backendUrl: ${name}`, () => assert.equal(settingsOf({ ...GCP, ...file }, flags, env).backendUrl, expected));

  it('any daemon flag given as "" is unset: its key is read, else the default', () => {
    const settings = settingsOf(
      { ...GCP, listen: "10.0.0.1:1", parallelism: 2 },
      { listen: "", parallelism: "", "drift-interval": "" },
    );
    assert.deepEqual(
      [settings.listen, settings.parallelism, settings.driftMs],
      [{ host: "10.0.0.1", port: 1 }, 2, 600_000],
    );
  });

  const accepted: [string, Record<string, unknown>, (s: DaemonSettings) => unknown, unknown][] = [
    ["a YAML number as a directory name", { stateDir: 2024 }, (s) => s.stateDir, "2024"],
    [
      "an empty key is unset",
      { stateDir: "", listen: "", parallelism: "", driftInterval: "", operationTimeout: "" },
      (s) => [s.stateDir, s.listen.port, s.parallelism, s.driftMs, s.operationTimeoutMs],
      ["/var/lib/dccm", 10258, 4, 600_000, 1_200_000],
    ],
    [
      "a null key is unset",
      { stateDir: null, leaderElection: null },
      (s) => [s.stateDir, s.leaderElection],
      ["/var/lib/dccm", true],
    ],
    ["leaderElection: false", { leaderElection: false }, (s) => s.leaderElection, false],
    ['leaderElection: "false"', { leaderElection: "false" }, (s) => s.leaderElection, false],
    ["parallelism as a string", { parallelism: "16" }, (s) => s.parallelism, 16],
    ["listen: an IPv6 host", { listen: "[::1]:10258" }, (s) => s.listen, { host: "[::1]", port: 10258 }],
    ["listen: port 0 (any free port)", { listen: "127.0.0.1:0" }, (s) => s.listen, { host: "127.0.0.1", port: 0 }],
  ];
  for (const [name, file, pick, expected] of accepted)
    it(name, () => assert.deepEqual(pick(settingsOf({ ...GCP, ...file })), expected));

  // A bad flag over a bad key: the flag wins, so only it is reported, named as the flag.
  const refused: [string, Record<string, unknown>, DaemonFlagValues, string][] = [
    ["listen", { listen: "nope" }, { listen: "h:99999" }, '"h:99999" is not HOST:PORT'],
    ["parallelism", { parallelism: 0 }, { parallelism: "two" }, 'expected a whole number ≥ 1, got "two"'],
    [
      "driftInterval",
      { driftInterval: 600 },
      { "drift-interval": "10" },
      'expected a duration such as 30s, 10m or 1h30m, got "10"',
    ],
    [
      "operationTimeout",
      { operationTimeout: "20 m" },
      { "operation-timeout": "597h" },
      'expected a duration of at most 596h, got "597h"',
    ],
  ];
  for (const [key, file, flags, flagProblem] of refused) {
    it(`${key}: a bad flag over a bad key is named as the flag`, () => {
      const flag = DAEMON_KEY_FLAGS[key as keyof typeof DAEMON_KEY_FLAGS];
      assert.deepEqual(problemsOf({ ...GCP, ...file }, flags), [`--${flag}: ${flagProblem}`]);
    });
  }

  const fileProblems: [Record<string, unknown>, string][] = [
    [{ listen: "nope" }, 'listen: "nope" is not HOST:PORT'],
    [{ listen: 10258 }, 'listen: "10258" is not HOST:PORT'],
    [{ parallelism: 0 }, "parallelism: expected a whole number ≥ 1, got 0"],
    [{ parallelism: true }, "parallelism: expected a whole number ≥ 1, got true"],
    [{ driftInterval: 600 }, "driftInterval: expected a duration such as 30s, 10m or 1h30m, got 600"],
    [{ operationTimeout: "20 m" }, 'operationTimeout: expected a duration such as 30s, 10m or 1h30m, got "20 m"'],
    [{ stateDir: ["/a", "/b"] }, 'stateDir: expected a string, got ["/a","/b"]'],
    [{ secretsProvider: true }, "secretsProvider: expected a string, got true"],
    [{ leaderElection: "no" }, 'leaderElection: expected true or false, got "no"'],
  ];
  for (const [file, problem] of fileProblems)
    it(problem, () => assert.deepEqual(problemsOf({ ...GCP, ...file }), [problem]));

  it("one list: unknown keys, then the GCP keys, the daemon's keys and the node controller's, each named as written", () => {
    assert.deepEqual(
      problemsOf(
        { ...GCP, region: "Europe", lisen: ":1", nodeWorkers: 0, parallelism: 0 },
        { "drift-interval": "10", backendMode: "pool" },
      ),
      [
        "lisen: unknown key (GCP keys: project, region, network, subnetwork, nodeTags, clusterName, clusterId, clusterCIDR, backendMode, configureRoutes, podCIDRSource, podCIDRStack, " +
          "loadBalancerClasses, instanceGroupLimit, enableL4DenyFirewall, instanceGroupZones, addressReservation, healthCheckSourceRanges, healthCheckSourceRangesIPv6, nodeHealthCheckPort, nodeHealthCheckPath, networkProject, firewallManagement; daemon keys: stateDir, listen, parallelism, driftInterval, fullRefreshInterval, backendUrl, secretsProvider, operationTimeout, leaderElection; " +
          "node controller keys: computeEndpoint, nodeAddressRefreshPeriod, nodeLifecyclePeriod, nodeWorkers, nodeZones)",
        'region: "Europe" is not a GCP region (like us-central1)',
        'backendMode: "pool" is not backend-service, target-pool or neg',
        "parallelism: expected a whole number ≥ 1, got 0",
        '--drift-interval: expected a duration such as 30s, 10m or 1h30m, got "10"',
        "nodeWorkers: expected an integer from 1 to 100, got 0",
      ],
    );
  });

  describe("clusterId from the cluster (ConfigMap kube-system/ingress-uid) when neither the file nor a flag has it", () => {
    const { clusterId: _omitted, ...noClusterId } = GCP;
    it("everything else valid: the cluster is to be asked", () =>
      assert.deepEqual(daemonSettings(input(noClusterId)), { kind: "needsClusterId" }));
    it("anything else invalid: its problems, before the cluster is asked", () =>
      assert.deepEqual(daemonSettings(input({ ...noClusterId, parallelism: 0 })), {
        kind: "invalid",
        problems: ["parallelism: expected a whole number ≥ 1, got 0"],
      }));
    it("the cluster's clusterId is used", () => {
      const result = daemonSettings(input(noClusterId), { clusterId: "feedface" });
      assert.equal(result.kind === "ok" ? result.settings.config.clusterId : result.kind, "feedface");
    });
    it("the cluster's clusterId is checked like the key", () =>
      assert.deepEqual(daemonSettings(input(noClusterId), { clusterId: "Not_A_Name" }), {
        kind: "invalid",
        problems: ['clusterId: "Not_A_Name" must be lowercase letters, digits and dashes, at most 46 characters'],
      }));
    it("the cluster has none: where it was looked for", () =>
      assert.deepEqual(daemonSettings(input(noClusterId), { clusterId: undefined }), {
        kind: "invalid",
        problems: [
          "clusterId: in neither --clusterId, the config file nor the cluster's ConfigMap kube-system/ingress-uid",
        ],
      }));
    it('clusterId: "" is unset: the cluster is to be asked', () =>
      assert.deepEqual(daemonSettings(input({ ...GCP, clusterId: "" })), { kind: "needsClusterId" }));
    it("the file's clusterId wins", () => {
      const result = daemonSettings(input(GCP), { clusterId: "feedface" });
      assert.equal(result.kind === "ok" ? result.settings.config.clusterId : result.kind, "c0ffee1234");
    });
    it("--clusterId counts as set", () => {
      const result = daemonSettings(input(noClusterId, { clusterId: "f00d" }));
      assert.equal(result.kind === "ok" ? result.settings.config.clusterId : result.kind, "f00d");
    });
  });
});

describe("daemon/config resolveDaemonSettings", () => {
  const { clusterId: _omitted, ...noClusterId } = GCP;
  function lookup(answer: string | undefined): { read: () => Promise<string | undefined>; calls: () => number } {
    let calls = 0;
    return {
      read: () => {
        calls++;
        return Promise.resolve(answer);
      },
      calls: () => calls,
    };
  }
  async function problems(promise: Promise<DaemonSettings>): Promise<string[]> {
    try {
      await promise;
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error.problems;
    }
    return assert.fail("resolved");
  }

  it("clusterId set: the cluster is not asked", async () => {
    const cluster = lookup("feedface");
    assert.equal((await resolveDaemonSettings(input(GCP), cluster.read)).config.clusterId, "c0ffee1234");
    assert.equal(cluster.calls(), 0);
  });
  it("clusterId unset: asked once", async () => {
    const cluster = lookup("feedface");
    assert.equal((await resolveDaemonSettings(input(noClusterId), cluster.read)).config.clusterId, "feedface");
    assert.equal(cluster.calls(), 1);
  });
  it("a problem elsewhere: a ConfigError listing it, the cluster not asked", async () => {
    const cluster = lookup("feedface");
    assert.deepEqual(await problems(resolveDaemonSettings(input({ ...noClusterId, listen: "x" }), cluster.read)), [
      'listen: "x" is not HOST:PORT',
    ]);
    assert.equal(cluster.calls(), 0);
  });
  it("the cluster has none either: where it was looked for", async () => {
    assert.deepEqual(await problems(resolveDaemonSettings(input(noClusterId), lookup(undefined).read)), [
      "clusterId: in neither --clusterId, the config file nor the cluster's ConfigMap kube-system/ingress-uid",
    ]);
  });
});

describe("daemon/config encryptionProblem", () => {
  const message =
    "set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) or --secrets-provider (e.g. gcpkms://…) so stacks can be encrypted";
  const cases: [string, string | undefined, Record<string, string>, string | undefined][] = [
    ["nothing", undefined, {}, message],
    ["a secrets provider", "gcpkms://k", {}, undefined],
    ["a passphrase", undefined, { PULUMI_CONFIG_PASSPHRASE: "" }, undefined],
    ["a passphrase file", undefined, { PULUMI_CONFIG_PASSPHRASE_FILE: "/p" }, undefined],
  ];
  for (const [name, secretsProvider, env, expected] of cases)
    it(name, () => assert.equal(encryptionProblem({ secretsProvider }, env), expected));
});

describe("daemon/config daemonOptions", () => {
  it("the settings, and the named tunables", () => {
    const kubeConfig = new KubeConfig();
    const logger = pino({ level: "silent" });
    const settings = settingsOf({ ...GCP, computeEndpoint: "http://127.0.0.1:1/compute/v1/" });
    assert.deepEqual(daemonOptions(settings, { kubeConfig, logger, identity: "pod-0" }), {
      kubeConfig,
      config: settings.config,
      logger,
      stateDir: "/var/lib/dccm",
      backendUrl: "file:///var/lib/dccm/backend",
      secretsProvider: undefined,
      pulumiEnv: {},
      listenHost: "0.0.0.0",
      listenPort: 10258,
      parallelism: 4,
      driftMs: 600_000,
      fullRefreshMs: 86_400_000,
      operationTimeoutMs: 1_200_000,
      maxOrphanDestroys: 5,
      confirmOrphanDestroys: 0,
      driftJitter: 0.1,
      backoffBaseMs: 5000,
      backoffMaxMs: 300_000,
      resyncMs: 600_000,
      debounceMs: 50,
      leaderElection: true,
      identity: "pod-0",
      nodes: settings.nodes,
      leakCheck: { computeEndpoint: "http://127.0.0.1:1/compute/v1/" },
      driftListing: { computeEndpoint: "http://127.0.0.1:1/compute/v1/" },
      firstUpGuard: { computeEndpoint: "http://127.0.0.1:1/compute/v1/" },
      negEndpoints: { computeEndpoint: "http://127.0.0.1:1/compute/v1/" },
    });
  });
  it("--no-node-controller: no node controller, the leak check keeps the endpoint", () => {
    const settings = {
      ...settingsOf({ ...GCP, computeEndpoint: "http://127.0.0.1:1/compute/v1/" }),
      nodeController: false,
    };
    const options = daemonOptions(settings, {
      kubeConfig: new KubeConfig(),
      logger: pino({ level: "silent" }),
      identity: "x",
    });
    assert.deepEqual(
      [options.nodes, options.leakCheck],
      [undefined, { computeEndpoint: "http://127.0.0.1:1/compute/v1/" }],
    );
  });
});

describe("daemon/config and the help table (bin/daemonCommand.ts)", () => {
  it("DAEMON_FLAGS lists exactly the daemon's flags, in order", () =>
    assert.deepEqual(
      DAEMON_FLAGS.map((flag) => flag.name),
      [...DAEMON_FLAG_NAMES],
    ));
  it("NODE_FLAGS lists exactly the node controller's flags, in order", () =>
    assert.deepEqual(
      NODE_FLAGS.map((flag) => flag.name),
      [...NODE_FLAG_NAMES],
    ));
  it("every daemon key has a flag; only leaderElection's is a switch", () => {
    const switches = DAEMON_KEYS.filter(
      (key) => DAEMON_FLAGS.find((flag) => flag.name === DAEMON_KEY_FLAGS[key])?.value === undefined,
    );
    assert.deepEqual(switches, ["leaderElection"]);
  });
});
