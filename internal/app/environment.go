package app

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
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
	// EnvEnableInitContainerInjection, "false" (any case), leaves the wait-gcs-ready init
	// container out of worker pods.
	EnvEnableInitContainerInjection = "ENABLE_INIT_CONTAINER_INJECTION"
	// EnvEnableProbesInjection, "false" (any case), leaves raygate's liveness and readiness
	// probes out of Ray containers.
	EnvEnableProbesInjection = "ENABLE_PROBES_INJECTION"
	// EnvEnableLoginShell, "true" (any case), runs the commands raygate writes in pods with
	// bash -l.
	EnvEnableLoginShell = "ENABLE_LOGIN_SHELL"
	// EnvEnableRayHeadClusterIPService, "true" (any case), gives head Services a cluster IP
	// instead of making them headless.
	EnvEnableRayHeadClusterIPService = "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE"
	// EnvEnableDeterministicHeadPodName, "true" (any case), names head pods <cluster>-head.
	EnvEnableDeterministicHeadPodName = "ENABLE_DETERMINISTIC_HEAD_POD_NAME"
	// EnvUseIngressOnOpenShift, "true" (any case), exposes dashboards with Ingresses even
	// where OpenShift's Route API is served (by default a Route, as under KubeRay).
	EnvUseIngressOnOpenShift = "USE_INGRESS_ON_OPENSHIFT"
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
	// NoWaitGCSInitContainer is ENABLE_INIT_CONTAINER_INJECTION=false.
	NoWaitGCSInitContainer bool
	// NoProbes is ENABLE_PROBES_INJECTION=false.
	NoProbes bool
	// LoginShell is ENABLE_LOGIN_SHELL=true.
	LoginShell bool
	// HeadClusterIPService is ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true.
	HeadClusterIPService bool
	// DeterministicHeadPodName is ENABLE_DETERMINISTIC_HEAD_POD_NAME=true.
	DeterministicHeadPodName bool
	// IngressOnOpenShift is USE_INGRESS_ON_OPENSHIFT=true.
	IngressOnOpenShift bool
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
	is := func(name, value string) bool { return strings.EqualFold(strings.TrimSpace(getenv(name)), value) }
	o.Environment = Environment{
		ClusterDomain:            clusterDomain(getenv(EnvClusterDomain)),
		DisableZeroDowntime:      is(EnvEnableZeroDowntime, "false"),
		RandomPodDelete:          is(EnvEnableRandomPodDelete, "true"),
		DisableGCSFTRedisCleanup: is(EnvEnableGCSFTRedisCleanup, "false"),
		NoWaitGCSInitContainer:   is(EnvEnableInitContainerInjection, "false"),
		NoProbes:                 is(EnvEnableProbesInjection, "false"),
		LoginShell:               is(EnvEnableLoginShell, "true"),
		HeadClusterIPService:     is(EnvEnableRayHeadClusterIPService, "true"),
		DeterministicHeadPodName: is(EnvEnableDeterministicHeadPodName, "true"),
		IngressOnOpenShift:       is(EnvUseIngressOnOpenShift, "true"),
		RayJob:                   rayjobplan.ParseSettings(getenv),
	}
	o.envProblems = nil
	// KubeRay takes its default for a value it cannot read; raygate refuses to start instead
	// of guessing what was meant. A grace period of 0 or less is KubeRay's "none"; a status
	// check timeout must be positive.
	for name, least := range map[string]int{rayjobplan.EnvStatusCheckTimeout: 1, rayjobplan.EnvTransitionGracePeriod: math.MinInt} {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n < least {
				o.envProblems = append(o.envProblems, fmt.Sprintf("environment variable %s: %q is not a valid whole number of seconds", name, v))
			}
		}
	}
	slices.Sort(o.envProblems)
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
