{{/*
RBAC rules come from generated/role.yaml: controller-gen's output for the
+kubebuilder:rbac markers in controllers/ and internal/, copied into the chart by
`make manifests`. The chart never lists the operator's rules itself, so it stays right as
the markers change. An empty or missing file means no markers yet: no rules.

raygate.generatedRules returns YAML {cluster: [...], own: [...]}: the rules of the
generated ClusterRole, and those of generated Roles (markers with namespace=...), which
kubebuilder means for the operator's own namespace.
*/}}
{{- define "raygate.generatedRules" -}}
{{- $cluster := list }}
{{- $own := list }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" (.Files.Get "generated/role.yaml") -1 }}
{{- $obj := fromYaml $doc }}
{{- if and $obj (not (hasKey $obj "Error")) }}
{{- if eq (get $obj "kind") "ClusterRole" }}
{{- $cluster = concat $cluster (default list $obj.rules) }}
{{- else if eq (get $obj "kind") "Role" }}
{{- $own = concat $own (default list $obj.rules) }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml (dict "cluster" $cluster "own" $own) }}
{{- end }}

{{/*
Cluster-scoped resources the operator may be granted, each with the reason it must stay in
a ClusterRole in namespace-scoped mode (a Role cannot grant a cluster-scoped resource). Every
other resource is namespaced and goes into a Role in each watched namespace. The install
tests check this list against the API server's discovery for every generated rule.
*/}}
{{- define "raygate.clusterScopedResources" -}}
"/namespaces": "Namespaces are cluster-scoped: reading one (e.g. its labels) cannot be granted per namespace."
"/nodes": "Nodes are cluster-scoped: pod placement facts (zones, capacity) come from Node objects."
"/persistentvolumes": "PersistentVolumes are cluster-scoped."
"gateway.networking.k8s.io/gatewayclasses": "GatewayClasses are cluster-scoped: RayService checks that spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName exists before it creates a Gateway."
"apiextensions.k8s.io/customresourcedefinitions": "CRDs are cluster-scoped: read to learn whether optional APIs (Gateway API) are installed."
"authentication.k8s.io/tokenreviews": "TokenReviews are cluster-scoped: they authenticate scrapers of the HTTPS metrics endpoint."
"authorization.k8s.io/subjectaccessreviews": "SubjectAccessReviews are cluster-scoped: they authorize scrapers of the HTTPS metrics endpoint."
"scheduling.k8s.io/priorityclasses": "PriorityClasses are cluster-scoped."
"storage.k8s.io/storageclasses": "StorageClasses are cluster-scoped."
"node.k8s.io/runtimeclasses": "RuntimeClasses are cluster-scoped."
"networking.k8s.io/ingressclasses": "IngressClasses are cluster-scoped."
"rbac.authorization.k8s.io/clusterroles": "ClusterRoles are cluster-scoped."
"rbac.authorization.k8s.io/clusterrolebindings": "ClusterRoleBindings are cluster-scoped."
"admissionregistration.k8s.io/mutatingwebhookconfigurations": "Webhook configurations are cluster-scoped."
"admissionregistration.k8s.io/validatingwebhookconfigurations": "Webhook configurations are cluster-scoped."
"certificates.k8s.io/certificatesigningrequests": "CertificateSigningRequests are cluster-scoped."
"apiregistration.k8s.io/apiservices": "APIServices are cluster-scoped."
{{- end }}

{{/*
raygate.splitRules takes a list of rules (dict "rules" ...) and returns YAML
{namespaced: [...], clusterScoped: [{reason, rule}, ...]}: each rule split per API group
into the resources a Role can grant and the cluster-scoped ones. Subresources
("rayclusters/status") follow their resource; non-resource URLs are cluster-scoped.
*/}}
{{- define "raygate.splitRules" -}}
{{- $scoped := fromYaml (include "raygate.clusterScopedResources" .) }}
{{- $namespaced := list }}
{{- $clusterScoped := list }}
{{- range $rule := .rules }}
{{- if $rule.nonResourceURLs }}
{{- $clusterScoped = append $clusterScoped (dict "reason" "Non-resource URLs can only be granted cluster-wide." "rule" $rule) }}
{{- else }}
{{- range $group := $rule.apiGroups }}
{{- $local := list }}
{{- range $res := $rule.resources }}
{{- $key := printf "%s/%s" $group (first (splitList "/" $res)) }}
{{- if hasKey $scoped $key }}
{{- $r := omit $rule "apiGroups" "resources" }}
{{- $_ := set $r "apiGroups" (list $group) }}
{{- $_ := set $r "resources" (list $res) }}
{{- $clusterScoped = append $clusterScoped (dict "reason" (get $scoped $key) "rule" $r) }}
{{- else }}
{{- $local = append $local $res }}
{{- end }}
{{- end }}
{{- if $local }}
{{- $r := omit $rule "apiGroups" "resources" }}
{{- $_ := set $r "apiGroups" (list $group) }}
{{- $_ := set $r "resources" $local }}
{{- $namespaced = append $namespaced $r }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml (dict "namespaced" $namespaced "clusterScoped" $clusterScoped) }}
{{- end }}
