package install

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	rayjobplan "github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/framework"
)

// fixedFlags are the flags of cmd/raygate no value of the chart sets (the chart renders a fixed
// value, or leaves the flag out), each with the reason.
var fixedFlags = map[string]string{
	"leader-elect":              "always on: every replica serves webhooks, one reconciles",
	"leader-election-namespace": "the release namespace, where the chart grants the Lease",
	"webhook-host":              "all addresses: the Service reaches the pod's IP",
	"webhook-cert-dir":          "where the chart mounts the certificate Secret",
	"metrics-cert-dir":          "the webhook's certificate Secret when cert-manager issues it (metrics.secure, metrics.service.enabled), else a self-signed one",
	"operator-namespace":        "the pod's namespace, from POD_NAMESPACE (downward API)",
	"enable-batch-scheduler":    "deprecated: batchScheduler: volcano",
	"kubeconfig":                "in-cluster: the pod's service account",
}

// kubeRayFlag reports KubeRay's flag names, which the chart never renders: it passes
// raygate's flag of each setting.
func kubeRayFlag(name string) bool { return slices.Contains(app.KubeRayFlagNames(), name) }

func managerFlags() *pflag.FlagSet {
	opts := app.DefaultOptions()
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	opts.BindFlags(fs)
	return fs
}

// flagValues maps each --name=value (or bare --name) of args to its value.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		n, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			v = "true"
		}
		out[n] = v
	}
	return out
}

