// The in-cluster install: the objects deploy/manifests.ts builds (tier 1), the DccmDeployment
// component that declares them under mocks (tier 2), and the RBAC docs/reference/rbac.md documents.
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import fc from "fast-check";
import * as YAML from "yaml";
import { childName, DCCM_DEPLOYMENT_TYPE, DccmDeployment } from "../../../deploy/dccmDeployment";
import {
  deployArgsProblems,
  deployObjects,
  manifestsYaml,
  NODE_CONTROLLER_RULES,
  SERVICE_CONTROLLER_RULES,
  SYSTEM_NAMESPACE_RULES,
  type DeployArgs,
  type KubeObject,
} from "../../../deploy/manifests";
import { deployProgram } from "../../../deploy/program";
import { deployArgsFromStackConfig, type StackConfigKey } from "../../../deploy/stackConfig";
import { capture } from "../../support/fakes/pulumiMocks";
import { repoRoot } from "../../support/tooling/testenv-paths";

const CONFIG = {
  project: "my-project",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "prod",
  clusterId: "c0ffee1234",
};
const ARGS: DeployArgs = {
  image: "ghcr.io/acme/dccm:0.1.0",
  config: CONFIG,
  backend: { url: "gs://acme-dccm/prod" },
  secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
  gcpCredentialsSecret: { name: "dccm-gcp", key: "key.json" },
};

function names(objects: KubeObject[]): string[] {
  return objects.map((object) => `${object.kind} ${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`);
}

function deploymentOf(objects: KubeObject[]): Extract<KubeObject, { kind: "Deployment" }> {
  const found = objects.find(
    (object): object is Extract<KubeObject, { kind: "Deployment" }> => object.kind === "Deployment",
  );
  assert.ok(found !== undefined);
  return found;
}

