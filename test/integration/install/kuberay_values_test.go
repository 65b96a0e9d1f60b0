package install

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/dashboard"
)

// dashboardProxyRole is the ClusterRole of dashboardAPIServerProxy.
const dashboardProxyRole = "raygate-system-raygate-dashboard-proxy"

var _ = Describe("values written for KubeRay's chart", func() {
	kubeRayValues := filepath.Join(chartDir, "ci", "kuberay-values.yaml")

	managerArgs := func(objs objects) []string {
		GinkgoHelper()
		return objs.deployment().Spec.Template.Spec.Containers[0].Args
	}

	It("takes featureGates in KubeRay's list form as in raygate's map form, under Helm 4 and Helm 3", func() {
		for _, bin := range []string{helm, helm3} {
			list := parse(mustHelmBin(bin, "template", release, chartDir, "--namespace", releaseNS, "-f", kubeRayValues))
			asMap := parse(mustHelmBin(bin, "template", release, chartDir, "--namespace", releaseNS,
				"--set", "featureGates.RayClusterStatusConditions=true,featureGates.RayJobDeletionPolicy=true,featureGates.RayMultiHostIndexing=true",
				"--set", "featureGates.RayServiceIncrementalUpgrade=true,featureGates.RayClusterMTLS=false,featureGates.RayClusterNetworkPolicy=false",
				"--set", "featureGates.RayClusterHistoryServer=false,featureGates.RayCronJob=false"))
			gates := func(args []string) string {
				i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--feature-gates=") })
				Expect(i).NotTo(Equal(-1), bin)
				return args[i]
			}
			Expect(gates(managerArgs(list))).To(Equal(gates(managerArgs(asMap))), bin)
			Expect(gates(managerArgs(list))).To(Equal("--feature-gates=RayClusterHistoryServer=false,RayClusterMTLS=false,RayClusterNetworkPolicy=false," +
				"RayClusterStatusConditions=true,RayCronJob=false,RayJobDeletionPolicy=true,RayMultiHostIndexing=true,RayServiceIncrementalUpgrade=true"))
		}
		expectManagerAccepts(render("-f", kubeRayValues))
	})

	It("takes batchScheduler in KubeRay's object form", func() {
		scheduler := func(args ...string) []string {
			var out []string
			for _, a := range managerArgs(render(args...)) {
				if strings.HasPrefix(a, "--batch-scheduler") {
					out = append(out, a)
				}
			}
			return out
		}
		Expect(scheduler("-f", kubeRayValues)).To(BeEmpty(), "KubeRay's defaults: the default scheduler")
		Expect(scheduler("--set", "batchScheduler.name=yunikorn")).To(Equal([]string{"--batch-scheduler=yunikorn"}))
		Expect(scheduler("--set", "batchScheduler.enabled=true")).To(Equal([]string{"--batch-scheduler=volcano"}), "KubeRay's deprecated form")
		Expect(scheduler("--set", "batchScheduler=kai-scheduler")).To(Equal([]string{"--batch-scheduler=kai-scheduler"}), "raygate's form")
	})

	DescribeTable("refuses KubeRay's forms where they would not mean what they say, under Helm 4 and Helm 3",
		func(want string, set ...string) {
			for _, bin := range []string{helm, helm3} {
				args := []string{"template", release, chartDir, "--namespace", releaseNS}
				for _, s := range set {
					args = append(args, "--set", s)
				}
				_, err := runHelmBin(bin, args...)
				Expect(err).To(HaveOccurred(), bin)
				Expect(err.Error()).To(ContainSubstring(want), bin)
			}
		},
		Entry("a KubeRay gate raygate does not have, enabled", "featureGates: KubernetesWAS is a KubeRay feature raygate does not have",
			"featureGates[0].name=KubernetesWAS,featureGates[0].enabled=true"),
		Entry("a gate neither has", "at '/featureGates/0/name'", "featureGates[0].name=RayTypo,featureGates[0].enabled=true"),
		Entry("a gate twice", "featureGates lists RayClusterMTLS twice",
			"featureGates[0].name=RayClusterMTLS,featureGates[0].enabled=true,featureGates[1].name=RayClusterMTLS,featureGates[1].enabled=false"),
		Entry("an entry without enabled", "at '/featureGates/0'", "featureGates[0].name=RayClusterMTLS"),
		Entry("configuration fields without configuration.enabled", "configuration.defaultPodLabels is set but configuration.enabled is false",
			"configuration.defaultPodLabels.team=ml"),
		Entry("dashboards through the API server and at a URL template", "dashboardAPIServerProxy and dashboardURLTemplate both say where dashboards are",
			"dashboardAPIServerProxy=true,dashboardURLTemplate=http://{name}-head-svc.{namespace}.svc:8265"),
		Entry("batchScheduler.enabled and batchScheduler.name together, as KubeRay refuses them", "batchScheduler.enabled (deprecated) and batchScheduler.name are both set",
			"batchScheduler.enabled=true,batchScheduler.name=volcano"),
		Entry("an unknown batch scheduler in the object form", "at '/batchScheduler'", "batchScheduler.name=slurm"),
		Entry("a sidecar without an image", "at '/configuration/headSidecarContainers/0'", "configuration.enabled=true,configuration.headSidecarContainers[0].name=x"),
	)

	It("passes KubeRay's configuration block to the manager as its --config file, which the manager reads", func() {
		objs := render("-f", kubeRayValues)
		cm := typed[corev1.ConfigMap](objs.get("ConfigMap", "raygate-configuration"))
		d := objs.deployment()
		args := managerArgs(objs)
		Expect(args).To(ContainElement("--config=/etc/raygate/config/config.yaml"))
		Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("ConfigMap.Name", "raygate-configuration")))
		Expect(d.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(And(HaveField("MountPath", "/etc/raygate/config"), HaveField("ReadOnly", true))))
		Expect(d.Spec.Template.Annotations).To(HaveKey("checksum/configuration"))

		// The manager, started with the chart's arguments and the ConfigMap's file, takes
		// the pod defaults from it; no flag of the chart covers a field of the file.
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cm.Data["config.yaml"]), 0o600)).To(Succeed())
		opts := app.DefaultOptions()
		fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
		opts.BindFlags(fs)
		local := slices.Clone(args)
		local[slices.Index(local, "--config=/etc/raygate/config/config.yaml")] = "--config=" + filepath.Join(dir, "config.yaml")
		Expect(fs.Parse(local)).To(Succeed())
		_, err := opts.Resolve(fs)
		Expect(err).NotTo(HaveOccurred())
		Expect(opts.Validate()).To(Succeed())
		Expect(opts.PodDefaults.HeadSidecars).To(ConsistOf(HaveField("Name", "fluentbit")))
		Expect(opts.PodDefaults.WorkerSidecars).To(ConsistOf(HaveField("Image", "fluent/fluent-bit:1.9")))
		Expect(opts.PodDefaults.Env).To(Equal([]corev1.EnvVar{{Name: "RAY_enable_open_telemetry", Value: "true"}}))
		Expect(opts.PodDefaults.Labels).To(Equal(map[string]string{"app.kubernetes.io/managed-by": "kuberay"}))
		Expect(opts.PodDefaults.Annotations).To(Equal(map[string]string{"prometheus.io/scrape": "true"}))
		Expect(opts.KubeAPIQPS).To(BeEquivalentTo(100))

		// A change of the configuration rolls the pods; none is rendered without it.
		other := render("-f", kubeRayValues, "--set", "configuration.defaultPodLabels.team=ml").deployment()
		Expect(other.Spec.Template.Annotations["checksum/configuration"]).NotTo(Equal(d.Spec.Template.Annotations["checksum/configuration"]))
		Expect(render().get("ConfigMap", "raygate-configuration")).To(BeNil())
		Expect(managerArgs(render())).NotTo(ContainElement(HavePrefix("--config")))
	})

	It("writes the log file KubeRay's logging values would, on a volume of its own", func() {
		d := render("-f", kubeRayValues, "--set", "log.file.sizeLimit=2Gi").deployment()
		Expect(managerArgs(render("-f", kubeRayValues))).To(ContainElements("--log-file=/tmp/kuberay-logs/operator.log", "--log-file-format=json"))
		Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(And(HaveField("Name", "logs"), HaveField("EmptyDir.SizeLimit.String()", "2Gi"))))
		Expect(d.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(And(HaveField("Name", "logs"), HaveField("MountPath", "/tmp/kuberay-logs"))))
		Expect(render().deployment().Spec.Template.Spec.Volumes).NotTo(ContainElement(HaveField("Name", "logs")))
	})

	It("grants get and update on pods/proxy, and passes --dashboard-api-server-proxy, only with dashboardAPIServerProxy", func() {
		none := render()
		Expect(none.get("ClusterRole", dashboardProxyRole)).To(BeNil())
		expectNoRuleOn(none, "pods/proxy")
		Expect(managerArgs(none)).NotTo(ContainElement("--dashboard-api-server-proxy"))

		on := render("--set", "dashboardAPIServerProxy=true")
		Expect(typed[rbacv1.ClusterRole](on.get("ClusterRole", dashboardProxyRole)).Rules).To(Equal([]rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{"get", "update"}},
		}))
		expectBoundToOperator(on, "ClusterRoleBinding", dashboardProxyRole, "ClusterRole")
		Expect(managerArgs(on)).To(ContainElement("--dashboard-api-server-proxy"))
		expectManagerAccepts(on)

		scoped := render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml"), "--set", "dashboardAPIServerProxy=true")
		Expect(scoped.get("ClusterRoleBinding", dashboardProxyRole)).To(BeNil(), "namespace-scoped: no proxy rights outside the watched namespaces")
		var bound []string
		for _, u := range scoped.ofKind("RoleBinding") {
			if rb := typed[rbacv1.RoleBinding](u); rb.RoleRef.Name == dashboardProxyRole {
				Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "raygate", Namespace: releaseNS}}))
				bound = append(bound, rb.Namespace)
			}
		}
		Expect(bound).To(ConsistOf("team-a", "team-b"))
	})
})

