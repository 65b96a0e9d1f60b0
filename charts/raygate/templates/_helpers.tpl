{{/* Chart name, overridable. */}}
{{- define "raygate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Base name of namespaced objects. Kept to 40 characters so the longest suffix
("-webhook-service", "-leader-election") still fits a 63-character Service name.
*/}}
{{- define "raygate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else if contains (include "raygate.name" .) .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "raygate.name" .) | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Base name of cluster-scoped objects (ClusterRoles, bindings, webhook configurations). It
carries the release namespace so tenants can each install a release with the same name in
their own namespace (namespace-scoped mode) without colliding.
*/}}
{{- define "raygate.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "raygate.fullname" .) }}
{{- end }}

{{- define "raygate.serviceAccountName" -}}
{{- default (include "raygate.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* <release>-webhook-service, as the team contract names it. */}}
{{- define "raygate.webhookServiceName" -}}
{{- printf "%s-webhook-service" (.Release.Name | trunc 47 | trimSuffix "-") }}
{{- end }}

{{/*
Name of the leader election Lease: leaderElection.id, else <fullname>.ray.io, so each release
in a namespace elects its own leader and the default release keeps the Lease raygate.ray.io.
*/}}
{{- define "raygate.leaderElectionID" -}}
{{- default (printf "%s.ray.io" (include "raygate.fullname" .)) .Values.leaderElection.id }}
{{- end }}

{{- define "raygate.webhookCertName" -}}
{{- printf "%s-webhook-cert" (include "raygate.fullname" .) }}
{{- end }}

{{/* Secret holding the webhook serving certificate: cert-manager's, or the user's own. */}}
{{- define "raygate.webhookSecretName" -}}
{{- if .Values.webhook.certManager.enabled }}
{{- printf "%s-webhook-tls" (include "raygate.fullname" .) }}
{{- else }}
{{- required "webhook.certSecretName is required when webhook.certManager.enabled=false: name a kubernetes.io/tls Secret for the webhook Service's DNS names" .Values.webhook.certSecretName }}
{{- end }}
{{- end }}

{{/* Selector labels: stable across upgrades (a Deployment's selector is immutable). */}}
{{- define "raygate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "raygate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "raygate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "raygate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: raygate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* metadata.annotations (indented for metadata) when commonAnnotations is set; include it right after labels. */}}
{{- define "raygate.annotations" -}}
{{- with .Values.commonAnnotations }}
{{- printf "annotations:\n%s" (toYaml . | indent 2) | nindent 2 }}
{{- end }}
{{- end }}

{{- define "raygate.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
--feature-gates value: Name=bool pairs sorted by name, from raygate's map or from KubeRay's
list of {name, enabled}. KubeRay's gates raygate does not have are dropped when disabled (the
feature is off in raygate too) and refused when enabled.
*/}}
{{- define "raygate.featureGates" -}}
{{- $gates := dict }}
{{- if kindIs "slice" .Values.featureGates }}
{{- $kubeRayOnly := list "KubernetesWAS" }}
{{- range $g := .Values.featureGates }}
{{- if hasKey $gates $g.name }}
{{- fail (printf "featureGates lists %s twice" $g.name) }}
{{- end }}
{{- if has $g.name $kubeRayOnly }}
{{- if $g.enabled }}
{{- fail (printf "featureGates: %s is a KubeRay feature raygate does not have; remove it or set enabled: false" $g.name) }}
{{- end }}
{{- else }}
{{- $_ := set $gates $g.name $g.enabled }}
{{- end }}
{{- end }}
{{- else if .Values.featureGates }}
{{- $gates = .Values.featureGates }}
{{- end }}
{{- $pairs := list }}
{{- range $name := keys $gates | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%t" $name (get $gates $name)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* Namespaces the operator watches; empty means the whole cluster. */}}
{{- define "raygate.namespaced" -}}
{{- if .Values.watchNamespaces }}true{{ end }}
{{- end }}

{{/*
The operator's configuration file (KubeRay's Configuration, --config) with the fields of
.Values.configuration: empty unless configuration.enabled. Only the fields raygate has no
flag for: the flags the chart passes set everything else, and the operator refuses a setting
given both ways.
*/}}
{{- define "raygate.configuration" -}}
{{- $c := .Values.configuration }}
{{- $fields := list "headSidecarContainers" "workerSidecarContainers" "defaultContainerEnvs" "defaultPodLabels" "defaultPodAnnotations" }}
{{- if $c.enabled }}
{{- $doc := dict "apiVersion" "config.ray.io/v1alpha1" "kind" "Configuration" }}
{{- range $f := $fields }}
{{- with get $c $f }}
{{- $_ := set $doc $f . }}
{{- end }}
{{- end }}
{{- toYaml $doc }}
{{- else }}
{{- range $f := $fields }}
{{- if get $c $f }}
{{- fail (printf "configuration.%s is set but configuration.enabled is false (KubeRay's chart would not use it either): set configuration.enabled=true" $f) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The batch scheduler's name: raygate's batchScheduler string, or KubeRay's object form
{enabled, name}, where enabled (deprecated in KubeRay) means volcano and both together are
an error, as in KubeRay.
*/}}
{{- define "raygate.batchScheduler" -}}
{{- $b := .Values.batchScheduler }}
{{- if kindIs "map" $b }}
{{- if and $b.enabled $b.name }}
{{- fail "batchScheduler.enabled (deprecated) and batchScheduler.name are both set: set name only" }}
{{- else if $b.enabled }}volcano
{{- else }}{{ default "" $b.name }}
{{- end }}
{{- else }}{{ default "" $b }}
{{- end }}
{{- end }}

{{/*
"true" when the operator serves its metrics with the cert-manager certificate of its
webhook, which then also names the metrics Service, so a scraper verifies the endpoint with
the CA in the certificate's Secret (ca.crt).
*/}}
{{- define "raygate.metricsCertFromCertManager" -}}
{{- if and .Values.metrics.enabled .Values.metrics.secure .Values.metrics.service.enabled .Values.webhook.enabled .Values.webhook.certManager.enabled -}}
true
{{- end -}}
{{- end }}
