// End-to-end check of the Kubernetes harness (test/support/e2e/kube.ts) against a real etcd and
// kube-apiserver: a LoadBalancer Service round-trip through an informer and the status
// subresource, and proof that RBAC is enforced for a non-admin identity.

import * as assert from "node:assert/strict";

import {
  ApiException,
  CoreV1Api,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Service,
} from "@kubernetes/client-node";

import { type KubeEnv, makeUserKubeconfig, startKube } from "../support/e2e/kube";

const NAMESPACE = "default";
const SERVICE_NAME = "e2e-lb";
const INGRESS_IP = "203.0.113.10";
const EVENT_TIMEOUT_MS = 30_000;

/** Rejects with a message naming `what` when `promise` does not settle within `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe("kube harness (etcd + kube-apiserver)", function () {
  let env: KubeEnv | undefined;

  before(async function () {
    this.timeout(180_000);
    env = await startKube();
  });

  after(async function () {
    this.timeout(60_000);
    await env?.stop();
  });

  function kube(): KubeEnv {
    if (env === undefined) {
      throw new Error("startKube() did not complete in before()");
    }
    return env;
  }

  it("sees a LoadBalancer Service through an informer and round-trips its status", async function () {
    const core = kube().kubeConfig.makeApiClient(CoreV1Api);
    const informer = makeInformer<V1Service>(kube().kubeConfig, `/api/v1/namespaces/${NAMESPACE}/services`, () =>
      core.listNamespacedService({ namespace: NAMESPACE }),
    );
    const added = new Promise<V1Service>((resolve, reject) => {
      informer.on("add", (svc) => {
        if (svc.metadata?.name === SERVICE_NAME) {
          resolve(svc);
        }
      });
      informer.on("error", (err) => reject(new Error("informer failed", { cause: err })));
    });
    await informer.start();
    try {
      const created = await core.createNamespacedService({
        namespace: NAMESPACE,
        body: {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: SERVICE_NAME },
          spec: {
            type: "LoadBalancer",
            selector: { app: "e2e" },
            ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }],
          },
        },
      });
      assert.equal(created.spec?.type, "LoadBalancer");

      const seen = await within(added, EVENT_TIMEOUT_MS, `informer 'add' for ${NAMESPACE}/${SERVICE_NAME}`);
      assert.equal(seen.metadata?.uid, created.metadata?.uid);
      assert.equal(seen.spec?.type, "LoadBalancer");
      assert.deepEqual(seen.status?.loadBalancer?.ingress, undefined);

      await core.patchNamespacedServiceStatus(
        {
          name: SERVICE_NAME,
          namespace: NAMESPACE,
          body: { status: { loadBalancer: { ingress: [{ ip: INGRESS_IP }] } } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );

      const read = await core.readNamespacedServiceStatus({ name: SERVICE_NAME, namespace: NAMESPACE });
      // The apiserver defaults ipMode to "VIP" for an ingress with an ip (LoadBalancerIPMode, GA in 1.32).
      const ingress = (read.status?.loadBalancer?.ingress ?? []).map((i) => ({
        ip: i.ip,
        hostname: i.hostname,
        ipMode: i.ipMode,
        ports: i.ports,
      }));
      assert.deepEqual(ingress, [{ ip: INGRESS_IP, hostname: undefined, ipMode: "VIP", ports: undefined }]);
    } finally {
      await informer.stop();
    }
  });

  it("forbids a non-admin identity from listing Services (RBAC is on)", async function () {
    const user = await makeUserKubeconfig(kube(), "e2e-viewer", ["e2e-group"]);
    const core = user.kubeConfig.makeApiClient(CoreV1Api);
    await assert.rejects(core.listNamespacedService({ namespace: NAMESPACE }), (err: unknown) => {
      assert.ok(err instanceof ApiException, `expected ApiException, got ${String(err)}`);
      assert.equal(err.code, 403);
      return true;
    });
  });
});
