# Versions of the offline test environment: the ONE place they are pinned.
# Sourced by scripts/testenv. After changing a value, run `bash scripts/testenv --regen` to rewrite
# the wrapper modules' go.mod/go.sum (scripts/testenv.d/{kube,pulumi,helm,gce-ccm,fake-gcs-server}) and commit them.

# kube-apiserver: module k8s.io/kubernetes; its staging modules (k8s.io/api, ...) are v0.<minor>.<patch>.
KUBERNETES_VERSION=v1.34.4
KUBERNETES_STAGING_VERSION=v0.34.4

# etcd: built from go.etcd.io/etcd/server/v3 in the same wrapper module as kube-apiserver.
# Keep it at the version k8s.io/kubernetes's own go.mod requires (v1.34.4 → v3.6.4).
ETCD_VERSION=v3.6.4

# pulumi CLI (github.com/pulumi/pulumi/pkg/v3) and the Node.js language host; must match the npm
# pin of @pulumi/pulumi in package.json, because the Automation API checks the CLI version.
PULUMI_VERSION=v3.248.0

# helm CLI (helm.sh/helm/v3), for the chart in charts/dccm: its tests (helm template, helm lint
# --strict) and the install e2e.
HELM_VERSION=v3.22.0

# The stock GCE cloud-controller-manager (scripts/testenv.d/gce-ccm: our main on k8s.io/cloud-provider's
# controller manager with the GCE provider of k8s.io/cloud-provider-gcp/providers). v0.28.2 is the only
# providers version the module proxy serves (the root module k8s.io/cloud-provider-gcp is not served);
# k8s.io/cloud-provider is the version that providers module requires. The binary reports
# GCE_CCM_VERSION as its --version.
GCE_CCM_VERSION=v0.28.2
GCE_CCM_CLOUD_PROVIDER_VERSION=v0.28.2

# fake-gcs-server: a GCS JSON-API server (github.com/fsouza/fake-gcs-server), the bucket behind the
# e2e tests' gs:// Pulumi state (test/support/e2e/gcs.ts).
FAKE_GCS_SERVER_VERSION=v1.56.1

# Oldest Go that builds all of the above (helm.sh/helm/v3 v3.22.0 declares `go 1.26.0`, fake-gcs-server
# v1.56.1 `go 1.26`; pulumi's pkg/v3 v3.248.0 `go 1.25.11`). The pulumi wrapper module keeps the floor it was generated with.
GO_MIN_VERSION=1.26.0
