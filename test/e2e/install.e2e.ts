/**
 * The in-cluster install on a real kube-apiserver: every object of deploy/manifests.ts and of the
 * Helm chart (charts/dccm, the same objects: test/chart) passes a server-side dry run; `helm
 * install` creates the chart's; the ServiceAccount's token is granted exactly the documented rules
 * (what `kubectl auth can-i --list` shows, less what every authenticated identity has); `dccm
 * daemon` runs its main scenario with that token alone, with no `forbidden` in its log; and `helm
 * upgrade` with a changed config rolls the pod template (its config hash).
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import * as YAML from "yaml";

import {
  CONFIG_FILE,
  configFile,
  deployObjects,
  NODE_CONTROLLER_RULES,
  SERVICE_CONTROLLER_RULES,
  SYSTEM_NAMESPACE_RULES,
  type DeployArgs,
} from "../../deploy/manifests";
import { ledgerValue, LEDGER_CONFIGMAP } from "../../leaks/ledger";
import { loadBalancerName, LB_FINALIZER } from "../../model";
import { helm, valuesFile, CHART_DIR, parseObjects, helmTemplate } from "../support/chart";
import { createTaintedNode, E2E_CONFIG, eventReasons, initializedWithRoute, lbService } from "../support/e2e/cluster";
import { DaemonProcesses, type RunningDaemon } from "../support/e2e/daemon-process";
import { startTestEnv, type TestEnv } from "../support/e2e/env";
import { makeTokenKubeconfig } from "../support/e2e/kube";
import { eventually } from "../support/wait";

const SYSTEM = "kube-system";
const BASELINE_ACCOUNT = "dccm-install-baseline";
const IDENTITY = "dccm-install-e2e";

const ARGS: DeployArgs = {
  image: "dccm:e2e",
  config: { ...E2E_CONFIG },
  backend: { url: "gs://dccm-e2e/state" },
  secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
};
/** The chart's values for ARGS. */
const VALUES = {
  image: { repository: "dccm", tag: "e2e" },
  config: { ...E2E_CONFIG },
  backend: { url: "gs://dccm-e2e/state" },
  secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
};
const CONFIG_HASH_ANNOTATION = "dccm.io/config-sha256";

/** `Kind namespace/name`, or `Kind name` for a cluster-scoped object. */
function objectRef(object: k8s.KubernetesObject): string {
  const namespace = object.metadata?.namespace;
  return `${object.kind ?? "?"} ${namespace === undefined ? "" : `${namespace}/`}${object.metadata?.name ?? "?"}`;
}

/**
 * Rules as a set of single grants, `verb resource[.group][/name]`: the apiserver may split or merge
 * the rules of the roles it reports, the grants stay the same.
 */
function grants(
  rules: readonly { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; verbs: string[] }[],
): Set<string> {
  const found = new Set<string>();
  for (const rule of rules) {
    const names = rule.resourceNames === undefined || rule.resourceNames.length === 0 ? ["*"] : rule.resourceNames;
    for (const group of rule.apiGroups ?? [])
      for (const resource of rule.resources ?? [])
        for (const name of names)
          for (const verb of rule.verbs)
            found.add(`${verb} ${resource}${group === "" ? "" : `.${group}`}${name === "*" ? "" : `/${name}`}`);
  }
  return found;
}

function sorted(set: Iterable<string>): string[] {
  return [...set].sort();
}

function isNotFound(error: unknown): boolean {
  return error instanceof k8s.ApiException && error.code === 404;
}

