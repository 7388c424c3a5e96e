// The real stock GCE cloud-controller-manager (Google's code: k8s.io/cloud-provider v0.28.2 with
// the GCE provider of k8s.io/cloud-provider-gcp/providers v0.28.2, built by `bash scripts/testenv`
// from scripts/testenv.d/gce-ccm) run against the test's kube-apiserver and GCE emulator.
//
//   const ccm = await startStockCcm(env, { clusterName: "e2e", clusterId: "e2e0cafe", ... });
//   ...                                     // it serves LoadBalancer Services and routes
//   await ccm.stop();                       // SIGTERM, as docs/guides/migrate-from-stock-ccm.md says
//
// It reaches the emulator over plain HTTP through gce.conf `api-endpoint`. Its credentials come
// from a fake metadata server (GCE_METADATA_HOST) that hands out a token: the emulator checks none,
// and without it the provider falls back to default credentials and waits about a minute.

import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import type * as k8s from "@kubernetes/client-node";

import type { TestEnv } from "./env";
import { requireTestenvBinary } from "../tooling/testenv-paths";

const STOP_GRACE_MS = 10_000;

export interface StockCcmOptions {
  /** --cluster-name: the prefix of its route names (truncated to 26 characters). */
  readonly clusterName: string;
  /** The cluster ID the provider reads from ConfigMap kube-system/ingress-uid (created here when absent). */
  readonly clusterId: string;
  /** gce.conf network-name and subnetwork-name. */
  readonly network: string;
  readonly subnetwork: string;
  /** gce.conf node-tags: the target tags of its firewalls. */
  readonly nodeTags: readonly string[];
  /** --cluster-cidr, the range the route controller's routes come from. Default 10.64.0.0/14. */
  readonly clusterCidr?: string;
  /** Also run the cloud-node and cloud-node-lifecycle controllers. Default false: service and route only. */
  readonly nodeControllers?: boolean;
}

export interface StockCcm {
  /** The process's combined output (klog), for assertions and for debugging a failure. */
  readonly logPath: string;
  readonly pid: number;
  /** SIGTERM, then waits for the exit (SIGKILL after a bound). Idempotent. */
  stop(): Promise<void>;
}

/**
 * A metadata server that answers the one request the provider makes with gce.conf's project and
 * zone given: the default service account's token (cloud.google.com/go/compute/metadata, path
 * `instance/service-accounts/default/token`, header `Metadata-Flavor: Google` both ways).
 */
async function startMetadataServer(): Promise<{ host: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const wanted =
      req.url?.split("?")[0] === "/computeMetadata/v1/instance/service-accounts/default/token" &&
      req.headers["metadata-flavor"] === "Google";
    res.writeHead(wanted ? 200 : 404, { "content-type": "application/json", "metadata-flavor": "Google" });
    res.end(wanted ? JSON.stringify({ access_token: "emulator-token", expires_in: 3600, token_type: "Bearer" }) : "{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") {
    throw new Error(`metadata server: unexpected address ${String(address)}`);
  }
  return {
    host: `127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** gce.conf (gcfg): the provider's ConfigGlobal keys, gce.go. `multizone`: every zone of the region is managed. */
function gceConf(env: TestEnv, opts: StockCcmOptions): string {
  return [
    "[global]",
    `project-id = ${env.gce.project}`,
    `local-zone = ${env.gce.zones[0] ?? `${env.gce.region}-a`}`,
    `network-name = ${opts.network}`,
    `subnetwork-name = ${opts.subnetwork}`,
    ...opts.nodeTags.map((tag) => `node-tags = ${tag}`),
    "multizone = true",
    `api-endpoint = ${env.gce.computeEndpoint}`,
    "",
  ].join("\n");
}

async function ensureClusterId(core: k8s.CoreV1Api, clusterId: string): Promise<void> {
  const existing = await core
    .readNamespacedConfigMap({ name: "ingress-uid", namespace: "kube-system" })
    .catch(() => undefined);
  if (existing !== undefined) {
    if (existing.data?.uid !== clusterId) {
      throw new Error(
        `ConfigMap kube-system/ingress-uid holds cluster ID ${String(existing.data?.uid)}, not ${clusterId}`,
      );
    }
    return;
  }
  await core.createNamespacedConfigMap({
    namespace: "kube-system",
    body: {
      metadata: { name: "ingress-uid", namespace: "kube-system" },
      data: { uid: clusterId, "provider-uid": clusterId },
    },
  });
}

/** Starts the stock CCM; resolves once the process runs (its controllers sync in the background). */
export async function startStockCcm(env: TestEnv, core: k8s.CoreV1Api, opts: StockCcmOptions): Promise<StockCcm> {
  const bin = requireTestenvBinary("gce-cloud-controller-manager");
  await ensureClusterId(core, opts.clusterId);
  const dir = fs.mkdtempSync(path.join(env.dir, "stock-ccm-"));
  const confPath = path.join(dir, "gce.conf");
  fs.writeFileSync(confPath, gceConf(env, opts));
  const logPath = path.join(dir, "ccm.log");
  const metadata = await startMetadataServer();
  const controllers = opts.nodeControllers === true ? "service,route,cloud-node,cloud-node-lifecycle" : "service,route";
  const args = [
    `--kubeconfig=${env.kube.kubeconfigPath}`,
    "--cloud-provider=gce",
    `--cloud-config=${confPath}`,
    `--controllers=${controllers}`,
    `--cluster-name=${opts.clusterName}`,
    `--cluster-cidr=${opts.clusterCidr ?? "10.64.0.0/14"}`,
    "--allocate-node-cidrs=true",
    "--configure-cloud-routes=true",
    "--route-reconciliation-period=2s",
    "--leader-elect=false",
    "--use-service-account-credentials=false",
    "--secure-port=0",
    "--authentication-skip-lookup=true",
    "--v=2",
  ];
  const log = fs.openSync(logPath, "a");
  let child: ChildProcess;
  try {
    child = spawn(bin, args, {
      env: { ...process.env, GCE_METADATA_HOST: metadata.host },
      stdio: ["ignore", log, log],
    });
  } finally {
    fs.closeSync(log);
  }
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const pid = child.pid;
  if (pid === undefined) {
    await metadata.close();
    throw new Error(`stock CCM did not start (${bin}); log ${logPath}`);
  }
  let stopping: Promise<void> | undefined;
  return {
    logPath,
    pid,
    stop: () => {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
          await exited;
          clearTimeout(timer);
        }
        await metadata.close();
      })();
      return stopping;
    },
  };
}