func containerEnv(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

var _ = Describe("every setting through Helm", func() {
	allSettings := filepath.Join(chartDir, "ci", "all-settings-values.yaml")

	It("reaches every flag of cmd/raygate from values, or fixes it for a stated reason", func() {
		// A flag is reachable when some values give it another value than the defaults do:
		// the all-settings file moves every setting away from its default; the webhook switch
		// needs a rendering of its own.
		argsOf := func(args ...string) map[string]string {
			objs := render(args...)
			expectManagerAccepts(objs)
			return flagValues(objs.deployment().Spec.Template.Spec.Containers[0].Args)
		}
		byDefault := argsOf()
		// --dashboard-api-server-proxy excludes the all-settings file's --dashboard-url-template.
		variants := []map[string]string{argsOf("-f", allSettings), argsOf("--set", "webhook.enabled=false"), argsOf("--set", "dashboardAPIServerProxy=true")}
		fs := managerFlags()
		var unreachable []string
		fs.VisitAll(func(f *pflag.Flag) {
			if _, fixed := fixedFlags[f.Name]; fixed || kubeRayFlag(f.Name) {
				return
			}
			for _, v := range variants {
				if got, ok := v[f.Name]; ok && got != byDefault[f.Name] {
					return
				}
			}
			unreachable = append(unreachable, f.Name)
		})
		Expect(unreachable).To(BeEmpty(), "flags no value of the chart changes: add a typed value, or list them in fixedFlags with the reason")
		for name := range fixedFlags {
			Expect(fs.Lookup(name)).NotTo(BeNil(), "fixedFlags names a flag the manager no longer has: %s", name)
		}
		Expect(variants[0]).To(And(
			HaveKeyWithValue("leader-election-id", "raygate-tenant-a.example.com"),
			HaveKeyWithValue("sync-period", "1h30m"),
			HaveKeyWithValue("enable-http2", "true"),
			HaveKeyWithValue("dashboard-url-template", "http://{name}-head-svc.{namespace}.svc:8265"),
			HaveKeyWithValue("pprof-bind-address", "127.0.0.1:6060"),
			HaveKeyWithValue("log-file", "/var/log/raygate/operator.log"),
			HaveKeyWithValue("kube-api-qps", "50"),
			HaveKeyWithValue("kube-api-burst", "75"),
			HaveKeyWithValue("object-metrics", "false"),
		))
		for _, v := range variants {
			for name := range v {
				Expect(kubeRayFlag(name)).To(BeFalse(), "the chart renders KubeRay's --%s; render raygate's name", name)
			}
		}
	})

	It("sets the operator's environment settings only when they differ from its defaults", func() {
		byDefault := containerEnv(render().deployment().Spec.Template.Spec.Containers[0])
		Expect(byDefault).To(HaveKeyWithValue("CLUSTER_DOMAIN", "cluster.local"))
		Expect(byDefault).To(HaveKey("GOMEMLIMIT"))
		Expect(byDefault).To(HaveKey("POD_NAMESPACE"))
		Expect(byDefault).NotTo(HaveKey("ENABLE_RANDOM_POD_DELETE"))
		Expect(byDefault).NotTo(HaveKey("ENABLE_ZERO_DOWNTIME"))
		Expect(byDefault).NotTo(HaveKey("ENABLE_GCS_FT_REDIS_CLEANUP"))
		for _, name := range []string{app.EnvEnableInitContainerInjection, app.EnvEnableProbesInjection, app.EnvEnableLoginShell,
			app.EnvEnableRayHeadClusterIPService, app.EnvEnableDeterministicHeadPodName, app.EnvUseIngressOnOpenShift, rayjobplan.EnvDeleteRayJobAfterFinish,
			rayjobplan.EnvStatusCheckTimeout, rayjobplan.EnvTransitionGracePeriod} {
			Expect(byDefault).NotTo(HaveKey(name))
		}

		set := containerEnv(render("-f", allSettings).deployment().Spec.Template.Spec.Containers[0])
		Expect(set).To(HaveKeyWithValue("ENABLE_RANDOM_POD_DELETE", "true"))
		Expect(set).To(HaveKeyWithValue("ENABLE_ZERO_DOWNTIME", "false"))
		Expect(set).To(HaveKeyWithValue("ENABLE_GCS_FT_REDIS_CLEANUP", "false"))
		Expect(set).To(HaveKeyWithValue(app.EnvEnableInitContainerInjection, "false"))
		Expect(set).To(HaveKeyWithValue(app.EnvEnableProbesInjection, "false"))
		Expect(set).To(HaveKeyWithValue(app.EnvEnableLoginShell, "true"))
		Expect(set).To(HaveKeyWithValue(app.EnvEnableRayHeadClusterIPService, "true"))
		Expect(set).To(HaveKeyWithValue(app.EnvEnableDeterministicHeadPodName, "true"))
		Expect(set).To(HaveKeyWithValue(app.EnvUseIngressOnOpenShift, "true"))
		Expect(set).To(HaveKeyWithValue(rayjobplan.EnvDeleteRayJobAfterFinish, "true"))
		Expect(set).To(HaveKeyWithValue(rayjobplan.EnvStatusCheckTimeout, "120"))
		Expect(set).To(HaveKeyWithValue(rayjobplan.EnvTransitionGracePeriod, "600"))
	})

	It("stops a pod with the preStop sleep, the webhook drain and the grace period from values", func() {
		pod := render().deployment().Spec.Template.Spec
		Expect(pod.TerminationGracePeriodSeconds).To(HaveValue(BeEquivalentTo(30)))
		Expect(pod.Containers[0].Lifecycle.PreStop.Sleep.Seconds).To(BeEquivalentTo(5))
		Expect(flagValues(pod.Containers[0].Args)).To(HaveKeyWithValue("webhook-shutdown-drain", "2s"))

		pod = render("-f", allSettings).deployment().Spec.Template.Spec
		Expect(pod.TerminationGracePeriodSeconds).To(HaveValue(BeEquivalentTo(45)))
		Expect(pod.Containers[0].Lifecycle.PreStop.Sleep.Seconds).To(BeEquivalentTo(10))
		Expect(flagValues(pod.Containers[0].Args)).To(HaveKeyWithValue("webhook-shutdown-drain", "3s"))

		// 0: no hook at all (a zero sleep needs a feature gate on older clusters).
		Expect(render("--set", "shutdown.preStopSleepSeconds=0").deployment().Spec.Template.Spec.Containers[0].Lifecycle).To(BeNil())
	})

	It("names the image by digest when image.digest is set", func() {
		digest := "sha256:" + strings.Repeat("ab", 32)
		c := render("--set", "image.digest="+digest, "--set", "image.tag=9.9.9").deployment().Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("ghcr.io/raygate/raygate@" + digest))
		Expect(render().deployment().Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/raygate/raygate:0.1.0"))
	})

	It("renders a NetworkPolicy for the webhook and metrics ports only when asked", func() {
		Expect(render().ofKind("NetworkPolicy")).To(BeEmpty())
		objs := render("-f", allSettings)
		nps := objs.ofKind("NetworkPolicy")
		Expect(nps).To(HaveLen(1))
		np := typed[networkingv1.NetworkPolicy](nps[0])
		d := objs.deployment()
		Expect(np.Spec.PodSelector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels))
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		Expect(np.Spec.Ingress).To(HaveLen(2))
		webhookRule, metricsRule := np.Spec.Ingress[0], np.Spec.Ingress[1]
		Expect(webhookRule.Ports[0].Port.StrVal).To(Equal("webhook-server"))
		Expect(webhookRule.From).To(BeEmpty(), "the API server may call from outside the pod network")
		Expect(metricsRule.Ports[0].Port.StrVal).To(Equal("metrics"))
		Expect(metricsRule.From).To(ConsistOf(HaveField("NamespaceSelector.MatchLabels", HaveKeyWithValue("kubernetes.io/metadata.name", "monitoring"))))
		// The named ports exist on the container.
		var names []string
		for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
			names = append(names, p.Name)
		}
		Expect(names).To(ContainElements("webhook-server", "metrics"))
	})
})