describe("dccm installed in the cluster with its own RBAC", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let dccmKubeconfig = "";
  let dccmKube: k8s.KubeConfig;
  let baselineKube: k8s.KubeConfig;
  let daemons: DaemonProcesses | undefined;
  let running: RunningDaemon | undefined;
  let webLb = "";

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  });

  after(async () => {
    daemons?.killAll();
    await env?.stop();
  });

  it("every object, of `dccm manifests` and of the chart, passes a server-side dry run and persists nothing; helm install creates them", async () => {
    const client = k8s.KubernetesObjectApi.makeApiClient(env.kube.kubeConfig);
    const expected = [
      "ServiceAccount kube-system/dccm",
      "ClusterRole dccm:service-controller",
      "ClusterRoleBinding dccm:service-controller",
      "ClusterRole dccm:node-controller",
      "ClusterRoleBinding dccm:node-controller",
      "Role kube-system/dccm",
      "RoleBinding kube-system/dccm",
      "ConfigMap kube-system/dccm-config",
      "Deployment kube-system/dccm",
      "PodDisruptionBudget kube-system/dccm",
    ];
    const chartObjects = helmTemplate(VALUES);
    for (const objects of [deployObjects(ARGS), chartObjects] as k8s.KubernetesObject[][]) {
      const accepted: string[] = [];
      for (const object of objects) accepted.push(objectRef(await client.create(object, undefined, "All")));
      assert.deepEqual(sorted(accepted), sorted(expected));
    }
    const persisted: string[] = [];
    for (const object of chartObjects) {
      try {
        persisted.push(
          objectRef(
            await client.read({
              apiVersion: object.apiVersion,
              kind: object.kind,
              metadata: { name: object.metadata.name, namespace: object.metadata.namespace },
            }),
          ),
        );
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    assert.deepEqual(persisted, []);

    const install = helm(
      ["install", "dccm", CHART_DIR, "--namespace", SYSTEM, "--values", valuesFile(VALUES)],
      env.kube.kubeconfigPath,
    );
    assert.equal(install.status, 0, install.stderr);
    const created: string[] = [];
    for (const object of chartObjects) {
      const read = await client.read({
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: { name: object.metadata.name, namespace: object.metadata.namespace },
      });
      assert.equal(read.metadata?.labels?.["app.kubernetes.io/managed-by"], "Helm", objectRef(read));
      created.push(objectRef(read));
    }
    assert.deepEqual(sorted(created), sorted(expected));
  });

  it("the ServiceAccount's token is granted exactly the documented rules, and nothing beside them", async () => {
    await core.createNamespacedServiceAccount({ namespace: SYSTEM, body: { metadata: { name: BASELINE_ACCOUNT } } });
    const token = async (account: string): Promise<string> => {
      const request = await core.createNamespacedServiceAccountToken({
        name: account,
        namespace: SYSTEM,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const value = request.status?.token;
      assert.ok(value !== undefined && value !== "", `a token for ${account}`);
      return value;
    };
    const dccm = await makeTokenKubeconfig(env.kube, "dccm", await token("dccm"));
    dccmKubeconfig = dccm.kubeconfigPath;
    dccmKube = dccm.kubeConfig;
    baselineKube = (await makeTokenKubeconfig(env.kube, BASELINE_ACCOUNT, await token(BASELINE_ACCOUNT))).kubeConfig;

    const review = async (
      kube: k8s.KubeConfig,
      namespace: string,
    ): Promise<{ resources: Set<string>; nonResources: Set<string> }> => {
      const status = (
        await kube.makeApiClient(k8s.AuthorizationV1Api).createSelfSubjectRulesReview({ body: { spec: { namespace } } })
      ).status;
      assert.equal(status?.incomplete, false, `rules review in ${namespace}: ${status?.evaluationError ?? ""}`);
      const nonResources = new Set<string>();
      for (const rule of status?.nonResourceRules ?? [])
        for (const url of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) nonResources.add(`${verb} ${url}`);
      return { resources: grants(status?.resourceRules ?? []), nonResources };
    };
    const beyondBaseline = async (namespace: string): Promise<{ resources: string[]; nonResources: string[] }> => {
      const [mine, everyone] = await Promise.all([review(dccmKube, namespace), review(baselineKube, namespace)]);
      return {
        resources: sorted([...mine.resources].filter((grant) => !everyone.resources.has(grant))),
        nonResources: sorted([...mine.nonResources].filter((grant) => !everyone.nonResources.has(grant))),
      };
    };
    const clusterRules = [...SERVICE_CONTROLLER_RULES, ...NODE_CONTROLLER_RULES];
    assert.deepEqual(await beyondBaseline(SYSTEM), {
      resources: sorted(grants([...clusterRules, ...SYSTEM_NAMESPACE_RULES])),
      nonResources: [],
    });
    assert.deepEqual(await beyondBaseline("default"), { resources: sorted(grants(clusterRules)), nonResources: [] });

    const authorization = dccmKube.makeApiClient(k8s.AuthorizationV1Api);
    const can = async (attributes: k8s.V1ResourceAttributes): Promise<string> => {
      const status = (
        await authorization.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: attributes } } })
      ).status;
      const what = `${attributes.verb ?? ""} ${attributes.resource ?? ""}${attributes.group === undefined || attributes.group === "" ? "" : `.${attributes.group}`}${attributes.name === undefined ? "" : `/${attributes.name}`} in ${attributes.namespace ?? "(cluster)"}`;
      return `${what}: ${status?.allowed === true ? "yes" : "no"}`;
    };
    const answers: string[] = [];
    for (const attributes of [
      { namespace: SYSTEM, verb: "get", resource: "secrets" },
      { namespace: SYSTEM, verb: "get", resource: "secrets", name: "dccm-secrets" },
      { namespace: SYSTEM, verb: "patch", resource: "configmaps", name: "dccm-load-balancers" },
      { namespace: SYSTEM, verb: "update", resource: "configmaps", name: "dccm-load-balancers" },
      { namespace: SYSTEM, verb: "patch", resource: "configmaps", name: "dccm-config" },
      { namespace: SYSTEM, verb: "update", resource: "leases", group: "coordination.k8s.io", name: "dccm" },
      { namespace: SYSTEM, verb: "get", resource: "leases", group: "coordination.k8s.io", name: "kube-scheduler" },
      { namespace: "default", verb: "list", resource: "pods" },
      { namespace: "default", verb: "delete", resource: "services", name: "web" },
      { verb: "get", resource: "namespaces", name: "default" },
    ] satisfies k8s.V1ResourceAttributes[]) {
      answers.push(await can(attributes));
    }
    assert.deepEqual(answers, [
      "get secrets in kube-system: no",
      "get secrets/dccm-secrets in kube-system: no",
      "patch configmaps/dccm-load-balancers in kube-system: yes",
      "update configmaps/dccm-load-balancers in kube-system: no",
      "patch configmaps/dccm-config in kube-system: no",
      "update leases.coordination.k8s.io/dccm in kube-system: yes",
      "get leases.coordination.k8s.io/kube-scheduler in kube-system: no",
      "list pods in default: no",
      "delete services/web in default: no",
      "get namespaces/default in (cluster): no",
    ]);
  });

  it("the daemon, with that token and the ConfigMap's config file, holds the Lease and initializes a tainted Node", async () => {
    const configMap = await core.readNamespacedConfigMap({ name: "dccm-config", namespace: SYSTEM });
    const text = configMap.data?.[CONFIG_FILE];
    assert.ok(text !== undefined, `ConfigMap kube-system/dccm-config has ${CONFIG_FILE}`);
    assert.deepEqual(YAML.parse(text), configFile(ARGS));
    const configPath = path.join(env.dir, CONFIG_FILE);
    fs.writeFileSync(configPath, text);
    // The pod's backend is a bucket: the environment's fake-gcs-server bucket, reached through STORAGE_EMULATOR_HOST
    // (the flag wins over the file's gs://dccm-e2e/state, a bucket of no server here).
    daemons = new DaemonProcesses(env, configPath, ["--backend-url", env.backendUrl]);
    running = daemons.start({ identity: IDENTITY, kubeconfig: dccmKubeconfig });
    await daemons.waitReady(running);
    // A standby is ready too (daemon/daemon.ts): the Lease is taken when it is, not necessarily by readiness.
    const coordination = env.kube.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
    const holder = await eventually("a holder of the Lease kube-system/dccm", async () => {
      const identity = (await coordination.readNamespacedLease({ name: "dccm", namespace: SYSTEM })).spec
        ?.holderIdentity;
      return identity === undefined || identity === "" ? undefined : identity;
    });
    assert.equal(holder, IDENTITY);

    env.gce.putInstance("node-a1", { zone: "us-central1-a", machineType: "e2-standard-4" });
    await createTaintedNode(core, "node-a1", "10.64.1.0/24");
    const node = await initializedWithRoute(core, "node-a1");
    assert.equal(node.spec?.providerID, "gce://dccm-test/us-central1-a/node-a1");
    // The apiserver's TaintNodesByCondition admission adds not-ready; ours is gone.
    assert.deepEqual(
      (node.spec?.taints ?? []).map((taint) => taint.key),
      ["node.kubernetes.io/not-ready"],
    );
    const labels = node.metadata?.labels ?? {};
    assert.deepEqual(
      ["topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type"].map(
        (key) => `${key}=${labels[key] ?? ""}`,
      ),
      [
        "topology.kubernetes.io/zone=us-central1-a",
        "topology.kubernetes.io/region=us-central1",
        "node.kubernetes.io/instance-type=e2-standard-4",
      ],
    );
    assert.equal(node.status?.conditions?.find((entry) => entry.type === "NetworkUnavailable")?.status, "False");
  });

  it("a LoadBalancer Service gets the finalizer, the forwarding rule's address as ingress, and Ensuring/Ensured events", async () => {
    assert.ok(daemons !== undefined && running !== undefined, "the daemon started");
    await daemons.waitClusterApplied(running);
    const service = await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    webLb = loadBalancerName(service.metadata?.uid ?? "");
    const ingress = await eventually(
      "web's status.loadBalancer.ingress",
      async () =>
        (await core.readNamespacedService({ name: "web", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
    const ours = env.gce.listResources().filter((resource) => resource.name.includes(webLb));
    assert.deepEqual(
      ours.map((resource) => `${resource.kind} ${resource.name}`),
      [`backendServices ${webLb}`, `firewalls k8s-fw-${webLb}`, `forwardingRules ${webLb}`],
    );
    assert.equal(ours.find((resource) => resource.kind === "forwardingRules")?.properties.ipAddress, ingress);
    const read = await core.readNamespacedService({ name: "web", namespace: "default" });
    assert.deepEqual(read.metadata?.finalizers, [LB_FINALIZER]);
    assert.deepEqual(
      (await eventReasons(core, "web")).map((event) => event.reason),
      ["EnsuringLoadBalancer", "EnsuredLoadBalancer"],
    );
    // The ledger ConfigMap, created then patched by dccm (the Role's create and patch).
    assert.deepEqual((await core.readNamespacedConfigMap(LEDGER_CONFIGMAP)).data, {
      [webLb]: ledgerValue({
        clusterId: String(E2E_CONFIG.clusterId),
        service: "default/web",
        uid: service.metadata?.uid ?? "",
      }),
    });
  });

  it("the Service deleted loses every resource and the finalizer, and is gone", async () => {
    await core.deleteNamespacedService({ name: "web", namespace: "default" });
    await eventually("web gone from the API", async () => {
      try {
        await core.readNamespacedService({ name: "web", namespace: "default" });
        return undefined;
      } catch (error) {
        return isNotFound(error) ? true : undefined;
      }
    });
    assert.deepEqual(
      env.gce.listResources().filter((resource) => resource.name.includes(webLb)),
      [],
    );
    assert.deepEqual((await eventReasons(core, "web")).map((event) => event.reason).slice(-2), [
      "DeletingLoadBalancer",
      "DeletedLoadBalancer",
    ]);
    assert.deepEqual((await core.readNamespacedConfigMap(LEDGER_CONFIGMAP)).data ?? {}, {});
  });

  it("the daemon logged no forbidden call, still holds the Lease, and exits 0 on SIGTERM", async () => {
    assert.ok(daemons !== undefined && running !== undefined, "the daemon started");
    const lease = await env.kube.kubeConfig
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: "dccm", namespace: SYSTEM });
    assert.equal(lease.spec?.holderIdentity, IDENTITY);
    assert.equal(await daemons.stop(running), 0);
    const forbidden = fs
      .readFileSync(running.logPath, "utf8")
      .split("\n")
      .filter((line) => /forbidden/i.test(line));
    assert.deepEqual(forbidden, []);
  });

  it("helm upgrade with a changed config rolls the pod template (its config hash), one without a change does not", async () => {
    const apps = env.kube.kubeConfig.makeApiClient(k8s.AppsV1Api);
    const template = async (): Promise<{
      hash: string | undefined;
      generation: number | undefined;
      config: unknown;
    }> => {
      const deployment = await apps.readNamespacedDeployment({ name: "dccm", namespace: SYSTEM });
      const configMap = await core.readNamespacedConfigMap({ name: "dccm-config", namespace: SYSTEM });
      return {
        hash: deployment.spec?.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION],
        generation: deployment.metadata?.generation,
        config: YAML.parse(configMap.data?.[CONFIG_FILE] ?? ""),
      };
    };
    const upgrade = (values: unknown): void => {
      const run = helm(
        ["upgrade", "dccm", CHART_DIR, "--namespace", SYSTEM, "--values", valuesFile(values)],
        env.kube.kubeconfigPath,
      );
      assert.equal(run.status, 0, run.stderr);
    };
    const before = await template();
    upgrade(VALUES);
    assert.deepEqual(await template(), before);

    const changed = { ...VALUES, config: { ...VALUES.config, driftInterval: "5m" } };
    upgrade(changed);
    const after = await template();
    const rendered = parseObjects(
      helm(["template", "dccm", CHART_DIR, "--namespace", SYSTEM, "--values", valuesFile(changed)]).stdout,
    );
    const renderedHash = (
      rendered.find((object) => object.kind === "Deployment") as
        { spec: { template: { metadata: { annotations: Record<string, string> } } } } | undefined
    )?.spec.template.metadata.annotations[CONFIG_HASH_ANNOTATION];
    assert.deepEqual(after, {
      hash: renderedHash,
      generation: (before.generation ?? 0) + 1,
      config: configFile({ ...ARGS, config: changed.config }),
    });
    assert.notEqual(after.hash, before.hash);
  });
});
