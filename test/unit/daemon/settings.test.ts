// daemon/settings.ts: the one table of the daemon's settings and what is derived from it, as exact values.
import * as assert from "node:assert/strict";
import {
  configKeyOfFlag,
  DAEMON_DEFAULTS,
  DAEMON_FLAG_NAMES,
  DAEMON_KEY_FLAGS,
  DAEMON_KEYS,
  DAEMON_SETTINGS,
  NODE_FLAG_NAMES,
} from "../../../daemon/settings";
import { NODE_CONFIG_KEYS } from "../../../controllers/node/config";

describe("daemon/settings: DAEMON_SETTINGS and what is derived from it", () => {
  it("the daemon's flags, in --help order", () =>
    assert.deepEqual(DAEMON_FLAG_NAMES, [
      "kubeconfig",
      "config",
      "state-dir",
      "listen",
      "parallelism",
      "drift-interval",
      "full-refresh-interval",
      "backend-url",
      "secrets-provider",
      "compute-endpoint",
      "operation-timeout",
      "shutdown-timeout",
      "confirm-orphan-destroys",
      "adopt",
      "allow-replace",
      "no-leader-election",
      "no-node-controller",
      "shared-provider",
      "identity",
      "log-level",
    ]));

  it("the node controller's flags are its keys but computeEndpoint", () =>
    assert.deepEqual(
      NODE_FLAG_NAMES,
      NODE_CONFIG_KEYS.filter((key) => key !== "computeEndpoint"),
    ));

  it("the daemon keys and the flag of each", () => {
    assert.deepEqual(DAEMON_KEYS, [
      "stateDir",
      "listen",
      "parallelism",
      "driftInterval",
      "fullRefreshInterval",
      "backendUrl",
      "secretsProvider",
      "operationTimeout",
      "leaderElection",
    ]);
    assert.deepEqual(DAEMON_KEY_FLAGS, {
      stateDir: "state-dir",
      listen: "listen",
      parallelism: "parallelism",
      driftInterval: "drift-interval",
      fullRefreshInterval: "full-refresh-interval",
      backendUrl: "backend-url",
      secretsProvider: "secrets-provider",
      operationTimeout: "operation-timeout",
      leaderElection: "no-leader-election",
    });
  });

  const keysOfFlags: [Parameters<typeof configKeyOfFlag>[0], string | undefined][] = [
    ["state-dir", "stateDir"],
    ["compute-endpoint", "computeEndpoint"],
    ["no-leader-election", "leaderElection"],
    ["log-level", undefined],
    ["kubeconfig", undefined],
  ];
  for (const [flag, key] of keysOfFlags)
    it(`configKeyOfFlag(${flag}): ${String(key)}`, () => assert.equal(configKeyOfFlag(flag), key));

  it("the defaults, each the one the table's row holds", () => {
    assert.deepEqual(DAEMON_DEFAULTS, {
      stateDir: "/var/lib/dccm",
      listen: "0.0.0.0:10258",
      driftMs: 600_000,
      fullRefreshMs: 86_400_000,
      operationTimeoutMs: 1_200_000,
      shutdownTimeoutMs: 30_000,
      confirmOrphanDestroys: 0,
      logLevel: "info",
    });
    const rowDefaults = Object.fromEntries(
      DAEMON_SETTINGS.flatMap((row) => ("default" in row ? [[row.flag, row.default]] : [])),
    );
    assert.deepEqual(rowDefaults, {
      "state-dir": "/var/lib/dccm",
      listen: "0.0.0.0:10258",
      "drift-interval": 600_000,
      "full-refresh-interval": 86_400_000,
      "operation-timeout": 1_200_000,
      "shutdown-timeout": 30_000,
      "confirm-orphan-destroys": 0,
      "log-level": "info",
      nodeAddressRefreshPeriod: 300_000,
      nodeLifecyclePeriod: 30_000,
      nodeWorkers: 10,
    });
  });

  it("a duration's default is in milliseconds, and only a duration's", () =>
    assert.deepEqual(
      DAEMON_SETTINGS.filter((row) => "unit" in row).map((row) => row.flag),
      DAEMON_SETTINGS.filter((row) => row.type === "duration").map((row) => row.flag),
    ));
});
