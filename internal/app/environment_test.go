package app

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	rayjobplan "github.com/raygate/raygate/controllers/rayjob/plan"
)

// The environment variables mean what they mean to KubeRay's operator.
func TestReadEnvironment(t *testing.T) {
	noFile := func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	for _, tc := range []struct {
		name string
		env  map[string]string
		file func(string) ([]byte, error)
		want Environment
		ns   string
	}{
		{name: "nothing set", want: DefaultEnvironment()},
		{name: "cluster domain", env: map[string]string{EnvClusterDomain: "corp.example"}, want: Environment{ClusterDomain: "corp.example"}},
		{name: "cluster domain with its root dot", env: map[string]string{EnvClusterDomain: " corp.example. "}, want: Environment{ClusterDomain: "corp.example"}},
		{name: "a cluster domain that is not a DNS name", env: map[string]string{EnvClusterDomain: "not a domain; rm -rf /"}, want: DefaultEnvironment()},
		{name: "zero downtime off", env: map[string]string{EnvEnableZeroDowntime: "false"}, want: Environment{ClusterDomain: "cluster.local", DisableZeroDowntime: true}},
		{name: "zero downtime off, any case", env: map[string]string{EnvEnableZeroDowntime: "FALSE"}, want: Environment{ClusterDomain: "cluster.local", DisableZeroDowntime: true}},
		{name: "zero downtime: only false turns it off", env: map[string]string{EnvEnableZeroDowntime: "no"}, want: DefaultEnvironment()},
		{name: "random pod delete", env: map[string]string{EnvEnableRandomPodDelete: "True"}, want: Environment{ClusterDomain: "cluster.local", RandomPodDelete: true}},
		{name: "random pod delete: only true turns it on", env: map[string]string{EnvEnableRandomPodDelete: "yes"}, want: DefaultEnvironment()},
		{name: "Redis cleanup off", env: map[string]string{EnvEnableGCSFTRedisCleanup: "false"}, want: Environment{ClusterDomain: "cluster.local", DisableGCSFTRedisCleanup: true}},
		{name: "Redis cleanup stays on unless false", env: map[string]string{EnvEnableGCSFTRedisCleanup: "0"}, want: DefaultEnvironment()},
		{name: "no wait-gcs-ready", env: map[string]string{EnvEnableInitContainerInjection: "False"}, want: Environment{ClusterDomain: "cluster.local", NoWaitGCSInitContainer: true}},
		{name: "wait-gcs-ready unless false", env: map[string]string{EnvEnableInitContainerInjection: "no"}, want: DefaultEnvironment()},
		{name: "no probes", env: map[string]string{EnvEnableProbesInjection: "false"}, want: Environment{ClusterDomain: "cluster.local", NoProbes: true}},
		{name: "probes unless false", env: map[string]string{EnvEnableProbesInjection: "0"}, want: DefaultEnvironment()},
		{name: "login shell", env: map[string]string{EnvEnableLoginShell: "TRUE"}, want: Environment{ClusterDomain: "cluster.local", LoginShell: true}},
		{name: "login shell only when true", env: map[string]string{EnvEnableLoginShell: "1"}, want: DefaultEnvironment()},
		{name: "head cluster IP Service", env: map[string]string{EnvEnableRayHeadClusterIPService: "true"}, want: Environment{ClusterDomain: "cluster.local", HeadClusterIPService: true}},
		{name: "deterministic head pod name", env: map[string]string{EnvEnableDeterministicHeadPodName: " true "}, want: Environment{ClusterDomain: "cluster.local", DeterministicHeadPodName: true}},
		{name: "Ingress on OpenShift", env: map[string]string{EnvUseIngressOnOpenShift: "True"}, want: Environment{ClusterDomain: "cluster.local", IngressOnOpenShift: true}},
		{name: "Ingress on OpenShift only when true", env: map[string]string{EnvUseIngressOnOpenShift: "yes"}, want: DefaultEnvironment()},
		{name: "RayJob timings", env: map[string]string{rayjobplan.EnvStatusCheckTimeout: "60", rayjobplan.EnvTransitionGracePeriod: "0", rayjobplan.EnvDeleteRayJobAfterFinish: "TRUE"},
			want: Environment{ClusterDomain: "cluster.local", RayJob: rayjobplan.Settings{StatusCheckTimeout: time.Minute, TransitionGracePeriod: -1, DeleteRayJobAfterJobFinishes: true}}},
		{name: "RayJob timings that are not numbers take the defaults (and Validate refuses them)", env: map[string]string{rayjobplan.EnvStatusCheckTimeout: "-5", rayjobplan.EnvTransitionGracePeriod: "soon"},
			want: DefaultEnvironment()},
		{name: "pod namespace", env: map[string]string{EnvPodNamespace: " raygate-system "}, want: DefaultEnvironment(), ns: "raygate-system"},
		{name: "the service account's namespace", file: func(name string) ([]byte, error) {
			if name != serviceAccountNamespaceFile {
				return nil, errors.New("unexpected file " + name)
			}
			return []byte("ops\n"), nil
		}, want: DefaultEnvironment(), ns: "ops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			file := tc.file
			if file == nil {
				file = noFile
			}
			o.readEnvironment(func(k string) string { return tc.env[k] }, file)
			if o.Environment != tc.want || o.OperatorNamespace != tc.ns {
				t.Errorf("got %+v in namespace %q, want %+v in %q", o.Environment, o.OperatorNamespace, tc.want, tc.ns)
			}
		})
	}
}

