package app

import (
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	rayjobplan "github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/raypod"
)

// The environment variables the operator honours, with the names KubeRay's operator reads,
// so a deployment written for KubeRay keeps its meaning; the Helm chart and the kustomize
// manifests set them. ReadEnvironment reads them once at start: nothing else in raygate
// reads the environment, and the packages that use them take the values as arguments.
const (
	// EnvPodNamespace is raygate's own namespace (the downward API's metadata.namespace):
	// the default of --operator-namespace.
	EnvPodNamespace = "POD_NAMESPACE"
	// EnvClusterDomain is the cluster's DNS domain (Helm value clusterDomain), in the head
	// Service address workers use to find the GCS. Not a DNS name: cluster.local.
	EnvClusterDomain = "CLUSTER_DOMAIN"
	// EnvEnableZeroDowntime, "false" (any case), makes a RayService whose spec sets no upgrade
	// strategy type keep its cluster when rayClusterConfig changes (the None strategy).
	EnvEnableZeroDowntime = "ENABLE_ZERO_DOWNTIME"
	// EnvEnableRandomPodDelete, "true" (any case), lets scale-down remove any workers even
	// with the Ray autoscaler on (by default the autoscaler picks them).
	EnvEnableRandomPodDelete = "ENABLE_RANDOM_POD_DELETE"
	// EnvEnableGCSFTRedisCleanup, "false" (any case), turns off the Redis cleanup of deleted
	// fault-tolerant clusters.
	EnvEnableGCSFTRedisCleanup = "ENABLE_GCS_FT_REDIS_CLEANUP"
)

// serviceAccountNamespaceFile is where the kubelet writes the pod's namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Environment is what the operator takes from its environment rather than from flags, as
// KubeRay's operator does. The zero value, but for ClusterDomain, is an empty environment.
type Environment struct {
	// ClusterDomain is $CLUSTER_DOMAIN when it is a DNS name (a trailing dot dropped), else
	// cluster.local. Workers find the GCS at the head Service's name in it, so a wrong
	// domain leaves them waiting forever.
	ClusterDomain string
	// DisableZeroDowntime is ENABLE_ZERO_DOWNTIME=false.
	DisableZeroDowntime bool
	// RandomPodDelete is ENABLE_RANDOM_POD_DELETE=true.
	RandomPodDelete bool
	// DisableGCSFTRedisCleanup is ENABLE_GCS_FT_REDIS_CLEANUP=false.
	DisableGCSFTRedisCleanup bool
	// RayJob are the RayJob controller's settings from KubeRay's variables
	// (RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS, RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
	// DELETE_RAYJOB_CR_AFTER_JOB_FINISHES; plan.ParseSettings). The rest of plan.Settings is
	// zero (the defaults); an in-process caller may shorten its timings.
	RayJob rayjobplan.Settings
}

// DefaultEnvironment is what an empty environment means.
func DefaultEnvironment() Environment {
	return Environment{ClusterDomain: raypod.DefaultClusterDomain}
}

// ReadEnvironment sets Environment, and OperatorNamespace (the default of
// --operator-namespace), from the process's environment. Call it once, before parsing flags
// or setting other options: it replaces what they set.
func (o *Options) ReadEnvironment() {
	o.readEnvironment(os.Getenv, os.ReadFile)
}

func (o *Options) readEnvironment(getenv func(string) string, readFile func(string) ([]byte, error)) {
	o.Environment = Environment{
		ClusterDomain:            clusterDomain(getenv(EnvClusterDomain)),
		DisableZeroDowntime:      strings.EqualFold(getenv(EnvEnableZeroDowntime), "false"),
		RandomPodDelete:          strings.EqualFold(getenv(EnvEnableRandomPodDelete), "true"),
		DisableGCSFTRedisCleanup: strings.EqualFold(getenv(EnvEnableGCSFTRedisCleanup), "false"),
		RayJob:                   rayjobplan.ParseSettings(getenv),
	}
	o.OperatorNamespace = operatorNamespace(getenv, readFile)
}

// clusterDomain is a CLUSTER_DOMAIN value as a domain: a trailing dot dropped, and
// cluster.local for an empty value or one that is not a DNS name.
func clusterDomain(v string) string {
	d := strings.TrimSuffix(strings.TrimSpace(v), ".")
	if d == "" || len(validation.IsDNS1123Subdomain(d)) > 0 {
		return raypod.DefaultClusterDomain
	}
	return d
}

// operatorNamespace is the namespace raygate runs in: $POD_NAMESPACE, else the service
// account's namespace, else "" (running outside a cluster).
func operatorNamespace(getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if ns := strings.TrimSpace(getenv(EnvPodNamespace)); ns != "" {
		return ns
	}
	if b, err := readFile(serviceAccountNamespaceFile); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}