describe("deploy: deployObjects (every object of an install)", () => {
  it("builds the install's objects in apply order", () => {
    assert.deepEqual(names(deployObjects(ARGS)), [
      "ServiceAccount kube-system/dccm",
      "ClusterRole /dccm:service-controller",
      "ClusterRoleBinding /dccm:service-controller",
      "ClusterRole /dccm:node-controller",
      "ClusterRoleBinding /dccm:node-controller",
      "Role kube-system/dccm",
      "RoleBinding kube-system/dccm",
      "ConfigMap kube-system/dccm-config",
      "Deployment kube-system/dccm",
      "PodDisruptionBudget kube-system/dccm",
    ]);
  });

  it("the ConfigMap carries the installer's keys with the backend and no secret", () => {
    const configMap = deployObjects({
      ...ARGS,
      secrets: { provider: "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k" },
    }).find((object) => object.kind === "ConfigMap");
    assert.deepEqual(YAML.parse(String(configMap?.kind === "ConfigMap" ? configMap.data?.["config.yaml"] : "")), {
      ...CONFIG,
      backendUrl: "gs://acme-dccm/prod",
      secretsProvider: "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k",
    });
  });

  it("the pod: host network, the tolerations a new cluster needs, least privilege, probes, secrets as files", () => {
    const spec = deploymentOf(deployObjects(ARGS)).spec;
    const pod = spec?.template.spec;
    assert.equal(spec?.replicas, 2);
    assert.deepEqual(spec?.strategy, { type: "RollingUpdate", rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } });
    assert.equal(pod?.hostNetwork, true);
    assert.equal(pod?.dnsPolicy, "Default");
    assert.equal(pod?.priorityClassName, "system-cluster-critical");
    assert.equal(pod?.serviceAccountName, "dccm");
    assert.deepEqual(
      pod?.tolerations?.map((toleration) => `${toleration.key ?? ""}:${toleration.effect ?? ""}`),
      [
        "node.cloudprovider.kubernetes.io/uninitialized:NoSchedule",
        "node-role.kubernetes.io/control-plane:NoSchedule",
        "node.kubernetes.io/not-ready:NoSchedule",
      ],
    );
    assert.deepEqual(pod?.securityContext, {
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      fsGroup: 10001,
      seccompProfile: { type: "RuntimeDefault" },
    });
    const container = pod?.containers[0];
    assert.deepEqual(container?.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    // Each replica's Lease identity is its Pod name (downward API): a restarted container takes the Lease back at once.
    assert.deepEqual(container?.args, [
      "daemon",
      "--config",
      "/etc/dccm/config.yaml",
      "--state-dir",
      "/var/lib/dccm",
      "--listen",
      "0.0.0.0:10258",
      "--identity",
      "$(POD_NAME)",
    ]);
    assert.deepEqual(container?.ports, [{ name: "metrics", containerPort: 10258, protocol: "TCP" }]);
    assert.deepEqual(
      [container?.livenessProbe?.httpGet?.path, container?.readinessProbe?.httpGet?.path],
      ["/healthz", "/readyz"],
    );
    assert.deepEqual(container?.env, [
      { name: "POD_NAME", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
      { name: "PULUMI_HOME", value: "/var/lib/dccm/pulumi-home" },
      { name: "PULUMI_SKIP_UPDATE_CHECK", value: "true" },
      { name: "PULUMI_CONFIG_PASSPHRASE_FILE", value: "/var/run/secrets/dccm/passphrase/passphrase" },
      { name: "GOOGLE_APPLICATION_CREDENTIALS", value: "/var/run/secrets/dccm/gcp-credentials/key.json" },
    ]);
    assert.deepEqual(
      container?.volumeMounts?.map(
        (mount) => `${mount.name} ${mount.mountPath}${mount.readOnly === true ? " ro" : ""}`,
      ),
      [
        "config /etc/dccm ro",
        "state /var/lib/dccm",
        "tmp /tmp",
        "passphrase /var/run/secrets/dccm/passphrase ro",
        "gcp-credentials /var/run/secrets/dccm/gcp-credentials ro",
      ],
    );
    assert.deepEqual(
      pod?.volumes?.find((volume) => volume.name === "passphrase"),
      {
        name: "passphrase",
        secret: { secretName: "dccm-secrets", items: [{ key: "passphrase", path: "passphrase" }], defaultMode: 0o400 },
      },
    );
  });

  it("a change of the config file changes the pod template (the pods roll), the hash of exactly the ConfigMap's file", () => {
    const template = (args: DeployArgs): Record<string, string> | undefined =>
      deploymentOf(deployObjects(args)).spec?.template.metadata?.annotations;
    const objects = deployObjects(ARGS);
    const text = objects.find((object) => object.kind === "ConfigMap");
    const sha = crypto
      .createHash("sha256")
      .update(String(text?.kind === "ConfigMap" ? text.data?.["config.yaml"] : ""))
      .digest("hex");
    assert.deepEqual(template(ARGS), { "dccm.io/config-sha256": sha });
    assert.notDeepEqual(template({ ...ARGS, config: { ...CONFIG, clusterName: "prod2" } }), template(ARGS));
    assert.deepEqual(template({ ...ARGS, image: "ghcr.io/acme/dccm:0.2.0" }), template(ARGS));
  });

  it("a PersistentVolumeClaim backend: file:// on the claim, one replica", () => {
    const objects = deployObjects({ ...ARGS, replicas: 1, backend: { volumeClaim: "dccm-state" } });
    const pod = deploymentOf(objects).spec?.template.spec;
    assert.deepEqual(
      pod?.volumes?.find((volume) => volume.name === "backend"),
      { name: "backend", persistentVolumeClaim: { claimName: "dccm-state" } },
    );
    const configMap = objects.find((object) => object.kind === "ConfigMap");
    assert.equal(
      (
        YAML.parse(String(configMap?.kind === "ConfigMap" ? configMap.data?.["config.yaml"] : "")) as {
          backendUrl: string;
        }
      ).backendUrl,
      "file:///var/lib/dccm-backend",
    );
  });

  it("Pulumi Cloud: the token from a Secret into the environment the CLI reads", () => {
    const container = deploymentOf(
      deployObjects({
        ...ARGS,
        backend: { url: "https://api.pulumi.com", accessTokenSecret: { name: "pulumi", key: "token" } },
      }),
    ).spec?.template.spec?.containers[0];
    assert.deepEqual(
      container?.env?.find((variable) => variable.name === "PULUMI_ACCESS_TOKEN"),
      { name: "PULUMI_ACCESS_TOKEN", valueFrom: { secretKeyRef: { name: "pulumi", key: "token" } } },
    );
  });

  it("without the node controller: no node-controller ClusterRole and the daemon told so", () => {
    const objects = deployObjects({ ...ARGS, nodeController: false, logLevel: "debug" });
    assert.equal(
      names(objects).some((name) => name.includes("node-controller")),
      false,
    );
    assert.deepEqual(deploymentOf(objects).spec?.template.spec?.containers[0].args?.slice(9), [
      "--no-node-controller",
      "--log-level",
      "debug",
    ]);
  });

  it("extra tolerations come after the three every install has", () => {
    const pod = deploymentOf(
      deployObjects({
        ...ARGS,
        tolerations: [{ key: "dedicated", operator: "Equal", value: "infra", effect: "NoExecute" }],
      }),
    ).spec?.template.spec;
    assert.deepEqual(
      pod?.tolerations?.map(
        (toleration) => `${toleration.key ?? ""}=${toleration.value ?? ""}:${toleration.effect ?? ""}`,
      ),
      [
        "node.cloudprovider.kubernetes.io/uninitialized=:NoSchedule",
        "node-role.kubernetes.io/control-plane=:NoSchedule",
        "node.kubernetes.io/not-ready=:NoSchedule",
        "dedicated=infra:NoExecute",
      ],
    );
  });

  const invalid: [string, Partial<DeployArgs> & Record<string, unknown>, string[]][] = [
    [
      "a file:// backend on the pod's disk",
      { backend: { url: "file:///var/lib/dccm/backend" } },
      [
        "backend.url: file:///var/lib/dccm/backend is on the pod's own disk and every stack is lost when the pod restarts; use gs://BUCKET/PREFIX, https://api.pulumi.com, or backend.volumeClaim",
      ],
    ],
    [
      "no backend",
      { backend: undefined },
      [
        "backend: required: gs://BUCKET/PREFIX, https://api.pulumi.com (with accessTokenSecret), or volumeClaim (a PersistentVolumeClaim for a file:// backend)",
      ],
    ],
    [
      "Pulumi Cloud without a token",
      { backend: { url: "https://api.pulumi.com" } },
      [
        "backend.accessTokenSecret: https://api.pulumi.com needs a Pulumi access token (a Secret's key, given to the CLI as PULUMI_ACCESS_TOKEN)",
      ],
    ],
    [
      "a ReadWriteOnce claim for two replicas",
      { backend: { volumeClaim: "dccm-state" } },
      [
        "backend.volumeClaim: a ReadWriteOnce claim is mounted by one pod at a time: set replicas to 1, or readWriteMany: true for a ReadWriteMany claim",
      ],
    ],
    [
      "no image",
      { image: " " },
      ["image: required (the dccm image built from the Dockerfile, e.g. ghcr.io/acme/dccm:0.1.0)"],
    ],
    ["zero replicas", { replicas: 0 }, ["replicas: expected a whole number of at least 1, got 0"]],
    [
      "a passphrase as provider",
      { secrets: { provider: "passphrase" } },
      ["secrets.provider: for a passphrase, give passphraseSecret (the passphrase never goes into the ConfigMap)"],
    ],
    [
      "a Secret without its key",
      { gcpCredentialsSecret: { name: "dccm-gcp", key: "" } },
      ["gcpCredentialsSecret.key: the key in Secret dccm-gcp is required"],
    ],
    [
      "keys the deployment sets, and a bad GCP key",
      { config: { ...CONFIG, stateDir: "/x", listen: ":1", region: "europe" } },
      [
        "config.stateDir: set by the deployment (the pod's state directory is the emptyDir /var/lib/dccm)",
        "config.listen: set by the deployment (the probes and metrics are served on port 10258)",
        'config.region: "europe" is not a GCP region (like us-central1)',
      ],
    ],
    [
      "two replicas without leader election",
      { config: { ...CONFIG, leaderElection: false } },
      ["config.leaderElection: 2 replicas need leader election (only the Lease holder acts)"],
    ],
    [
      "a log level the daemon rejects",
      { logLevel: "loud" },
      ['logLevel: --log-level: "loud" is not one of fatal, error, warn, info, debug, trace, silent'],
    ],
    [
      "tolerations that are not a list",
      { tolerations: { key: "dedicated" } as unknown as DeployArgs["tolerations"] },
      ['tolerations: expected a list of tolerations, got {"key":"dedicated"}'],
    ],
  ];
  for (const [name, change, problems] of invalid) {
    it(`rejects ${name}, naming the field`, () => {
      const args = { ...ARGS, ...change };
      assert.deepEqual(deployArgsProblems(args), problems);
      assert.throws(() => deployObjects(args), {
        name: "DeployArgsError",
        message: `invalid deploy arguments:\n  ${problems.join("\n  ")}`,
      });
    });
  }

  it("property: any valid install grants no wildcard and names and labels every object", () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.integer({ min: 1, max: 5 }),
        fc.constantFrom("kube-system", "dccm-system"),
        (nodeController, replicas, namespace) => {
          const objects = deployObjects({ ...ARGS, nodeController, replicas, namespace });
          for (const object of objects) {
            assert.equal(object.metadata?.labels?.["app.kubernetes.io/name"], "dccm");
            if (object.kind === "ClusterRole" || object.kind === "Role") {
              for (const rule of object.rules ?? [])
                for (const value of [...(rule.verbs ?? []), ...(rule.resources ?? []), ...(rule.apiGroups ?? [])])
                  assert.notEqual(value, "*");
            }
            if (object.kind === "RoleBinding" || object.kind === "Role")
              assert.equal(object.metadata?.namespace, "kube-system");
          }
          assert.equal(deploymentOf(objects).metadata?.namespace, namespace);
        },
      ),
    );
  });
});

