{{/*
raygate.admissionPolicy renders one ValidatingAdmissionPolicy and its binding over the pod
templates of RayClusters, RayServices and RayJobs (a RayJob's rayClusterSpec and its
submitterPodTemplate; the default submitter pod and the SidecarMode submitter take the head's
image and securityContext and have limits, so checking the head covers them). Arguments (a dict):
  ctx         the root context
  name        short name; the objects are named <namespace>-<fullname>-<name>
  description what the policy enforces (an annotation)
  constants   CEL variables that do not depend on the object (list of name/expression dicts)
  checks      the name of a template with the policy's own CEL variables, rendered once for
              the object and once for the old one. Written with these placeholders:
                $pods        the pod specs, head first, then each worker group, then a
                             RayJob's submitterPodTemplate
                $podPaths    their field paths (spec.workerGroupSpecs[0].template.spec, ...,
                             spec.submitterPodTemplate.spec)
                $containers  every container: each pod's init containers and containers, then
                             spec.autoscalerOptions (image, resources, securityContext as a
                             container has them) when set
                $paths       their field paths
                $violations  the variable the template must define: a list of strings, one
                             per violation, each starting with its field path
                $registries  free for the template's own use
  message     CEL string expression of the denial; variables.newViolations lists them

Only violations the old object did not have deny an UPDATE (ratcheting): an object stored
before a policy was enabled can still be scaled, suspended, relabelled and deleted. An object
being deleted is checked only when its spec changes, so its finalizers can always be removed.
*/}}
{{- define "raygate.admissionPolicy" -}}
{{- $ctx := .ctx }}
{{- $p := $ctx.Values.admissionPolicies }}
{{- $fullName := printf "%s-%s" (include "raygate.clusterName" $ctx) .name }}
{{- $names := dict "$pods" "podSpecs" "$podPaths" "podPaths" "$containers" "containers" "$paths" "containerPaths" "$violations" "violations" "$registries" "registries" }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "raygate.labels" $ctx | nindent 4 }}
  annotations:
    raygate.ray.io/policy: {{ .description | quote }}
    {{- with $ctx.Values.commonAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [ray.io]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [rayclusters, rayservices, rayjobs]
  matchConditions:
  # Finalizer removal must never be blocked: an object being deleted is checked only when
  # its spec changes, seen in metadata.generation (raygate's webhook vdeleting.ray.io refuses that too; this holds while
  # the operator is down). Only new violations deny, so an edit that breaks nothing passes.
  - name: not-being-deleted-or-spec-changed
    expression: "!has(object.metadata.deletionTimestamp) || oldObject == null || object.metadata.generation != oldObject.metadata.generation"
  variables:
  {{- range .constants }}
  - name: {{ .name }}
    expression: {{ .expression | toJson }}
  {{- end }}
  - name: prefix
    expression: "object.kind == 'RayService' ? 'spec.rayClusterConfig' : object.kind == 'RayJob' ? 'spec.rayClusterSpec' : 'spec'"
  {{- range $root := list "object" "oldObject" }}
  {{- $text := printf "%s\n%s" (include "raygate.admissionPolicy.podTemplates" $root) (include $.checks $ctx) }}
  {{- range $token, $name := $names }}
  {{- $text = $text | replace $token (ternary $name (printf "old%s" (title $name)) (eq $root "object")) }}
  {{- end }}
  {{- $text | nindent 2 }}
  {{- end }}
  - name: newViolations
    expression: "variables.violations.filter(v, !(v in variables.oldViolations))"
  validations:
  - expression: "size(variables.newViolations) == 0"
    messageExpression: {{ .message | toJson }}
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "raygate.labels" $ctx | nindent 4 }}
  {{- include "raygate.annotations" $ctx }}
spec:
  policyName: {{ $fullName }}
  validationActions:
    {{- toYaml $p.validationActions | nindent 4 }}
  matchResources:
    {{- if $p.namespaceSelector }}
    namespaceSelector:
      {{- toYaml $p.namespaceSelector | nindent 6 }}
    {{- else if $ctx.Values.watchNamespaces }}
    namespaceSelector:
      matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values:
          {{- toYaml $ctx.Values.watchNamespaces | nindent 10 }}
    {{- else }}
    namespaceSelector: {}
    {{- end }}
{{- end }}

{{/* The variables every policy shares, for the root object given ("object" or "oldObject",
which is null on CREATE). dyn: the three kinds put the cluster spec at different paths, and a
RayJob may have none (clusterSelector). */}}
{{- define "raygate.admissionPolicy.podTemplates" -}}
- name: {{ eq . "object" | ternary "cluster" "oldCluster" }}
  expression: |-
    {{ . }} == null ? {} :
    {{ . }}.kind == 'RayService'
      ? (has(dyn({{ . }}).spec.rayClusterConfig) ? dyn({{ . }}).spec.rayClusterConfig : {})
      : {{ . }}.kind == 'RayJob'
        ? (has(dyn({{ . }}).spec.rayClusterSpec) ? dyn({{ . }}).spec.rayClusterSpec : {})
        : dyn({{ . }}).spec
