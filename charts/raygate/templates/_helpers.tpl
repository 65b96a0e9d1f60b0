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

{{/* --feature-gates value: the map rendered as Name=bool pairs, sorted by name. */}}
{{- define "raygate.featureGates" -}}
{{- $pairs := list }}
{{- range $name := keys .Values.featureGates | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%t" $name (get $.Values.featureGates $name)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* Namespaces the operator watches; empty means the whole cluster. */}}
{{- define "raygate.namespaced" -}}
{{- if .Values.watchNamespaces }}true{{ end }}
{{- end }}