describe("deploy: the RBAC docs/reference/rbac.md documents is what the install grants", () => {
  const section = fs.readFileSync(path.join(repoRoot(), "docs", "reference", "rbac.md"), "utf8");
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const documented = YAML.parseAllDocuments(block).map(
    (doc) => doc.toJS() as { kind: string; metadata: { name: string; namespace?: string }; rules?: unknown },
  );
  const rulesOf = (kind: string, name: string): unknown =>
    documented.find((object) => object.kind === kind && object.metadata.name === name)?.rules;

  it("the service controller's ClusterRole, the node controller's, and the Role in kube-system", () => {
    assert.deepEqual(rulesOf("ClusterRole", "dccm:service-controller"), SERVICE_CONTROLLER_RULES);
    assert.deepEqual(rulesOf("ClusterRole", "dccm:node-controller"), NODE_CONTROLLER_RULES);
    assert.deepEqual(rulesOf("Role", "dccm"), SYSTEM_NAMESPACE_RULES);
  });
});

describe("deploy: DccmDeployment under mocks (tier 2)", () => {
  it("declares exactly the objects `dccm manifests` prints, each a child of the component; the pods wait for RBAC and config", async () => {
    const objects = deployObjects(ARGS);
    const captured = await capture(
      (type, inputs) => ({
        id: `${type}/${String((inputs.metadata as { name?: string } | undefined)?.name)}`,
        state: inputs,
      }),
      (opts) => new DccmDeployment("prod", ARGS, opts),
      "dccm-deploy",
    );
    // Registrations finish in any order; constructions are in declaration order.
    const registered = new Map(captured.registered.map((resource) => [resource.name, resource]));
    const children = captured.constructions
      .filter((construction) => construction.type !== DCCM_DEPLOYMENT_TYPE)
      .map((construction) => ({ ...construction, inputs: registered.get(construction.name)?.inputs }));
    assert.equal(captured.registered.length, 11);
    assert.deepEqual(
      children.map((resource) => `${resource.type} ${resource.name}`),
      [
        "kubernetes:core/v1:ServiceAccount prod-serviceaccount-dccm",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole prod-clusterrole-dccm-service-controller",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding prod-clusterrolebinding-dccm-service-controller",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole prod-clusterrole-dccm-node-controller",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding prod-clusterrolebinding-dccm-node-controller",
        "kubernetes:rbac.authorization.k8s.io/v1:Role prod-role-dccm",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding prod-rolebinding-dccm",
        "kubernetes:core/v1:ConfigMap prod-configmap-dccm-config",
        "kubernetes:apps/v1:Deployment prod-deployment-dccm",
        "kubernetes:policy/v1:PodDisruptionBudget prod-poddisruptionbudget-dccm",
      ],
    );
    assert.deepEqual(
      children.map((resource) => resource.name),
      objects.map((object) => childName("prod", object)),
    );
    // The YAML for kubectl and the component's inputs are the same objects.
    const printed = YAML.parseAllDocuments(manifestsYaml(objects)).map((doc) => doc.toJS() as Record<string, unknown>);
    assert.deepEqual(
      children.map((resource) => resource.inputs),
      printed,
    );
    // The caller's transformation saw every child: its options were merged, not dropped.
    for (const construction of captured.constructions) {
      if (construction.type === DCCM_DEPLOYMENT_TYPE) assert.equal(construction.parent, undefined);
      else assert.equal(construction.parent, captured.component, `${construction.name} is a child of the component`);
    }
    assert.deepEqual(
      captured.constructions.find((construction) => construction.type === "kubernetes:apps/v1:Deployment")?.dependsOn,
      children.slice(0, 8).map((resource) => resource.name),
    );
  });
});

