package permissions

import (
	"context"
	"os"
	"os/exec"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/test/builders"
)

// withoutVerb takes verb away from the rules on a resource, as a marker that was never
// written would.
func withoutVerb(group, resource, verb string) func([]rbacv1.PolicyRule) []rbacv1.PolicyRule {
	return func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, r := range rules {
			if !slices.Contains(r.APIGroups, group) || !slices.Contains(r.Resources, resource) {
				out = append(out, r)
				continue
			}
			others := r.DeepCopy()
			others.Resources = slices.DeleteFunc(others.Resources, func(s string) bool { return s == resource })
			if len(others.Resources) > 0 {
				out = append(out, *others)
			}
			mine := r.DeepCopy()
			mine.Resources = []string{resource}
			mine.Verbs = slices.DeleteFunc(mine.Verbs, func(s string) bool { return s == verb })
			if len(mine.Verbs) > 0 {
				out = append(out, *mine)
			}
		}
		return out
	}
}

// withoutServiceCreate is the generated role without `create services`: a RayCluster's head
// Service is then refused.
var withoutServiceCreate = framework.RBACOptions{EditRules: withoutVerb("", "services", "create")}

const missingMarker = `missing: // +kubebuilder:rbac:groups="",resources=services,verbs=create`

// innerRun is set in the environment of the test binary run by the spec "fails the spec ...":
// only then does the spec that leaves a refusal unhandled run.
const innerRun = "RAYGATE_PERMISSIONS_INNER_RUN"

var _ = Describe("a manager missing a rule", func() {
	It("is refused, and the refusal is recorded with the marker that grants it", func(ctx context.Context) {
		sa := framework.ServiceAccount{Namespace: "raygate-system", Name: "raygate-missing-rule"}
		Expect(allowed(ctx, sa, "create", "", "services", "default")).To(BeFalse())
		mgr := harness.StartManagerAs(sa, withoutServiceCreate, framework.ManagerOptions())
		DeferCleanup(mgr.Stop)
		Expect(allowed(ctx, sa, "create", "", "services", "default")).To(BeFalse())
		Expect(allowed(ctx, sa, "delete", "", "services", "default")).To(BeTrue(), "only create was taken away")

		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("refused", ns).Obj())).To(Succeed())
		Eventually(mgr.Refusals.Snapshot).Should(ContainElement(And(
			HaveField("Verb", "create"), HaveField("Group", ""), HaveField("Resource", "services"), HaveField("Namespace", ns),
			HaveField("Message", ContainSubstring(`User "system:serviceaccount:raygate-system:raygate-missing-rule" cannot create resource "services"`)),
		)))
		Expect(mgr.Stop()).To(Succeed())
		report := framework.RefusalReport(mgr.Who, mgr.Refusals.Drain())
		Expect(report).To(ContainSubstring("the manager (system:serviceaccount:raygate-system:raygate-missing-rule)"))
		Expect(report).To(ContainSubstring("create services in namespace " + ns))
		Expect(report).To(ContainSubstring(missingMarker))
	})

	It("fails the spec the refusal happened in, naming the marker", func(ctx context.Context) {
		if os.Getenv(innerRun) != "" {
			Skip("this is the inner run")
		}
		// The same test binary, running only the spec below, which leaves its refusal to the
		// check after each spec.
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=TestPermissions", "-ginkgo.focus=leaves a refusal", "-ginkgo.no-color")
		cmd.Env = append(os.Environ(), innerRun+"=1")
		out, err := cmd.CombinedOutput()
		GinkgoWriter.Printf("inner run:\n%s\n", out)
		Expect(err).To(HaveOccurred(), "the inner run must fail")
		Expect(string(out)).To(MatchRegexp(`\[FAIL\] .*\[AfterEach\] a manager missing a rule leaves a refusal`))
		Expect(string(out)).To(ContainSubstring(missingMarker))
		Expect(string(out)).To(MatchRegexp(`Ran 1 of \d+ Specs`))
	})

	It("leaves a refusal (the inner run of the spec above)", func(ctx context.Context) {
		if os.Getenv(innerRun) == "" {
			Skip("run by the spec above, in a process of its own")
		}
		mgr := harness.StartManagerAs(framework.ServiceAccount{Namespace: "raygate-system", Name: "raygate-missing-rule"}, withoutServiceCreate, framework.ManagerOptions())
		DeferCleanup(mgr.Stop)
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("refused", ns).Obj())).To(Succeed())
		Eventually(func() int { return len(mgr.Refusals.Snapshot()) }).ShouldNot(BeZero())
	})
})

var _ = Describe("the chart's namespace-scoped RBAC", func() {
	It("lets a manager watching one namespace run a cluster there, and grants nothing elsewhere", func(ctx context.Context) {
		sa := framework.ServiceAccount{Namespace: "raygate-system", Name: "raygate-scoped"}
		watched, other := newNamespace(ctx), newNamespace(ctx)
		opts := framework.ManagerOptions()
		opts.WatchNamespaces = []string{watched}
		mgr := harness.StartManagerAs(sa, framework.RBACOptionsFor(opts), opts)
		DeferCleanup(mgr.Stop)

		Expect(k8s.Create(ctx, builders.RayCluster("scoped", watched).Obj())).To(Succeed())
		Eventually(func() rayv1.ClusterState {
			rc := &rayv1.RayCluster{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: watched, Name: "scoped"}, rc)).To(Succeed())
			return rc.Status.State
		}).Should(Equal(rayv1.Ready))
		Expect(mgr.Refusals.Snapshot()).To(BeEmpty())

		Expect(allowed(ctx, sa, "create", "", "pods", watched)).To(BeTrue())
		Expect(allowed(ctx, sa, "create", "", "pods", other)).To(BeFalse(), "pods outside the watched namespace")
		Expect(allowed(ctx, sa, "list", "", "pods", "")).To(BeFalse(), "pods cluster-wide")
		Expect(allowed(ctx, sa, "watch", "", "namespaces", "")).To(BeTrue(), "namespaces are cluster-scoped: granted cluster-wide")
		Expect(allowed(ctx, sa, "get", "", "secrets", watched)).To(BeFalse(), "no Secrets without token authentication")

		By("with token authentication: Secrets by name in the watched namespace only")
		Expect(mgr.Stop()).To(Succeed())
		opts.TokenAuthentication = true
		mgr = harness.StartManagerAs(sa, framework.RBACOptionsFor(opts), opts)
		DeferCleanup(mgr.Stop)
		Expect(allowed(ctx, sa, "get", "", "secrets", watched)).To(BeTrue())
		Expect(allowed(ctx, sa, "list", "", "secrets", watched)).To(BeFalse())
		Expect(allowed(ctx, sa, "get", "", "secrets", other)).To(BeFalse())
	})
})
