package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// KubeRay's operator (v1.7) flags are accepted under their own names, so a Deployment
// written for KubeRay starts raygate: each sets the raygate option of the same meaning, and
// the start logs which raygate flag to use instead. A KubeRay name and raygate's name for
// one setting given together are refused, as is the same setting given by a flag and by the
// --config file (resolve.go).

// kubeRayFlag is one of KubeRay's flag names and the raygate flag it stands for.
type kubeRayFlag struct {
	// name is KubeRay's flag.
	name string
	// raygate is raygate's flag for the same setting ("" when raygate has none).
	raygate string
	// note says how the value is read, when not exactly as raygate's flag reads it.
	note string
}

// kubeRayFlags are the flags of KubeRay v1.7's main.go (with the zap logging flags it binds)
// that raygate does not define under the same name. KubeRay's --health-probe-bind-address,
// --leader-election-namespace, --reconcile-concurrency, --batch-scheduler,
// --enable-batch-scheduler, --feature-gates, --config and controller-runtime's --kubeconfig
// are raygate's names too.
var kubeRayFlags = []kubeRayFlag{
	{name: "metrics-addr", raygate: "metrics-bind-address"},
	{name: "enable-leader-election", raygate: "leader-elect"},
	{name: "watch-namespace", raygate: "watch-namespaces"},
	{name: "log-file-path", raygate: "log-file"},
	{name: "log-file-encoder", raygate: "log-file-format"},
	{name: "log-stdout-encoder", raygate: "log-format"},
	{name: "use-kubernetes-proxy", raygate: "dashboard-api-server-proxy", note: "raygate proxies through pods/proxy, to the very head pod it observed"},
	{name: "enable-metrics", raygate: "object-metrics", note: "raygate exports them unless turned off; KubeRay only when turned on"},
	{name: "qps", raygate: "kube-api-qps", note: "0 means no client-side limit (KubeRay: client-go's 5)"},
	{name: "burst", raygate: "kube-api-burst"},
	{name: "zap-log-level", raygate: "log-level"},
	{name: "zap-encoder", raygate: "log-format"},
	{name: "zap-stacktrace-level", raygate: "log-stacktrace-level"},
	{name: "zap-devel", note: "means --log-level=debug and --log-stacktrace-level=warn where those are not set, as for KubeRay"},
	{name: "zap-time-encoding", note: "no effect, as in KubeRay v1.7 (whose encoder ignores it): raygate's times are ISO 8601"},
	{name: "forced-cluster-upgrade", note: "no effect, as in KubeRay (deprecated there)"},
}

// zapTimeEncodings are the values KubeRay's --zap-time-encoding accepts.
var zapTimeEncodings = []string{"epoch", "millis", "nano", "iso8601", "rfc3339", "rfc3339nano"}

// kubeRayFlagValues hold what KubeRay's flags set that no option holds.
type kubeRayFlagValues struct {
	zapDevel             bool
	zapTimeEncoding      string
	forcedClusterUpgrade bool
}

// bindKubeRayFlags registers KubeRay's flag names, hidden from --help (docs/reference/flags.md
// lists them, from KubeRayFlagAliases), on the options raygate's flags set.
func (o *Options) bindKubeRayFlags(fs *pflag.FlagSet) {
	usage := func(name string) string {
		for _, f := range kubeRayFlags {
			if f.name == name && f.raygate != "" {
				return "KubeRay's name of --" + f.raygate
			}
		}
		return "KubeRay's flag"
	}
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, usage("metrics-addr"))
	fs.BoolVar(&o.LeaderElect, "enable-leader-election", o.LeaderElect, usage("enable-leader-election"))
	fs.StringSliceVar(&o.WatchNamespaces, "watch-namespace", o.WatchNamespaces, usage("watch-namespace"))
	fs.StringVar(&o.LogFile, "log-file-path", o.LogFile, usage("log-file-path"))
	fs.StringVar(&o.LogFileFormat, "log-file-encoder", o.LogFileFormat, usage("log-file-encoder"))
	fs.StringVar(&o.LogFormat, "log-stdout-encoder", o.LogFormat, usage("log-stdout-encoder"))
	fs.BoolVar(&o.DashboardAPIServerProxy, "use-kubernetes-proxy", o.DashboardAPIServerProxy, usage("use-kubernetes-proxy"))
	fs.BoolVar(&o.ObjectMetrics, "enable-metrics", o.ObjectMetrics, usage("enable-metrics"))
	fs.Float64Var(&o.KubeAPIQPS, "qps", o.KubeAPIQPS, usage("qps"))
	fs.IntVar(&o.KubeAPIBurst, "burst", o.KubeAPIBurst, usage("burst"))
	fs.StringVar(&o.LogLevel, "zap-log-level", o.LogLevel, usage("zap-log-level"))
	fs.StringVar(&o.LogFormat, "zap-encoder", o.LogFormat, usage("zap-encoder"))
	fs.StringVar(&o.LogStacktraceLevel, "zap-stacktrace-level", o.LogStacktraceLevel, usage("zap-stacktrace-level"))
	fs.BoolVar(&o.kubeRay.zapDevel, "zap-devel", o.kubeRay.zapDevel, usage("zap-devel"))
	fs.StringVar(&o.kubeRay.zapTimeEncoding, "zap-time-encoding", o.kubeRay.zapTimeEncoding, usage("zap-time-encoding"))
	fs.BoolVar(&o.kubeRay.forcedClusterUpgrade, "forced-cluster-upgrade", o.kubeRay.forcedClusterUpgrade, usage("forced-cluster-upgrade"))
	for _, f := range kubeRayFlags {
		_ = fs.MarkHidden(f.name)
	}
}