describe("deploy: the deploy/ program's stack config (dccm-deploy:*)", () => {
  const file = { ...CONFIG, backendUrl: "gs://acme/from-file", secretsProvider: "gcpkms://k" };
  const build = (values: Partial<Record<StackConfigKey, unknown>>): DeployArgs =>
    deployArgsFromStackConfig(
      (key) => values[key],
      (name) => {
        assert.equal(name, "../examples/dccm-in-cluster.yaml");
        return file;
      },
    );

  it("configFile: the GCP keys as config, its backendUrl and secretsProvider as backend and secrets", () => {
    assert.deepEqual(build({ image: "dccm:1", configFile: "../examples/dccm-in-cluster.yaml", replicas: 3 }), {
      image: "dccm:1",
      config: CONFIG,
      backend: { url: "gs://acme/from-file" },
      secrets: { provider: "gcpkms://k" },
      replicas: 3,
    });
  });

  it("backend (a plain URL or an object) and secrets from the stack config win over the file", () => {
    assert.deepEqual(
      build({
        image: "dccm:1",
        configFile: "../examples/dccm-in-cluster.yaml",
        backend: "gs://acme/given",
        secrets: { passphraseSecret: { name: "s", key: "p" } },
      }),
      {
        image: "dccm:1",
        config: CONFIG,
        backend: { url: "gs://acme/given" },
        secrets: { passphraseSecret: { name: "s", key: "p" } },
      },
    );
    assert.deepEqual(
      build({ image: "dccm:1", config: CONFIG, backend: { volumeClaim: "c" }, secrets: { provider: "gcpkms://k" } })
        .backend,
      { volumeClaim: "c" },
    );
  });

  it("configFile and config together are refused", () => {
    assert.throws(() => build({ configFile: "x", config: CONFIG }), {
      message: "dccm-deploy:configFile and dccm-deploy:config: give one",
    });
  });

  it("a backend given as a bare string of the wrong kind is named by deployObjects", () => {
    assert.deepEqual(deployArgsProblems({ ...ARGS, backend: 5 as unknown as DeployArgs["backend"] }), [
      "backend: expected { url } or { volumeClaim }, got 5",
    ]);
  });
});

