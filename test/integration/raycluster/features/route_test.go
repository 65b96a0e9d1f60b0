package features

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

// routeIn reads a Route from a control plane; nil when there is none.
func routeIn(ctx context.Context, c client.Client, ns, name string) func() *unstructured.Unstructured {
	return func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(raypod.RouteGVK)
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
		if apierrors.IsNotFound(err) {
			return nil
		}
		Expect(err).NotTo(HaveOccurred())
		return u
	}
}

// Where OpenShift's Route API is served, a cluster's dashboard is exposed by a Route instead
// of an Ingress, as under KubeRay. The API server here serves OpenShift's own Route CRD
// (routes.crd.yaml of github.com/openshift/api, `hack/tools.sh path openshift-route-crd`):
// its structural schema prunes, defaults and validates what raygate writes as on an
// OpenShift cluster whose Routes are a CRD. No router runs: nothing assigns spec.host or
// writes the status. The control plane is the spec's own, so the suite's other specs keep a
// plain API server.
var _ = Describe("the dashboard Route on OpenShift", Ordered, func() {
	var (
		openshift *controlplane.Env
		m         *framework.Manager
	)

	BeforeAll(func() {
		var err error
		openshift, err = controlplane.Start(controlplane.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(openshift.Stop)
		dir, err := tools.Path("openshift-route-crd")
		Expect(err).NotTo(HaveOccurred())
		crds, err := envtest.InstallCRDs(openshift.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(crds).To(HaveLen(1), "OpenShift's Route CRD")
		opts := rctest.ManagerOptions()
		// The router's annotations the admin lets tenants set on their Routes.
		opts.AllowedIngressAnnotations = append(opts.AllowedIngressAnnotations, "haproxy.router.openshift.io/*")
		m = harness.StartManagerIn(openshift, opts)    // it discovers the Route API at start
		DeferCleanup(func() error { return m.Stop() }) // m may be replaced by a spec
	})

	namespace := func(ctx context.Context) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "route-"}}
		Expect(openshift.Client.Create(ctx, ns)).To(Succeed())
		return ns.Name
	}
	get := func(ctx context.Context, ns, name string) *rayv1.RayCluster {
		rc := &rayv1.RayCluster{}
		Expect(openshift.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(Succeed())
		return rc
	}
	update := func(ctx context.Context, ns, name string, change func(*rayv1.RayCluster)) {
		GinkgoHelper()
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rc := get(ctx, ns, name)
			change(rc)
			return openshift.Client.Update(ctx, rc)
		})).To(Succeed())
	}
	eventsOf := func(ctx context.Context, ns, cluster string) func() []string {
		return func() []string {
			var list eventsv1.EventList
			Expect(openshift.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, e := range list.Items {
				if e.Regarding.Kind == rayv1.RayClusterKind && e.Regarding.Name == cluster {
					out = append(out, e.Type+" "+e.Reason+": "+e.Note)
				}
			}
			return out
		}
	}
	ingressIn := func(ctx context.Context, ns, name string) func() *networkingv1.Ingress {
		return func() *networkingv1.Ingress {
			ing := &networkingv1.Ingress{}
			err := openshift.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ing)
			if apierrors.IsNotFound(err) {
				return nil
			}
			Expect(err).NotTo(HaveOccurred())
			return ing
		}
	}

	It("is created as KubeRay builds it, owned by the cluster, follows its annotations and goes with enableIngress", func(ctx context.Context) {
		ns := namespace(ctx)
		rc := builders.RayCluster("dash", ns).
			Annotation("kubernetes.io/ingress.class", "openshift-default").
			Annotation("haproxy.router.openshift.io/timeout", "5m").
			Annotation("router.openshift.io/cookie_name", "not-listed").Obj()
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray.example.com")} // an Ingress rule's: not a Route's
		Expect(openshift.Client.Create(ctx, rc)).To(Succeed())
		rc = get(ctx, ns, "dash")

		route := routeIn(ctx, openshift.Client, ns, "dash-head-route")
		Eventually(route).ShouldNot(BeNil())
		r := route()
		Expect(metav1.IsControlledBy(r, rc)).To(BeTrue())
		Expect(r.GetLabels()).To(And(HaveKeyWithValue(rayv1.ClusterLabelKey, "dash"), HaveKeyWithValue(rayv1.IdentifierLabelKey, "dash-head"),
			HaveKeyWithValue(rayv1.KubernetesApplicationNameLabelKey, rayv1.ApplicationName),
			HaveKeyWithValue(rayv1.KubernetesCreatedByLabelKey, rayv1.ComponentName)))
		Expect(r.GetAnnotations()).To(HaveKeyWithValue("haproxy.router.openshift.io/timeout", "5m"))
		Expect(r.GetAnnotations()).NotTo(HaveKey("kubernetes.io/ingress.class"))
		Expect(r.GetAnnotations()).NotTo(HaveKey("router.openshift.io/cookie_name"), "only the annotations the admin lists are copied")
		Expect(r.Object["spec"]).To(Equal(map[string]any{
			"to":             map[string]any{"kind": "Service", "name": "dash-head-svc", "weight": int64(100)},
			"port":           map[string]any{"targetPort": int64(8265)},
			"wildcardPolicy": "None",
		}), "no host: the router assigns one")
		Eventually(eventsOf(ctx, ns, "dash")).Should(ContainElement("Normal CreatedRoute: Created route dash-head-route"))
		Eventually(eventsOf(ctx, ns, "dash")).Should(ContainElement(And(HavePrefix("Warning IngressOptionsNotApplied: "), ContainSubstring("(host set)"))))
		Expect(ingressIn(ctx, ns, "dash-head-ingress")()).To(BeNil(), "a Route, not an Ingress")

		By("the host the router assigned, the TLS an admin added and the router's status stay; an annotation changed on the cluster follows")
		host := "dash-head-route-" + ns + ".apps.example.com"
		Expect(unstructured.SetNestedField(r.Object, host, "spec", "host")).To(Succeed())
		tls := map[string]any{"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}
		Expect(unstructured.SetNestedField(r.Object, tls, "spec", "tls")).To(Succeed())
		Expect(openshift.Client.Update(ctx, r)).To(Succeed())
		admitted := []any{map[string]any{"host": host, "routerName": "default", "wildcardPolicy": "None",
			"conditions": []any{map[string]any{"type": "Admitted", "status": "True"}}}}
		Expect(unstructured.SetNestedSlice(r.Object, admitted, "status", "ingress")).To(Succeed())
		Expect(openshift.Client.Status().Update(ctx, r)).To(Succeed())
		update(ctx, ns, "dash", func(rc *rayv1.RayCluster) { rc.Annotations["haproxy.router.openshift.io/timeout"] = "10m" })
		Eventually(func() string { return route().GetAnnotations()["haproxy.router.openshift.io/timeout"] }).Should(Equal("10m"))
		r = route()
		Expect(r.Object["spec"]).To(HaveKeyWithValue("host", host))
		Expect(r.Object["spec"]).To(HaveKeyWithValue("tls", tls))
		Expect(r.Object["status"]).To(HaveKeyWithValue("ingress", admitted))
		Eventually(eventsOf(ctx, ns, "dash")).Should(ContainElement("Normal UpdatedRoute: Updated route dash-head-route"))

		By("enableIngress turned off deletes it")
		update(ctx, ns, "dash", func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(false) })
		Eventually(route).Should(BeNil())
		Eventually(eventsOf(ctx, ns, "dash")).Should(ContainElement("Normal DeletedRoute: Deleted route dash-head-route: enableIngress is no longer true"))
	})

	It("round-trips through the Route CRD's schema: nothing pruned, nothing defaulted, no update needed", func(ctx context.Context) {
		ns := namespace(ctx)
		policy := raypod.IngressPolicy{Classes: []string{"*/*"}, Annotations: []string{"haproxy.router.openshift.io/*"}, RouteInstead: true}
		dashboardOn9265 := builders.RayCluster("port", ns).Obj()
		head := &dashboardOn9265.Spec.HeadGroupSpec.Template.Spec.Containers[0]
		head.Ports = append(head.Ports, corev1.ContainerPort{Name: "dashboard", ContainerPort: 9265})
		for _, rc := range []*rayv1.RayCluster{
			builders.RayCluster("plain", ns).Obj(),
			builders.RayCluster("annotated", ns).Annotation("haproxy.router.openshift.io/timeout", "5m").
				Annotation("haproxy.router.openshift.io/ip_allowlist", "192.0.2.0/24").Obj(),
			dashboardOn9265,
			builders.RayCluster("a-cluster-name-long-enough-to-be-shortened-for-the-host", ns).Obj(),
		} {
			rc.UID = "8a3c1e4e-0000-4000-8000-000000000001" // the owner reference's; a dry run never stores it
			desired := raypod.HeadRoute(rc, policy)
			stored := desired.DeepCopy()
			// Strict: a field the schema does not know is an error, not silently pruned.
			Expect(openshift.Client.Create(ctx, stored, client.DryRunAll, client.FieldValidation("Strict"))).To(Succeed(), rc.Name)
			Expect(notReadBack(desired.Object, stored.Object, "")).To(BeEmpty(), "%s: what raygate writes is what it reads back", rc.Name)
			Expect(stored.Object["spec"]).To(Equal(desired.Object["spec"]), "%s: the schema defaults nothing raygate leaves out", rc.Name)
			Expect(raypod.WithRouteFields(stored, desired)).To(BeNil(), "%s: the Route read back needs no update", rc.Name)
		}
	})

	It("replaces an Ingress the cluster owns (made before the Route API was served)", func(ctx context.Context) {
		ns := namespace(ctx)
		rc := builders.RayCluster("old", ns).Obj()
		Expect(openshift.Client.Create(ctx, rc)).To(Succeed())
		rc = get(ctx, ns, "old")
		stale := raypod.HeadIngress(rc, raypod.IngressPolicy{})
		Expect(openshift.Client.Create(ctx, stale)).To(Succeed())

		update(ctx, ns, "old", func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true) })
		Eventually(routeIn(ctx, openshift.Client, ns, "old-head-route")).ShouldNot(BeNil())
		Eventually(ingressIn(ctx, ns, "old-head-ingress")).Should(BeNil())
		Eventually(eventsOf(ctx, ns, "old")).Should(ContainElement(
			"Normal DeletedIngress: Deleted ingress old-head-ingress: the dashboard is exposed by an OpenShift Route"))
	})

	It("leaves a Route of that name the cluster does not own alone, and says so", func(ctx context.Context) {
		ns := namespace(ctx)
		foreign := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"to": map[string]any{"kind": "Service", "name": "mine"}},
		}}
		foreign.SetGroupVersionKind(raypod.RouteGVK)
		foreign.SetNamespace(ns)
		foreign.SetName("taken-head-route")
		Expect(openshift.Client.Create(ctx, foreign)).To(Succeed())

		rc := builders.RayCluster("taken", ns).Obj()
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		Expect(openshift.Client.Create(ctx, rc)).To(Succeed())
		Eventually(func() string {
			c := meta.FindStatusCondition(get(ctx, ns, "taken").Status.Conditions, string(rayv1.OwnershipConflict))
			if c == nil {
				return ""
			}
			return c.Message
		}).Should(ContainSubstring("taken-head-route"))
		name, _, _ := unstructured.NestedString(routeIn(ctx, openshift.Client, ns, "taken-head-route")().Object, "spec", "to", "name")
		Expect(name).To(Equal("mine"))
	})

	// No webhooks here: as for the Ingress, the controller's own check is all that stands
	// between a cluster the admin's policy refuses (stored before the policy changed) and a
	// Route made with raygate's rights. Last: it restarts the manager with a narrower policy.
	It("is deleted, and none made, where the admin's Ingress policy allows no exposure in the namespace", func(ctx context.Context) {
		ns := namespace(ctx)
		rc := builders.RayCluster("before", ns).Obj()
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		Expect(openshift.Client.Create(ctx, rc)).To(Succeed())
		Eventually(routeIn(ctx, openshift.Client, ns, "before-head-route")).ShouldNot(BeNil())

		By("the admin allows dashboards in another namespace only (raygate restarted with it)")
		Expect(m.Stop()).To(Succeed())
		opts := rctest.ManagerOptions()
		opts.AllowedIngressClasses = []string{"elsewhere/*"}
		m = harness.StartManagerIn(openshift, opts)
		const notAllowed = "the admin's Ingress policy allows no dashboard exposure in this namespace (--allowed-ingress-classes)"
		Eventually(routeIn(ctx, openshift.Client, ns, "before-head-route")).Should(BeNil())
		Eventually(eventsOf(ctx, ns, "before")).Should(ContainElement("Normal DeletedRoute: Deleted route before-head-route: " + notAllowed))

		rc = builders.RayCluster("after", ns).Obj()
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		Expect(openshift.Client.Create(ctx, rc)).To(Succeed())
		Eventually(eventsOf(ctx, ns, "after")).Should(ContainElement("Warning IngressNotAllowed: Not creating route after-head-route: " + notAllowed))
		Consistently(routeIn(ctx, openshift.Client, ns, "after-head-route"), time.Second).Should(BeNil())
	})
})

