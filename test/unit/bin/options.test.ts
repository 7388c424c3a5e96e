// bin/options.ts, the module every command shares: flags and their help from one list, where the
// daemon's stacks are (backend, Compute endpoint) and clusterId, each as a table of exact values.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ADOPT_HELP } from "../../../bin/adoptCommand";
import { GC_HELP } from "../../../bin/gcCommand";
import {
  clusterConfig,
  clusterIdOf,
  commandHelp,
  computeEndpointOf,
  configFlag,
  describeFailure,
  dropWarnings,
  flagOptions,
  helpLine,
  nearestFlag,
  parseCommand,
  READER_FLAGS,
  readReaderFlags,
  stringFlag,
  UsageError,
  type Flag,
  type FlagValues,
} from "../../../bin/options";
import { PREVIEW_HELP } from "../../../bin/previewCommand";
import { STATUS_HELP } from "../../../bin/statusCommand";
import { splitConfig } from "../../../daemon/config";
import { ConfigError, parseConfig, type RawConfig } from "../../../model";

const NOT_FOUND =
  "clusterId: in neither --clusterId, the config file nor the cluster's ConfigMap kube-system/ingress-uid";
const GCP = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "prod",
  clusterId: "c0ffee1234",
};

/** The problems of the ConfigError `run` throws. */
async function problemsOf(run: () => unknown): Promise<string[]> {
  try {
    await run();
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  return assert.fail("no ConfigError");
}

/** A lookup of the cluster's clusterId that counts its calls. */
function cluster(answer: string | undefined): { read: () => Promise<string | undefined>; calls: number } {
  const lookup = {
    calls: 0,
    read: () => {
      lookup.calls++;
      return Promise.resolve(answer);
    },
  };
  return lookup;
}

describe("bin/options flags and help", () => {
  const lines: [Flag, string][] = [
    [{ name: "json", help: "print JSON" }, "  --json                               print JSON"],
    [{ name: "url", value: "URL", help: "the listener" }, "  --url URL                            the listener"],
    [
      { name: "state-dir", value: "DIR", key: "stateDir", help: "where" },
      "  --state-dir DIR                      [stateDir] where",
    ],
    [
      { name: "no-leader-election", key: "leaderElection", help: "one replica" },
      "  --no-leader-election                 [leaderElection: false] one replica",
    ],
    [
      { name: "a-flag-longer-than-the-column-of-help", value: "X", help: "h" },
      "  --a-flag-longer-than-the-column-of-help Xh",
    ],
  ];
  for (const [flag, line] of lines) it(`helpLine: --${flag.name}`, () => assert.equal(helpLine(flag), line));

  it("commandHelp: the head, the entries (strings as they are), -h, then the tail", () => {
    assert.equal(
      commandHelp(["usage: dccm x"], [{ name: "json", help: "print JSON" }, "  a heading:"], ["exit 0."]),
      [
        "usage: dccm x",
        "  --json                               print JSON",
        "  a heading:",
        "  -h, --help                           print this help",
        "exit 0.",
      ].join("\n"),
    );
  });

  it("flagOptions: help, then a string flag per placeholder, a switch otherwise; strings are no flags", () => {
    assert.deepEqual(
      flagOptions([{ name: "json", help: "" }, "  a heading:", { name: "url", value: "URL", help: "" }]),
      {
        help: { type: "boolean", short: "h" },
        json: { type: "boolean" },
        url: { type: "string" },
      },
    );
  });

  const parses: [string, string[], { gcpFlags?: boolean; positionals?: boolean }, FlagValues | string, string[]?][] = [
    ["a switch and a value", ["--json", "--url", "u"], {}, { json: true, url: "u" }],
    ["-h", ["-h"], {}, { help: true }],
    ["a GCP flag with gcpFlags", ["--project", "p"], { gcpFlags: true }, { project: "p" }],
    ["a GCP flag without", ["--project", "p"], {}, "unknown flag --project"],
    ["a missing value", ["--url"], {}, "Option '--url <value>' argument missing"],
    ["positionals when allowed", ["--json", "a/b/c"], { positionals: true }, { json: true }, ["a/b/c"]],
    [
      "positionals when not",
      ["a/b/c"],
      {},
      "Unexpected argument 'a/b/c'. This command does not take positional arguments",
    ],
  ];
  for (const [name, argv, options, expected, positionals] of parses) {
    it(`parseCommand: ${name}`, () => {
      const flags = [
        { name: "json", help: "" },
        { name: "url", value: "URL", help: "" },
      ];
      if (typeof expected === "string") {
        assert.throws(
          () => parseCommand(argv, flags, options),
          (error: unknown) => error instanceof UsageError && error.message === expected,
        );
        return;
      }
      const parsed = parseCommand(argv, flags, options);
      assert.deepEqual({ ...parsed.values }, expected);
      assert.deepEqual(parsed.positionals, positionals ?? []);
    });
  }

  it("stringFlag: a value, not a switch", () => {
    assert.deepEqual(
      ["url", "json", "nope"].map((name) => stringFlag({ url: "u", json: true }, name)),
      ["u", undefined, undefined],
    );
  });

  it("configFlag names the keys the command reads", () => {
    assert.equal(
      helpLine(configFlag(["clusterId", "stateDir"])),
      "  --config FILE                        the config file of dccm daemon (clusterId, stateDir)",
    );
  });

  // The point of one definition: every command that takes a shared flag says the same of it.
  const helps: [string, string][] = [
    ["preview", PREVIEW_HELP],
    ["status", STATUS_HELP],
    ["gc", GC_HELP],
    ["adopt", ADOPT_HELP],
  ];
  for (const flag of [READER_FLAGS.stateDir, READER_FLAGS.backendUrl]) {
    it(`--${flag.name}: one line, in preview, status, gc and adopt alike`, () => {
      for (const [command, help] of helps) assert.ok(help.split("\n").includes(helpLine(flag)), command);
      assert.equal(
        helpLine(READER_FLAGS.backendUrl),
        "  --backend-url URL                    [backendUrl] the daemon's Pulumi backend (default $PULUMI_BACKEND_URL, else file://<state-dir>/backend)",
      );
    });
  }
});

describe("bin/options readReaderFlags: where the daemon's stacks are, as the daemon finds them", () => {
  let tmp: string;
  before(() => (tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-options-"))));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  let files = 0;
  function config(text: string): string {
    const file = path.join(tmp, `config-${files++}.yaml`);
    fs.writeFileSync(file, text);
    return file;
  }

  const rows: [
    string,
    string | undefined,
    FlagValues,
    Record<string, string>,
    { stateDir: string; backendUrl: string; secretsProvider: string | undefined },
  ][] = [
    [
      "nothing",
      undefined,
      {},
      {},
      { stateDir: "/var/lib/dccm", backendUrl: "file:///var/lib/dccm/backend", secretsProvider: undefined },
    ],
    [
      "$PULUMI_BACKEND_URL",
      undefined,
      {},
      { PULUMI_BACKEND_URL: "gs://env" },
      { stateDir: "/var/lib/dccm", backendUrl: "gs://env", secretsProvider: undefined },
    ],
    [
      "PULUMI_BACKEND_URL= is unset",
      undefined,
      {},
      { PULUMI_BACKEND_URL: "" },
      { stateDir: "/var/lib/dccm", backendUrl: "file:///var/lib/dccm/backend", secretsProvider: undefined },
    ],
    [
      "the file's keys over the environment",
      "stateDir: /file\nbackendUrl: gs://file\nsecretsProvider: gcpkms://file\n",
      {},
      { PULUMI_BACKEND_URL: "gs://env" },
      { stateDir: "/file", backendUrl: "gs://file", secretsProvider: "gcpkms://file" },
    ],
    [
      "the file's stateDir moves the default",
      "stateDir: /file\n",
      {},
      {},
      { stateDir: "/file", backendUrl: "file:///file/backend", secretsProvider: undefined },
    ],
    [
      'the file\'s "" is unset',
      'stateDir: ""\nbackendUrl: ""\nsecretsProvider: ""\n',
      {},
      {},
      { stateDir: "/var/lib/dccm", backendUrl: "file:///var/lib/dccm/backend", secretsProvider: undefined },
    ],
    [
      "the flags over the file",
      "stateDir: /file\nbackendUrl: gs://file\nsecretsProvider: gcpkms://file\n",
      { "state-dir": "/flag", "backend-url": "gs://flag", "secrets-provider": "gcpkms://flag" },
      {},
      { stateDir: "/flag", backendUrl: "gs://flag", secretsProvider: "gcpkms://flag" },
    ],
    [
      'a flag given as "" is unset: the file\'s key',
      "stateDir: /file\nbackendUrl: gs://file\n",
      { "state-dir": "", "backend-url": "" },
      {},
      { stateDir: "/file", backendUrl: "gs://file", secretsProvider: undefined },
    ],
    [
      "a YAML number as a directory",
      "stateDir: 2024\n",
      {},
      {},
      { stateDir: "2024", backendUrl: `file://${path.resolve("2024", "backend")}`, secretsProvider: undefined },
    ],
  ];
  for (const [name, file, flags, env, expected] of rows) {
    it(name, () => {
      const values = file === undefined ? flags : { ...flags, config: config(file) };
      assert.deepEqual(readReaderFlags(values, env).backend, expected);
    });
  }

  it("the GCP flags over the file's keys, --kubeconfig as given", () => {
    const read = readReaderFlags(
      { config: config("clusterId: file\nregion: r\n"), clusterId: "flag", kubeconfig: "/k" },
      {},
    );
    assert.deepEqual([read.shared.model, read.kubeconfig], [{ clusterId: "flag", region: "r" }, "/k"]);
  });

  it("a key of the wrong type: a ConfigError naming it", async () => {
    assert.deepEqual(
      await problemsOf(() =>
        readReaderFlags({ config: config("stateDir: [a]\nbackendUrl: {x: 1}\nsecretsProvider: true\n") }, {}),
      ),
      [
        'stateDir: expected a string, got ["a"]',
        'backendUrl: expected a string, got {"x":1}',
        "secretsProvider: expected a string, got true",
      ],
    );
  });

  it("an unreadable --config: a UsageError", () => {
    const missing = path.join(tmp, "missing.yaml");
    assert.throws(
      () => readReaderFlags({ config: missing }, {}),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message === `--config ${missing}: ENOENT: no such file or directory, open '${missing}'`,
    );
  });
});

describe("bin/options computeEndpointOf", () => {
  const rows: [string, Record<string, unknown>, FlagValues, string | undefined | string[]][] = [
    ["neither: undefined (the client's default)", {}, {}, undefined],
    ["the file's", { computeEndpoint: "http://file/compute/v1/" }, {}, "http://file/compute/v1/"],
    [
      "the flag over the file's",
      { computeEndpoint: "http://file/compute/v1/" },
      { "compute-endpoint": "http://flag/compute/v1/" },
      "http://flag/compute/v1/",
    ],
    [
      "checked as the node controller checks it",
      {},
      { "compute-endpoint": "nope" },
      ['computeEndpoint: expected an http(s) URL such as https://compute.googleapis.com/compute/v1/, got "nope"'],
    ],
  ];
  for (const [name, file, flags, expected] of rows) {
    it(name, async () => {
      const shared = splitConfig(file);
      if (Array.isArray(expected)) assert.deepEqual(await problemsOf(() => computeEndpointOf(flags, shared)), expected);
      else assert.equal(computeEndpointOf(flags, shared), expected);
    });
  }
});

describe("bin/options clusterId: the flag or the config file, else the cluster's ConfigMap", () => {
  const { clusterId: _omitted, ...noClusterId } = GCP;

  const configs: [
    string,
    Record<string, unknown>,
    string | undefined,
    { clusterId: string; asked: number } | string[],
  ][] = [
    ["set: the cluster is not asked", GCP, "fromcluster", { clusterId: "c0ffee1234", asked: 0 }],
    ["unset: asked once", noClusterId, "fromcluster", { clusterId: "fromcluster", asked: 1 }],
    ['"" is unset: asked', { ...GCP, clusterId: "" }, "fromcluster", { clusterId: "fromcluster", asked: 1 }],
    ["null is unset: asked", { ...GCP, clusterId: null }, "fromcluster", { clusterId: "fromcluster", asked: 1 }],
    ["nowhere: where it was looked for", noClusterId, undefined, [NOT_FOUND]],
    [
      "nowhere, and other problems: theirs first",
      { ...noClusterId, region: "Europe", zone: "x" },
      undefined,
      [
        "zone: unknown key (GCP keys: project, region, network, subnetwork, nodeTags, clusterName, clusterId, clusterCIDR, backendMode, configureRoutes, podCIDRSource, podCIDRStack, " +
          "loadBalancerClasses, instanceGroupLimit, enableL4DenyFirewall, instanceGroupZones, addressReservation, healthCheckSourceRanges, healthCheckSourceRangesIPv6, nodeHealthCheckPort, nodeHealthCheckPath, networkProject, firewallManagement; daemon keys: stateDir, listen, parallelism, driftInterval, fullRefreshInterval, backendUrl, secretsProvider, operationTimeout, leaderElection; " +
          "node controller keys: computeEndpoint, nodeAddressRefreshPeriod, nodeLifecyclePeriod, nodeWorkers, nodeZones)",
        'region: "Europe" is not a GCP region (like us-central1)',
        NOT_FOUND,
      ],
    ],
    [
      "the cluster's is checked like the key",
      noClusterId,
      "Not_A_Name",
      ['clusterId: "Not_A_Name" must be lowercase letters, digits and dashes, at most 46 characters'],
    ],
  ];
  for (const [name, file, answer, expected] of configs) {
    it(`clusterConfig: ${name}`, async () => {
      const lookup = cluster(answer);
      const shared = splitConfig(file);
      if (Array.isArray(expected)) {
        assert.deepEqual(await problemsOf(() => clusterConfig(shared, lookup.read)), expected);
        return;
      }
      assert.deepEqual(
        await clusterConfig(shared, lookup.read),
        parseConfig({ ...file, clusterId: expected.clusterId }),
      );
      assert.equal(lookup.calls, expected.asked);
    });
  }

  const ids: [string, RawConfig, string | undefined, string | string[]][] = [
    ["set", { clusterId: "c0ffee" }, "fromcluster", "c0ffee"],
    ["set, trimmed as parseConfig trims it", { clusterId: " c0ffee " }, "fromcluster", "c0ffee"],
    ["unset: the cluster's", {}, "fromcluster", "fromcluster"],
    ['"" is unset: the cluster\'s', { clusterId: "" }, "fromcluster", "fromcluster"],
    ["nowhere: where it was looked for", {}, undefined, [NOT_FOUND]],
    [
      "not a string: as parseConfig says",
      { clusterId: 12345 },
      "fromcluster",
      ["clusterId: expected a string, got 12345"],
    ],
  ];
  for (const [name, model, answer, expected] of ids) {
    it(`clusterIdOf: ${name}`, async () => {
      const lookup = cluster(answer);
      if (Array.isArray(expected)) assert.deepEqual(await problemsOf(() => clusterIdOf(model, lookup.read)), expected);
      else assert.equal(await clusterIdOf(model, lookup.read), expected);
    });
  }
});

describe("bin/options describeFailure", () => {
  const rows: [string, unknown, string][] = [
    [
      "a ConfigError: every problem, on one line",
      new ConfigError(["region: required", NOT_FOUND]),
      `invalid configuration: region: required; ${NOT_FOUND}`,
    ],
    [
      "any other error: describeError's chain",
      new Error("reading stack cluster", { cause: new Error("permission denied") }),
      "reading stack cluster: permission denied",
    ],
  ];
  for (const [name, error, expected] of rows) it(name, () => assert.equal(describeFailure(error), expected));

  describe("nearestFlag: the known flag an unknown one most likely meant", () => {
    const known = [
      "kubeconfig",
      "config",
      "state-dir",
      "log-level",
      "clusterId",
      "no-leader-election",
      "listen",
      "json",
    ];
    const cases: [string, string | undefined][] = [
      ["--stateDir", "state-dir"],
      ["--STATE_DIR", "state-dir"],
      ["--cluster-id", "clusterId"],
      ["--loglevel", "log-level"],
      ["--kubconfig", "kubeconfig"],
      ["--confg", "config"],
      ["--lsiten", "listen"],
      ["--no-leader-elections", "no-leader-election"],
      ["--jsn", undefined],
      ["--bogus", undefined],
      ["-x", undefined],
      ["--completely-different", undefined],
    ];
    for (const [given, meant] of cases)
      it(`${given} → ${String(meant)}`, () => assert.equal(nearestFlag(given, known), meant));
  });

  it("dropWarnings: that type of warning is dropped, every other reaches the listeners there were", async () => {
    const saved = process.listeners("warning");
    const heard: string[] = [];
    process.removeAllListeners("warning");
    process.on("warning", (warning) => heard.push(`${warning.name}: ${warning.message}`));
    try {
      dropWarnings("MetadataLookupWarning");
      process.emitWarning(
        "received unexpected error = getaddrinfo EAI_AGAIN metadata.google.internal code = EAI_AGAIN",
        "MetadataLookupWarning",
      );
      process.emitWarning("something else", "OtherWarning");
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.removeAllListeners("warning");
      for (const listener of saved) process.on("warning", listener);
    }
    assert.deepEqual(heard, ["OtherWarning: something else"]);
  });
});
