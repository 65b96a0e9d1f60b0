package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

// parse parses args as cmd/raygate does (KubeRay's single dashes included) and resolves them;
// a --config file holds an empty Configuration.
func parse(t *testing.T, args ...string) (Options, []Notice, error) {
	t.Helper()
	o := DefaultOptions()
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	o.BindFlags(fs)
	if err := fs.Parse(KubeRayArgs(fs, args)); err != nil {
		return o, nil, err
	}
	notices, err := o.resolve(fs, func(string) ([]byte, error) {
		return []byte("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"), nil
	})
	return o, notices, err
}

func noticeValue(n Notice, key string) any {
	for i := 0; i+1 < len(n.KeysAndValues); i += 2 {
		if n.KeysAndValues[i] == key {
			return n.KeysAndValues[i+1]
		}
	}
	return nil
}

// Every flag KubeRay v1.7's operator defines is accepted: it sets the option raygate's flag
// of the same meaning sets, and the start logs raygate's flag.
func TestKubeRayFlagAliases(t *testing.T) {
	cases := []struct {
		kuberay, raygate []string // the same setting, by KubeRay's and by raygate's flags
		check            func(o Options) bool
	}{
		{[]string{"--metrics-addr=:9090"}, []string{"--metrics-bind-address=:9090"}, func(o Options) bool { return o.MetricsAddr == ":9090" }},
		{[]string{"--enable-leader-election"}, []string{"--leader-elect"}, func(o Options) bool { return o.LeaderElect }},
		{[]string{"--enable-leader-election=false"}, []string{"--leader-elect=false"}, func(o Options) bool { return !o.LeaderElect }},
		{[]string{"--watch-namespace=team-a,team-b"}, []string{"--watch-namespaces=team-a,team-b"}, func(o Options) bool {
			return slices.Equal(o.WatchNamespaces, []string{"team-a", "team-b"})
		}},
		{[]string{"--log-file-path=/var/log/raygate/op.log"}, []string{"--log-file=/var/log/raygate/op.log"}, func(o Options) bool { return o.LogFile == "/var/log/raygate/op.log" }},
		{[]string{"--log-file-encoder=console"}, []string{"--log-file-format=console"}, func(o Options) bool { return o.LogFileFormat == "console" }},
		{[]string{"--log-stdout-encoder=console"}, []string{"--log-format=console"}, func(o Options) bool { return o.LogFormat == "console" }},
		{[]string{"--use-kubernetes-proxy"}, []string{"--dashboard-api-server-proxy"}, func(o Options) bool { return o.DashboardAPIServerProxy }},
		{[]string{"--enable-metrics=false"}, []string{"--object-metrics=false"}, func(o Options) bool { return !o.ObjectMetrics }},
		{[]string{"--qps=100"}, []string{"--kube-api-qps=100"}, func(o Options) bool { return o.KubeAPIQPS == 100 }},
		{[]string{"--qps=100", "--burst=200"}, []string{"--kube-api-qps=100", "--kube-api-burst=200"}, func(o Options) bool { return o.KubeAPIBurst == 200 }},
		{[]string{"--zap-log-level=debug"}, []string{"--log-level=debug"}, func(o Options) bool { return o.LogLevel == "debug" }},
		{[]string{"--zap-log-level=3"}, []string{"--log-level=3"}, func(o Options) bool { return o.LogLevel == "3" }},
		{[]string{"--zap-encoder=console"}, []string{"--log-format=console"}, func(o Options) bool { return o.LogFormat == "console" }},
		{[]string{"--zap-stacktrace-level=info"}, []string{"--log-stacktrace-level=info"}, func(o Options) bool { return o.LogStacktraceLevel == "info" }},
		{[]string{"--zap-devel"}, []string{"--log-level=debug", "--log-stacktrace-level=warn"}, func(o Options) bool {
			return o.LogLevel == "debug" && o.LogStacktraceLevel == "warn"
		}},
		{[]string{"--zap-time-encoding=epoch"}, nil, func(Options) bool { return true }},
		{[]string{"--forced-cluster-upgrade"}, nil, func(Options) bool { return true }},
		// KubeRay's flags of raygate's own names.
		{[]string{"--health-probe-bind-address=:8082"}, nil, func(o Options) bool { return o.ProbeAddr == ":8082" }},
		{[]string{"--leader-election-namespace=ops"}, nil, func(o Options) bool { return o.LeaderElectionNS == "ops" }},
		{[]string{"--reconcile-concurrency=7"}, nil, func(o Options) bool { return o.ReconcileConcurrency == 7 }},
		{[]string{"--batch-scheduler=yunikorn"}, nil, func(o Options) bool { return o.BatchScheduler == "yunikorn" }},
		{[]string{"--enable-batch-scheduler"}, nil, func(o Options) bool { return o.BatchSchedulerName() == "volcano" }},
		{[]string{"--kubeconfig=/etc/kube/config"}, nil, func(o Options) bool { return o.Kubeconfig == "/etc/kube/config" }},
		{[]string{"--config=/etc/kuberay/config.yaml"}, nil, func(o Options) bool { return o.ConfigFile == "/etc/kuberay/config.yaml" }},
		{[]string{"--feature-gates=RayMultiHostIndexing=true"}, nil, func(Options) bool { return true }},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(strings.Join(tc.kuberay, " "), func(t *testing.T) {
			kr, notices, err := parseNoConfig(t, tc.kuberay...)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(kr) {
				t.Errorf("%v did not set the option", tc.kuberay)
			}
			if tc.raygate != nil {
				rg, _, err := parseNoConfig(t, tc.raygate...)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(rg, kr, cmp.AllowUnexported(Options{}), cmp.Comparer(func(a, b kubeRayFlagValues) bool { return true })); d != "" {
					t.Errorf("%v and %v differ (-raygate +KubeRay):\n%s", tc.raygate, tc.kuberay, d)
				}
			}
			for _, a := range tc.kuberay {
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				covered[name] = true
				if !slices.Contains(KubeRayFlagNames(), name) {
					continue // raygate's name too: nothing to say
				}
				i := slices.IndexFunc(notices, func(n Notice) bool { return noticeValue(n, "flag") == "--"+name })
				if i < 0 {
					t.Fatalf("no notice for --%s: %+v", name, notices)
				}
				for _, f := range kubeRayFlags {
					if f.name == name && f.raygate != "" && noticeValue(notices[i], "raygateFlag") != "--"+f.raygate {
						t.Errorf("the notice for --%s names %v, want --%s", name, noticeValue(notices[i], "raygateFlag"), f.raygate)
					}
				}
			}
		})
	}
	for _, name := range KubeRayFlagNames() {
		if !covered[name] {
			t.Errorf("KubeRay's --%s has no case", name)
		}
	}
}