// notReadBack lists the paths of want (an object raygate writes) that got lacks or holds
// with another value: fields the API server pruned or changed. What got adds (uid,
// managedFields, defaults elsewhere) is not compared here.
func notReadBack(want, got any, path string) []string {
	wm, isMap := want.(map[string]any)
	if !isMap {
		if !equality.Semantic.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: wrote %v, read %v", path, want, got)}
		}
		return nil
	}
	gm, _ := got.(map[string]any)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(wm)) {
		g, ok := gm[k]
		if !ok {
			out = append(out, path+"."+k+": pruned")
			continue
		}
		out = append(out, notReadBack(wm[k], g, path+"."+k)...)
	}
	return out
}

// Without the Route API the dashboard gets an Ingress (ingress_historyserver_test.go) and
// raygate asks nothing about Routes.
var _ = Describe("without OpenShift's Route API", func() {
	It("exposes the dashboard with an Ingress and makes no Route", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("plain", ns).Annotation("kubernetes.io/ingress.class", "nginx").Obj() // the class the suite's policy allows
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		Eventually(ingress(ctx, ns, "plain-head-ingress")).ShouldNot(BeNil())
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(raypod.RouteGVK.GroupVersion().WithKind("RouteList"))
		err := k8s.List(ctx, list, client.InNamespace(ns))
		Expect(meta.IsNoMatchError(err)).To(BeTrue(), "the API server serves no Routes: %v", err)
	})
})