// expectNoRuleOn: no Role or ClusterRole of objs names the resource.
func expectNoRuleOn(objs objects, resource string) {
	GinkgoHelper()
	for _, kind := range []string{"ClusterRole", "Role"} {
		for name, rules := range objs.rules(kind) {
			for _, r := range rules {
				Expect(r.Resources).NotTo(ContainElement(resource), "%s %s", kind, name)
			}
		}
	}
}

// mustHelmBin runs the given helm binary and returns stdout.
func mustHelmBin(bin string, args ...string) string {
	GinkgoHelper()
	out, err := runHelmBin(bin, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// The dashboards through the API server's proxy, with the chart's RBAC applied to a real API
// server and the requests sent as the operator's ServiceAccount. The API server refuses to
// proxy to a pod whose IP is not a global unicast address, and tests may only use loopback
// addresses, so the pod here has one: "address not allowed" (HTTP 400) then means the request
// was authenticated, authorized and led to the pod; without the value's rule it is forbidden.
var _ = Describe("dashboards through the API server's proxy", func() {
	const sa = "system:serviceaccount:" + releaseNS + ":raygate"

	applyRBAC := func(ctx context.Context, objs objects) {
		GinkgoHelper()
		var rbac objects
		for _, u := range objs {
			switch u.GetKind() {
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
				rbac = append(rbac, u)
			}
		}
		_, stderr, err := env.Kubectl(ctx, rbac.yaml(), "apply", "--server-side", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		DeferCleanup(func(ctx context.Context) {
			// The second rendering's cleanup finds the objects both share gone already.
			_, stderr, err := env.Kubectl(ctx, rbac.yaml(), "delete", "--wait", "--ignore-not-found", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
		})
	}

	It("reaches the head pod with the chart's rule, and is forbidden without it", func(ctx context.Context) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "proxied-head", Namespace: "team-a"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}},
		}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, pod))).To(Succeed()) })
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.2", PodIPs: []corev1.PodIP{{IP: "127.0.0.2"}}}
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())

		asOperator := rest.CopyConfig(env.Config)
		asOperator.Impersonate = rest.ImpersonationConfig{UserName: sa}
		proxy, httpClient, err := dashboard.NewAPIServerProxy(asOperator)
		Expect(err).NotTo(HaveOccurred())
		head := dashboard.Head{Cluster: types.NamespacedName{Namespace: "team-a", Name: "proxied"}, PodName: pod.Name, Port: 8265, ServePort: 8000}
		base, err := proxy.DashboardURL(ctx, head)
		Expect(err).NotTo(HaveOccurred())
		c := &dashboard.HTTPClient{BaseURL: base, HTTP: httpClient, Token: "ray-token"}
		status := func(err error) int {
			var de *dashboard.Error
			Expect(errors.As(err, &de)).To(BeTrue(), "%v", err)
			return de.StatusCode
		}

		applyRBAC(ctx, render())
		_, err = c.GetServeDetails(ctx)
		Expect(status(err)).To(Equal(http.StatusForbidden), "the default rules hold nothing on pods/proxy: %v", err)

		applyRBAC(ctx, render("--set", "dashboardAPIServerProxy=true"))
		Eventually(func() int { _, err := c.GetServeDetails(ctx); return status(err) }).Should(Equal(http.StatusBadRequest))
		_, err = c.GetServeDetails(ctx)
		Expect(err.Error()).To(ContainSubstring("address not allowed"))
		Expect(status(c.DeployApplications(ctx, []byte(`{"applications":[]}`)))).To(Equal(http.StatusBadRequest), "PUT is update on pods/proxy")
		serve, err := dashboard.ProxyURL(ctx, proxy, head)
		Expect(err).NotTo(HaveOccurred())
		Expect(status((&dashboard.HTTPClient{BaseURL: serve, HTTP: httpClient}).CheckProxyHealth(ctx))).To(Equal(http.StatusBadRequest))
	})
})
