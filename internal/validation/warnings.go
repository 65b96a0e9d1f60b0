package validation

// Warnings for specs that are legal but risky. The webhooks return them as admission
// warnings, so kubectl prints each one as "Warning: <text>". Each is a format string whose
// first argument is the field path it is about.
const (
	// WarnDeprecatedIgnored: a deprecated field that raygate ignores.
	WarnDeprecatedIgnored = "%s is deprecated and ignored; remove it"

	// WarnReplicasClamped: replicas outside [minReplicas, maxReplicas]; the controller uses
	// the nearest bound. (0 is the stored default and means minReplicas, so it never warns.)
	WarnReplicasClamped = "%s: %d is outside [minReplicas %d, maxReplicas %d] and will be clamped to %d"

	// WarnFullSurge: maxSurgePercent 100 lets the new cluster reach full size while the old
	// one still serves.
	WarnFullSurge = "%s is 100: the new cluster may scale to 100%% while the old one still runs, so an upgrade can need 200%% of the cluster's capacity; lower it to upgrade in smaller steps"

	// WarnShortInterval: traffic steps closer together than the autoscaler can add pods.
	WarnShortInterval = "%s is %d: with less than 10 seconds between traffic steps the Ray autoscaler may lag behind, so traffic can reach the new cluster before its pods are ready"

	// WarnIgnoredUpgradeOptions: clusterUpgradeOptions set for a strategy that does not use them.
	WarnIgnoredUpgradeOptions = "%s is ignored with upgradeStrategy.type %s; it is used only with NewClusterWithIncrementalUpgrade"

	// WarnGatewayClassNotFound: the GatewayClass named for incremental upgrades does not exist.
	WarnGatewayClassNotFound = "%s: GatewayClass %q does not exist yet; an incremental upgrade cannot route traffic until it is created"

	// WarnRestartPolicyImplicitV2: a Ray pod's restartPolicy other than Never while autoscaler
	// v2 runs because of Ray's default or RAY_enable_autoscaler_v2 (autoscalerOptions.version
	// v2 makes it an error instead, as in KubeRay). The last argument says what chose v2.
	WarnRestartPolicyImplicitV2 = "%s is %s while autoscaler v2 runs because of %s, not autoscalerOptions.version, so raygate leaves the policy as it is: " +
		"autoscaler v2 replaces a Ray pod whose node died, and a container the kubelet restarts in place can leave it tracking a node that no longer exists; " +
		"use Never, or choose the autoscaler with autoscalerOptions.version"

	// WarnRouteAnnotationsIgnored: raygate.ray.io/gateway, hostnames or path-prefix on a
	// RayService whose strategy writes no route.
	WarnRouteAnnotationsIgnored = "%s: raygate.ray.io/gateway, raygate.ray.io/hostnames and raygate.ray.io/path-prefix are used only with upgradeStrategy.type %s; they are ignored"

	// WarnNoServingWorker: with the head out of the serve Service and no worker group
	// starting with a pod, a cluster made for an incremental upgrade (it starts at
	// minReplicas) has nothing to serve from, and the first traffic step waits for the
	// autoscaler to add a worker.
	WarnNoServingWorker = "%s is true and every worker group has minReplicas 0: a cluster created for an incremental upgrade starts at minReplicas, so it has no pod to serve from until the Ray autoscaler adds a worker, and the first traffic step waits until then; set minReplicas to 1 or more on a worker group that serves"

	// WarnGatewayAPINotInstalled: the Gateway API CRDs are missing from the cluster.
	WarnGatewayAPINotInstalled = "%s: the Gateway API CRDs (gateway.networking.k8s.io) are not installed in this cluster; incremental upgrades need them and a Gateway controller"
)

// Warnings about the pod bounds (Limits).
const (
	// WarnMaxReplicasOverLimit: maxReplicas × numOfHosts is over --max-pods-per-group, so the
	// autoscaler's patches past the bound will be refused.
	WarnMaxReplicasOverLimit = "%s: %d replicas would be %d pods, over the limit of %d pods per worker group (the manager's --max-pods-per-group): the autoscaler cannot scale this group past %d replicas"

	// WarnUpgradeSurgeOverLimit: an upgrade runs two clusters at once, together over
	// --max-pods-per-cluster.
	WarnUpgradeSurgeOverLimit = "%s: %s runs the old and the new cluster side by side during an upgrade, up to %d pods, more than the %d pods allowed per cluster (the manager's --max-pods-per-cluster); make sure the namespace's quota and the nodes can hold both"
)

// Warnings about the namespace the pods will run in: its Pod Security levels and quotas
// (Validator.AdmitRayCluster, AdmitRayService).
const (
	// WarnPodSecurity: a pod raygate would create violates the namespace's warn level, as
	// the API server warns when it creates the pod.
	WarnPodSecurity = "%s: would violate PodSecurity %q: %s"

	// WarnPodSecurityAudit: the namespace's audit level; the API server records the
	// violation in its audit log when raygate creates the pod.
	WarnPodSecurityAudit = "%s: would violate PodSecurity %q, the namespace's audit level (recorded in the API server's audit log): %s"

	// WarnPodSecurityEnforce: with --pod-security-check=warn, a violation of the enforce level.
	WarnPodSecurityEnforce = "%s: violates PodSecurity %q: %s; the API server will refuse these pods when raygate creates them"

	// WarnQuotaExceeded: the pods do not fit in what a ResourceQuota has left.
	WarnQuotaExceeded = "%s: %s do not fit in ResourceQuota %q: %s; the API server will refuse the pods that do not fit when raygate creates them"

	// WarnQuotaUpgrade: the change starts an upgrade whose new cluster does not fit next to
	// the current one.
	WarnQuotaUpgrade = "%s: this change starts a %s upgrade, which needs %s next to the current cluster; they do not fit in ResourceQuota %q: %s; the upgrade cannot finish until the quota has room"

	// WarnQuotaNotChecked: too many kinds of pod to count against the quotas.
	WarnQuotaNotChecked = "%s: the worker groups ask for more than %d kinds of pod (by resources); their fit in the namespace's ResourceQuotas was not checked"

	// WarnQuotaMissingRequests: a quota on cpu or memory makes the API server refuse pods
	// with a container that does not set them.
	WarnQuotaMissingRequests = "%s: ResourceQuota %q limits %s, so the API server refuses pods with a container that does not set it: %s"

	// WarnTLSEnvReplaced: a Ray container sets a TLS variable raygate sets for spec.tlsOptions.
	WarnTLSEnvReplaced = "%s: %s is set by raygate for spec.tlsOptions; this value is replaced"
	// WarnTLSDisabled: tlsOptions with enabled false, which leaves TLS off.
	WarnTLSDisabled = "%s: enabled is false, so mutual TLS stays off; remove tlsOptions or set enabled to true"
)
