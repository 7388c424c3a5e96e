{{/*
The chart renders what deploy/manifests.ts builds (`dccm manifests`); test/chart/chart.test.ts
compares the two object by object. Names are fixed: one dccm per cluster.
*/}}

{{/* Labels of every object: dccm's own, then Helm's (the test drops Helm's before comparing). */}}
{{- define "dccm.labels" -}}
app.kubernetes.io/name: dccm
app.kubernetes.io/component: cloud-controller-manager
{{ include "dccm.helmLabels" . }}
{{- end -}}

{{- define "dccm.helmLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The pods' labels: dccm's own only (the selector and the anti-affinity match app.kubernetes.io/name). */}}
{{- define "dccm.podLabels" -}}
app.kubernetes.io/name: dccm
app.kubernetes.io/component: cloud-controller-manager
{{- end -}}

{{- define "dccm.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Whether a { name, key } Secret reference is given (either field set). */}}
{{- define "dccm.refGiven" -}}
{{- if or .name .key }}true{{ end -}}
{{- end -}}

{{/* The config file the pods read: the values' config with the backend and the secrets provider. */}}
{{- define "dccm.configText" -}}
{{- $file := deepCopy .Values.config -}}
{{- if .Values.backend.volumeClaim -}}
{{- $_ := set $file "backendUrl" "file:///var/lib/dccm-backend" -}}
{{- else if .Values.backend.url -}}
{{- $_ := set $file "backendUrl" .Values.backend.url -}}
{{- end -}}
{{- if .Values.secrets.provider -}}
{{- $_ := set $file "secretsProvider" .Values.secrets.provider -}}
{{- end -}}
{{ toYaml $file }}
{{ end -}}

{{/* checkSecretRef of deploy/manifests.ts: appends to .problems. */}}
{{- define "dccm.checkSecretRef" -}}
{{- if include "dccm.refGiven" .ref -}}
{{- if not .ref.name }}{{ $_ := set .out "problems" (append .out.problems (printf "%s.name: the Secret's name is required" .field)) }}{{ end -}}
{{- if not .ref.key }}{{ $_ := set .out "problems" (append .out.problems (printf "%s.key: the key in Secret %s is required" .field .ref.name)) }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
deployArgsProblems of deploy/manifests.ts, in its order and with its words: what `dccm manifests`
refuses, the chart refuses (types are values.schema.json's). The config keys themselves are checked
by the daemon at start (and by `dccm manifests` before).
*/}}
{{- define "dccm.validate" -}}
{{- $v := .Values -}}
{{- $out := dict "problems" list -}}
{{- if not $v.image.repository -}}
{{- $_ := set $out "problems" (append $out.problems "image: required (the dccm image built from the Dockerfile, e.g. ghcr.io/acme/dccm:0.1.0)") -}}
{{- end -}}
{{- $b := $v.backend -}}
{{- if and $b.url $b.volumeClaim -}}
{{- $_ := set $out "problems" (append $out.problems "backend.url and backend.volumeClaim: give one backend") -}}
{{- else if $b.volumeClaim -}}
{{- if and (gt (int $v.replicas) 1) (not $b.readWriteMany) -}}
{{- $_ := set $out "problems" (append $out.problems "backend.volumeClaim: a ReadWriteOnce claim is mounted by one pod at a time: set replicas to 1, or readWriteMany: true for a ReadWriteMany claim") -}}
{{- end -}}
{{- else if $b.url -}}
{{- if hasPrefix "file://" $b.url -}}
{{- $_ := set $out "problems" (append $out.problems (printf "backend.url: %s is on the pod's own disk and every stack is lost when the pod restarts; use gs://BUCKET/PREFIX, https://api.pulumi.com, or backend.volumeClaim" $b.url)) -}}
{{- else if not (regexMatch "^[a-z][a-z0-9+.-]*://." $b.url) -}}
{{- $_ := set $out "problems" (append $out.problems (printf "backend.url: %s is not a URL (gs://BUCKET/PREFIX, https://api.pulumi.com, …)" $b.url)) -}}
{{- end -}}
{{- include "dccm.checkSecretRef" (dict "ref" $b.accessTokenSecret "field" "backend.accessTokenSecret" "out" $out) -}}
{{- if and (hasPrefix "https://" $b.url) (not (include "dccm.refGiven" $b.accessTokenSecret)) -}}
{{- $_ := set $out "problems" (append $out.problems (printf "backend.accessTokenSecret: %s needs a Pulumi access token (a Secret's key, given to the CLI as PULUMI_ACCESS_TOKEN)" $b.url)) -}}
{{- end -}}
{{- else -}}
{{- $_ := set $out "problems" (append $out.problems "backend: required: gs://BUCKET/PREFIX, https://api.pulumi.com (with accessTokenSecret), or volumeClaim (a PersistentVolumeClaim for a file:// backend)") -}}
{{- end -}}
{{- $s := $v.secrets -}}
{{- $passphrase := include "dccm.refGiven" $s.passphraseSecret -}}
{{- if and $s.provider $passphrase -}}
{{- $_ := set $out "problems" (append $out.problems "secrets.provider and secrets.passphraseSecret: give one way to encrypt the stacks") -}}
{{- else if $s.provider -}}
{{- if eq $s.provider "passphrase" -}}
{{- $_ := set $out "problems" (append $out.problems "secrets.provider: for a passphrase, give passphraseSecret (the passphrase never goes into the ConfigMap)") -}}
{{- end -}}
{{- else if $passphrase -}}
{{- include "dccm.checkSecretRef" (dict "ref" $s.passphraseSecret "field" "secrets.passphraseSecret" "out" $out) -}}
{{- else -}}
{{- $_ := set $out "problems" (append $out.problems "secrets: required: provider (e.g. gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K) or passphraseSecret") -}}
{{- end -}}
{{- include "dccm.checkSecretRef" (dict "ref" $v.gcpCredentialsSecret "field" "gcpCredentialsSecret" "out" $out) -}}
{{- $setByDeployment := list
  (list "stateDir" "the pod's state directory is the emptyDir /var/lib/dccm")
  (list "listen" "the probes and metrics are served on port 10258")
  (list "backendUrl" "set `backend` instead")
  (list "secretsProvider" "set `secrets` instead") -}}
{{- range $setByDeployment -}}
{{- if hasKey $v.config (index . 0) -}}
{{- $_ := set $out "problems" (append $out.problems (printf "config.%s: set by the deployment (%s)" (index . 0) (index . 1))) -}}
{{- end -}}
{{- end -}}
{{- $election := index $v.config "leaderElection" -}}
{{- if and (gt (int $v.replicas) 1) (hasKey $v.config "leaderElection") (or (and (kindIs "bool" $election) (not $election)) (eq (toString $election) "false")) -}}
{{- $_ := set $out "problems" (append $out.problems (printf "config.leaderElection: %d replicas need leader election (only the Lease holder acts)" (int $v.replicas))) -}}
{{- end -}}
{{- if $out.problems -}}
{{- fail (printf "invalid deploy arguments:\n  %s" (join "\n  " $out.problems)) -}}
{{- end -}}
{{- end -}}