// POD_NAMESPACE is only the default of --operator-namespace.
func TestOperatorNamespaceFlagOverridesTheEnvironment(t *testing.T) {
	o := DefaultOptions()
	o.readEnvironment(func(k string) string { return map[string]string{EnvPodNamespace: "from-env"}[k] }, nil)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(nil); err != nil || o.OperatorNamespace != "from-env" {
		t.Fatalf("no flag: %q (%v)", o.OperatorNamespace, err)
	}
	if err := fs.Parse([]string{"--operator-namespace=from-flag"}); err != nil || o.OperatorNamespace != "from-flag" {
		t.Fatalf("flag: %q (%v)", o.OperatorNamespace, err)
	}
}

// DefaultOptions reads nothing from the process: a test or an in-process operator gets the
// same options whatever the environment of the process running it.
func TestDefaultOptionsReadNoEnvironment(t *testing.T) {
	t.Setenv(EnvPodNamespace, "somewhere")
	t.Setenv(EnvClusterDomain, "corp.example")
	t.Setenv(EnvEnableZeroDowntime, "false")
	o := DefaultOptions()
	if o.OperatorNamespace != "" || o.Environment != DefaultEnvironment() {
		t.Errorf("DefaultOptions read the environment: %q %+v", o.OperatorNamespace, o.Environment)
	}
	o.ReadEnvironment()
	if o.OperatorNamespace != "somewhere" || o.ClusterDomain != "corp.example" || !o.DisableZeroDowntime {
		t.Errorf("ReadEnvironment: %q %+v", o.OperatorNamespace, o.Environment)
	}
}

// A RayJob timeout raygate cannot read stops the start (KubeRay would use its default).
func TestUnreadableEnvironmentIsRefused(t *testing.T) {
	o := DefaultOptions()
	o.readEnvironment(func(k string) string {
		return map[string]string{rayjobplan.EnvStatusCheckTimeout: "5m", rayjobplan.EnvTransitionGracePeriod: "soon"}[k]
	}, func(string) ([]byte, error) { return nil, fs.ErrNotExist })
	err := o.Validate()
	for _, want := range []string{`environment variable RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: "5m" is not a valid whole number of seconds`,
		`RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: "soon"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

// Each switch reaches the pod settings the controller and admission build pods with.
func TestEnvironmentReachesThePodSettings(t *testing.T) {
	o := DefaultOptions()
	o.readEnvironment(func(k string) string {
		return map[string]string{EnvEnableInitContainerInjection: "false", EnvEnableProbesInjection: "false", EnvEnableLoginShell: "true",
			EnvEnableRayHeadClusterIPService: "true", EnvEnableDeterministicHeadPodName: "true", EnvClusterDomain: "corp.example"}[k]
	}, func(string) ([]byte, error) { return nil, fs.ErrNotExist })
	s := o.PodSettings()
	if !s.NoWaitGCSInitContainer || !s.NoProbes || !s.LoginShell || !s.HeadClusterIPService || !s.DeterministicHeadPodName || s.ClusterDomain != "corp.example" {
		t.Errorf("pod settings %+v", s)
	}
	if !reflect.DeepEqual(o.Policy().PodSettings, s) {
		t.Error("admission builds pods with other settings than the controller")
	}
}