describe("deploy: the deploy/ program under mocks", () => {
  it("reads dccm-deploy:* and the config file it names, and declares the install", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dccm-deploy-")), "dccm.yaml");
    fs.writeFileSync(file, YAML.stringify({ ...CONFIG, backendUrl: "gs://acme/prod", secretsProvider: "gcpkms://k" }));
    const captured = await capture(
      (type, inputs) => ({ id: type, state: inputs }),
      () => {
        pulumi.runtime.setAllConfig({
          "dccm-deploy:image": "dccm:1",
          "dccm-deploy:configFile": file,
          "dccm-deploy:replicas": "3",
        });
        const { namespace } = deployProgram();
        assert.equal(namespace, "kube-system");
        return new pulumi.ComponentResource("test:index:Root", "root");
      },
      "dccm-deploy",
    );
    const deployment = captured.registered.find((resource) => resource.type === "kubernetes:apps/v1:Deployment");
    const expected = deploymentOf(
      deployObjects({
        image: "dccm:1",
        config: CONFIG,
        backend: { url: "gs://acme/prod" },
        secrets: { provider: "gcpkms://k" },
        replicas: 3,
      }),
    );
    assert.deepEqual(deployment?.inputs, JSON.parse(JSON.stringify(expected)));
    assert.equal(captured.registered.filter((resource) => resource.custom).length, 10);
  });
});