// KubeRayFlagNames are KubeRay's flag names raygate accepts besides its own.
func KubeRayFlagNames() []string {
	names := make([]string, len(kubeRayFlags))
	for i, f := range kubeRayFlags {
		names[i] = f.name
	}
	return names
}

// KubeRayFlagAlias is one of KubeRay's flag names raygate accepts: the raygate flag it
// stands for ("" when none) and how its value is read when not as that flag reads it.
type KubeRayFlagAlias struct {
	Name, RaygateFlag, Note string
}

// KubeRayFlagAliases are KubeRay's flag names raygate accepts, for the reference docs.
func KubeRayFlagAliases() []KubeRayFlagAlias {
	out := make([]KubeRayFlagAlias, len(kubeRayFlags))
	for i, f := range kubeRayFlags {
		out[i] = KubeRayFlagAlias{Name: f.name, RaygateFlag: f.raygate, Note: f.note}
	}
	return out
}

// settingFlags are the flags that set one setting, raygate's first: two of them given
// together are refused.
func settingFlags() [][]string {
	groups := map[string][]string{}
	var order []string
	for _, f := range kubeRayFlags {
		if f.raygate == "" {
			continue
		}
		if _, ok := groups[f.raygate]; !ok {
			order = append(order, f.raygate)
			groups[f.raygate] = []string{f.raygate}
		}
		groups[f.raygate] = append(groups[f.raygate], f.name)
	}
	out := make([][]string, len(order))
	for i, r := range order {
		out[i] = groups[r]
	}
	return out
}

// kubeRayFlagNotices checks the KubeRay flags given and says what each means for raygate.
func (o *Options) kubeRayFlagNotices(fs *pflag.FlagSet) ([]Notice, []string) {
	var notices []Notice
	var errs []string
	for _, group := range settingFlags() {
		var given []string
		for _, name := range group {
			if fs.Changed(name) {
				given = append(given, "--"+name)
			}
		}
		if len(given) > 1 {
			errs = append(errs, fmt.Sprintf("%s set the same setting; give only --%s", strings.Join(given, " and "), group[0]))
		}
	}
	for _, f := range kubeRayFlags {
		if !fs.Changed(f.name) {
			continue
		}
		n := Notice{Message: "warning: KubeRay's flag name used; prefer raygate's", KeysAndValues: []any{"flag", "--" + f.name}}
		if f.raygate != "" {
			n.KeysAndValues = append(n.KeysAndValues, "raygateFlag", "--"+f.raygate)
		}
		if f.note != "" {
			n.KeysAndValues = append(n.KeysAndValues, "note", f.note)
		}
		notices = append(notices, n)
	}
	if v := o.kubeRay.zapTimeEncoding; v != "" && !slices.Contains(zapTimeEncodings, v) {
		errs = append(errs, fmt.Sprintf("--zap-time-encoding must be one of %s, not %q", strings.Join(zapTimeEncodings, ", "), v))
	}
	if o.kubeRay.zapDevel {
		// Development mode's defaults, where nothing else set them (KubeRay v1.7 keeps its
		// encoder from --log-stdout-encoder, so the format is not changed).
		if !anyChanged(fs, "log-level", "zap-log-level") {
			o.LogLevel = "debug"
		}
		if !anyChanged(fs, "log-stacktrace-level", "zap-stacktrace-level") {
			o.LogStacktraceLevel = "warn"
		}
	}
	return notices, errs
}

func anyChanged(fs *pflag.FlagSet, names ...string) bool {
	return slices.ContainsFunc(names, fs.Changed)
}

// KubeRayArgs rewrites KubeRay's single-dash flags (Go's flag package reads -metrics-addr
// as --metrics-addr; pflag does not) to double-dash ones, for the long flags fs knows. Other
// arguments are kept as they are.
func KubeRayArgs(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && fs.Lookup(name) != nil {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}
