/**
 * Leadership and start-up of the daemon against a real apiserver, the real engine and the
 * emulator: a leader cut off from the apiserver stops acting within the renew deadline while a
 * standby takes over; a Service created while the daemon starts is not missed.
 */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { DEFAULT_LEASE } from "../../daemon/leader";
import { parseConfig } from "../../model";
import { parseNodeConfig } from "../../controllers/node";
import { BlackholeProxy } from "../support/e2e/blackhole-proxy";
import { E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";

interface Run {
  stack: string;
  operation: string;
  at: number;
}

/** A kubeconfig that runs `onNodeList` (awaited) before the n-th plain list of Nodes goes out. */
class NodeListHookKubeConfig extends k8s.KubeConfig {
  private nodeLists = 0;

  constructor(
    kubeconfigPath: string,
    private readonly onNodeList: (n: number) => Promise<void>,
  ) {
    super();
    this.loadFromFile(kubeconfigPath);
  }

  override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    const url = new URL(context.getUrl());
    if (
      context.getHttpMethod() === k8s.HttpMethod.GET &&
      url.pathname === "/api/v1/nodes" &&
      !url.searchParams.has("watch")
    ) {
      this.nodeLists++;
      await this.onNodeList(this.nodeLists);
    }
    await super.applySecurityAuthentication(context);
  }
}

describe("dccm daemon: leadership and start-up", function () {
  this.timeout(300_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  const daemons: Daemon[] = [];
  let proxy: BlackholeProxy | undefined;

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  });

  after(async () => {
    await Promise.all(daemons.map((daemon) => daemon.stop()));
    await proxy?.close();
    await env?.stop();
  });

  it("a leader cut off from the apiserver reports leader 0, aborts and starts no up once the renew deadline passes; the standby takes over", async () => {
    proxy = new BlackholeProxy(Number(new URL(env.kube.server).port));
    await proxy.open();
    const config = parseConfig(E2E_CONFIG);
    const runs = { cut: [] as Run[], standby: [] as Run[] };
    const cut = new Daemon(
      daemonOptions(env, config, {
        kubeConfig: proxy.kubeConfig(env.kube.kubeconfigPath),
        identity: "dccm-cut",
        stateDir: path.join(env.dir, "state-cut"),
        onRunStart: (stack, operation) => runs.cut.push({ stack, operation, at: Date.now() }),
      }),
    );
    const standby = new Daemon(
      daemonOptions(env, config, {
        identity: "dccm-standby",
        stateDir: path.join(env.dir, "state-standby"),
        onRunStart: (stack, operation) => runs.standby.push({ stack, operation, at: Date.now() }),
      }),
    );
    daemons.push(cut, standby);
    let lost: { at: number; leader: Promise<number | undefined> } | undefined;
    await cut.start(() => {
      // A Gauge without a collect function takes its values when get() is called: this is the
      // value at the moment the caller is told, when the daemon must already have stopped acting.
      lost = { at: Date.now(), leader: cut.metrics.leader.get().then((data) => data.values[0]?.value) };
    });
    let standbyLeads = false;
    const standbyStarted = standby
      .start(() => assert.fail("the standby lost leadership"))
      .then(() => {
        standbyLeads = true;
      });

    await core.createNamespacedService({ namespace: "default", body: lbService("before-cut") });
    await eventually(
      "before-cut's up on the leader",
      () => runs.cut.find((run) => run.stack === "service.default.before-cut"),
      120_000,
      50,
    );
    await cut.idle();
    assert.equal(standbyLeads, false);
    // A standby that reads the Lease is ready: a rolling update's new pod is one, and a readiness it
    // could never reach would stall the rollout.
    const readyz = async (daemon: Daemon): Promise<number> =>
      (await fetch(`http://127.0.0.1:${daemon.address?.port ?? 0}/readyz`)).status;
    assert.deepEqual(
      await eventually(
        "the standby ready",
        async () => ((await readyz(standby)) === 200 ? [await readyz(cut), 200] : undefined),
        10_000,
        50,
      ),
      [200, 200],
    );

    const cutAt = Date.now();
    proxy.blackhole();
    const loss = await eventually(
      "the cut leader's onLost",
      () => lost,
      DEFAULT_LEASE.renewDeadlineMs + 3 * DEFAULT_LEASE.retryPeriodMs,
      50,
    );
    assert.equal(await loss.leader, 0);
    assert.equal(
      loss.at - cutAt <= DEFAULT_LEASE.renewDeadlineMs + DEFAULT_LEASE.retryPeriodMs,
      true,
      `lost ${loss.at - cutAt} ms after the cut`,
    );
    assert.equal(await counter(cut.metrics.registry, "dccm_leader", {}), 0);

    await standbyStarted;
    await core.createNamespacedService({ namespace: "default", body: lbService("after-cut") });
    await eventually(
      "after-cut's up on the new leader",
      () => runs.standby.find((run) => run.stack === "service.default.after-cut"),
      120_000,
      50,
    );
    await standby.idle();
    assert.deepEqual(
      runs.cut.filter((run) => run.at >= loss.at),
      [],
    );
    const lease = await env.kube.kubeConfig
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: DEFAULT_LEASE.name, namespace: DEFAULT_LEASE.namespace });
    assert.equal(lease.spec?.holderIdentity, "dccm-standby");
    await Promise.all([cut.stop(), standby.stop()]);
  });

  it("a Service created while the daemon lists Nodes at start-up is acted on, and Nodes are listed once (one watch, the node controller's included)", async () => {
    const runs: Run[] = [];
    // eslint-disable-next-line prefer-const -- the hook below reads it before it is assigned
    let daemon: Daemon | undefined;
    let nodeLists = 0;
    const kubeConfig = new NodeListHookKubeConfig(env.kube.kubeconfigPath, async (n) => {
      nodeLists = n;
      // The watcher's Node list, during which its Service list may already be in: the Service
      // arrives as a watch event before the desired state is first filled.
      if (n !== 1 || daemon === undefined) return;
      await core.createNamespacedService({ namespace: "default", body: lbService("during-start") });
      const watching = daemon;
      await eventually(
        "during-start in the daemon's watch cache",
        () => watching["watcher"]?.meta("default", "during-start"),
        30_000,
        20,
      );
    });
    daemon = new Daemon(
      daemonOptions(env, parseConfig(E2E_CONFIG), {
        kubeConfig,
        identity: "dccm-start",
        stateDir: path.join(env.dir, "state-start"),
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint }, []),
        onRunStart: (stack, operation) => runs.push({ stack, operation, at: Date.now() }),
      }),
    );
    daemons.push(daemon);
    await daemon.start(() => assert.fail("leadership lost"));
    const run = await eventually(
      "during-start's up",
      () => runs.find((entry) => entry.stack === "service.default.during-start"),
      60_000,
      50,
    );
    assert.equal(run.operation, "up");
    assert.equal(nodeLists, 1, "the node controller reads the watcher's Nodes: no list of its own");
  });
});
