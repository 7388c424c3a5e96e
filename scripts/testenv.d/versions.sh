# Versions of the offline test environment: the ONE place they are pinned.
# Sourced by scripts/testenv. After changing a value, run `bash scripts/testenv --regen` to rewrite
# the wrapper modules' go.mod/go.sum (scripts/testenv.d/{kube,pulumi,helm}) and commit them.

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

# Oldest Go that builds all of the above (helm.sh/helm/v3 v3.22.0 declares `go 1.26.0`; pulumi's
# pkg/v3 v3.248.0 `go 1.25.11`).
GO_MIN_VERSION=1.26.0