// parseNoConfig parses, resolves and validates.
func parseNoConfig(t *testing.T, args ...string) (Options, []Notice, error) {
	t.Helper()
	o, notices, err := parse(t, args...)
	if err == nil {
		err = o.Validate()
	}
	return o, notices, err
}

// KubeRay's Go flags may be written with one dash; raygate reads them so, for its long flags.
func TestKubeRayArgsWithOneDash(t *testing.T) {
	o, _, err := parseNoConfig(t, "-metrics-addr=:9090", "-enable-leader-election", "-watch-namespace", "team-a", "-qps=50", "-zap-devel")
	if err != nil {
		t.Fatal(err)
	}
	if o.MetricsAddr != ":9090" || !o.LeaderElect || !slices.Equal(o.WatchNamespaces, []string{"team-a"}) || o.KubeAPIQPS != 50 || o.LogLevel != "debug" {
		t.Errorf("single-dash flags not read: %+v", o)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.BindFlags(fs)
	if got := KubeRayArgs(fs, []string{"-x", "-unknown-flag", "--", "-metrics-addr"}); !slices.Equal(got, []string{"-x", "-unknown-flag", "--", "-metrics-addr"}) {
		t.Errorf("rewrote %v", got)
	}
}

func TestKubeRayFlagConflicts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-addr=:9090", "--metrics-bind-address=:9091"}, "--metrics-bind-address and --metrics-addr set the same setting; give only --metrics-bind-address"},
		{[]string{"--log-stdout-encoder=json", "--zap-encoder=console"}, "--log-stdout-encoder and --zap-encoder set the same setting; give only --log-format"},
		{[]string{"--watch-namespace=a", "--watch-namespaces=b"}, "give only --watch-namespaces"},
		{[]string{"--zap-time-encoding=fancy"}, `--zap-time-encoding must be one of epoch, millis, nano, iso8601, rfc3339, rfc3339nano, not "fancy"`},
		{[]string{"--burst=200"}, "--kube-api-burst needs --kube-api-qps"},
		{[]string{"--qps=-1"}, "--kube-api-qps must not be negative"},
		{[]string{"--log-file-encoder=text"}, `--log-file-format must be json or console, not "text"`},
		{[]string{"--zap-stacktrace-level=loud"}, `--log-stacktrace-level must be debug, info, warn, error or panic, not "loud"`},
		{[]string{"--use-kubernetes-proxy", "--dashboard-url-template=http://127.0.0.1:9000/{name}"}, "--dashboard-api-server-proxy and --dashboard-url-template both say where dashboards are"},
	} {
		_, _, err := parseNoConfig(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// --zap-devel sets debug level and warn stack traces only where nothing else set them.
func TestZapDevelKeepsExplicitSettings(t *testing.T) {
	o, _, err := parseNoConfig(t, "--zap-devel", "--zap-log-level=error", "--log-stacktrace-level=error")
	if err != nil {
		t.Fatal(err)
	}
	if o.LogLevel != "error" || o.LogStacktraceLevel != "error" {
		t.Errorf("level %q, stack traces %q: --zap-devel overrode explicit settings", o.LogLevel, o.LogStacktraceLevel)
	}
}

// KubeRay's names stay out of --help; raygate's flags are listed.
func TestKubeRayFlagsAreHidden(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	o.BindFlags(fs)
	help := fs.FlagUsages()
	for _, name := range KubeRayFlagNames() {
		if strings.Contains(help, "--"+name+" ") {
			t.Errorf("--%s is listed in --help", name)
		}
	}
	for _, name := range []string{"config", "kube-api-qps", "log-file", "object-metrics", "dashboard-api-server-proxy"} {
		if !strings.Contains(help, "--"+name+" ") {
			t.Errorf("--%s is missing from --help", name)
		}
	}
}