- name: {{ eq . "object" | ternary "submitter" "oldSubmitter" }}
  expression: |-
    {{ . }} != null && {{ . }}.kind == 'RayJob' && has(dyn({{ . }}).spec.submitterPodTemplate)
      ? [has(dyn({{ . }}).spec.submitterPodTemplate.spec) ? dyn({{ . }}).spec.submitterPodTemplate.spec : {}]
      : []
{{- $cluster := printf "variables.%s" (eq . "object" | ternary "cluster" "oldCluster") }}
{{- $submitter := printf "variables.%s" (eq . "object" | ternary "submitter" "oldSubmitter") }}
- name: $podPaths
  expression: |-
    (has({{ $cluster }}.headGroupSpec) ? [variables.prefix + '.headGroupSpec.template.spec'] : []) +
    (has({{ $cluster }}.workerGroupSpecs)
      ? {{ $cluster }}.workerGroupSpecs.transformList(i, g, variables.prefix + '.workerGroupSpecs[' + string(i) + '].template.spec')
      : []) +
    {{ $submitter }}.map(s, 'spec.submitterPodTemplate.spec')
- name: $pods
  expression: |-
    ((has({{ $cluster }}.headGroupSpec) ? [{{ $cluster }}.headGroupSpec] : []) +
     (has({{ $cluster }}.workerGroupSpecs) ? {{ $cluster }}.workerGroupSpecs : []))
    .map(g, has(g.template) && has(g.template.spec) ? g.template.spec : {}) +
    {{ $submitter }}
- name: $containers
  expression: |-
    variables.$pods.map(s,
      (has(s.initContainers) ? s.initContainers : []) + (has(s.containers) ? s.containers : [])).flatten() +
    (has({{ $cluster }}.autoscalerOptions) ? [{{ $cluster }}.autoscalerOptions] : [])
- name: $paths
  expression: |-
    variables.$pods.transformList(i, s,
      (has(s.initContainers)
        ? s.initContainers.transformList(j, c, variables.$podPaths[i] + '.initContainers[' + string(j) + ']')
        : []) +
      (has(s.containers)
        ? s.containers.transformList(j, c, variables.$podPaths[i] + '.containers[' + string(j) + ']')
        : [])).flatten() +
    (has({{ $cluster }}.autoscalerOptions) ? [variables.prefix + '.autoscalerOptions'] : [])
{{- end }}

{{/* Images from allowed registries. An image's registry is its first path element when that
looks like a host (has a dot or a port, or is localhost), else Docker Hub, as the container
runtime resolves it. */}}
{{- define "raygate.admissionPolicy.allowedRegistries" -}}
- name: $registries
  expression: |-
    variables.$containers.map(c, !has(c.image) ? '' :
      c.image.contains('/') &&
      (c.image.split('/')[0].contains('.') || c.image.split('/')[0].contains(':') || c.image.split('/')[0] == 'localhost')
        ? c.image.split('/')[0] : 'docker.io')
- name: $violations
  expression: |-
    variables.$containers.transformList(i, c,
      variables.$registries[i] != '' && !(variables.$registries[i] in variables.allowedRegistries)
        ? [variables.$paths[i] + '.image: "' + c.image + '" is from ' + variables.$registries[i]]
        : []).flatten()
{{- end }}

{{/* CPU and memory limits on every container. The autoscaler sidecar's defaults have limits, so
autoscalerOptions counts only when it sets resources. */}}
{{- define "raygate.admissionPolicy.requireResourceLimits" -}}
- name: $violations
  expression: |-
    variables.$containers.transformList(i, c,
      variables.$paths[i].endsWith('.autoscalerOptions') && !has(c.resources) ? [] :
      ['cpu', 'memory'].filter(r, !has(c.resources) || !has(c.resources.limits) || !(r in c.resources.limits))
        .map(missing, variables.$paths[i] + '.resources.limits.' + missing + ': required')).flatten()
{{- end }}

{{/* No host namespaces, hostPath volumes or privileged containers. */}}
{{- define "raygate.admissionPolicy.forbidHostAccess" -}}
- name: $violations
  expression: |-
    variables.$pods.transformList(i, s,
      ['hostNetwork', 'hostPID', 'hostIPC']
        .filter(f, f == 'hostNetwork' ? has(s.hostNetwork) && s.hostNetwork
                 : f == 'hostPID' ? has(s.hostPID) && s.hostPID
                 : has(s.hostIPC) && s.hostIPC)
        .map(f, variables.$podPaths[i] + '.' + f + ': must not be true') +
      (has(s.volumes)
        ? s.volumes.transformList(k, v, has(v.hostPath)
            ? [variables.$podPaths[i] + '.volumes[' + string(k) + '].hostPath: hostPath volumes are not allowed']
            : []).flatten()
        : [])).flatten() +
    variables.$containers.transformList(i, c,
      has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged
        ? [variables.$paths[i] + '.securityContext.privileged: must not be true']
        : []).flatten()
{{- end }}