var _ = Describe("leader election per release", func() {
	It("gives each release its own Lease, raygate.ray.io for the release named raygate", func() {
		id := func(releaseName string, args ...string) string {
			d := parse(mustHelm(append([]string{"template", releaseName, chartDir, "--namespace", releaseNS}, args...)...)).deployment()
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--leader-election-id="); ok {
					return v
				}
			}
			return ""
		}
		Expect(id("raygate")).To(Equal("raygate.ray.io"), "the Lease of earlier versions: an upgrade keeps one leader")
		Expect(id("raygate-b")).To(Equal("raygate-b.ray.io"))
		Expect(id("team-a")).To(Equal("team-a-raygate.ray.io"))
		Expect(id("raygate", "--set", "leaderElection.id=ops.example.com")).To(Equal("ops.example.com"))
	})

	It("lets two releases in one namespace each elect a leader, and one release only one", func(ctx context.Context) {
		start := func(id string) *framework.Manager {
			opts := framework.ManagerOptions()
			opts.LeaderElect = true
			opts.LeaderElectionID = id
			opts.LeaderElectionNS = releaseNS
			m := harness.StartManager(opts)
			DeferCleanup(m.Stop)
			return m
		}
		a, b := start("raygate.ray.io"), start("raygate-b.ray.io")
		Eventually(a.Elected()).WithTimeout(30 * time.Second).Should(BeClosed())
		Eventually(b.Elected()).WithTimeout(30 * time.Second).Should(BeClosed())

		// A second replica of release raygate waits behind the first...
		a2 := start("raygate.ray.io")
		Consistently(a2.Elected()).WithTimeout(3 * time.Second).ShouldNot(BeClosed())

		// ...and takes over as soon as the first stops gracefully (it releases the Lease), well
		// before the Lease would expire (15 s).
		stopped := time.Now()
		Expect(a.Stop()).To(Succeed())
		Eventually(a2.Elected()).WithTimeout(10 * time.Second).Should(BeClosed())
		failover := time.Since(stopped)
		AddReportEntry("leader failover after a graceful stop", failover.Round(10*time.Millisecond).String())
		GinkgoWriter.Printf("leader failover after a graceful stop: %s\n", failover.Round(10*time.Millisecond))
	})
})

func mustHelm(args ...string) string {
	GinkgoHelper()
	out, err := runHelm(args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}
