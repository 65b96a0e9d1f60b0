package hostile

import (
	"context"
	"maps"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

// ingressClass is the only IngressClass the suite's admin allows (--allowed-ingress-classes
// */tenant-nginx); hosts must be under <namespace>.apps.example.com.
const ingressClass = "tenant-nginx"

// raygate creates the dashboard Ingress with its own rights: a tenant who may not create
// Ingresses must not get one through it beyond what the admin allows (issue 37, item 1).
var _ = Describe("A tenant asking for a dashboard Ingress", func() {
	It("is refused at apply for a foreign class and host and for snippet and auth annotations, and gets an allowed Ingress without them", func(ctx context.Context) {
		ns := newNamespace(ctx, "ingress")
		tenant := "tenant@" + ns
		Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ray-user", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{rayv1.GroupVersion.Group}, Resources: []string{"rayclusters"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch"}}}})).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ray-user", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ray-user"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenant}}})).To(Succeed())
		asTenant := func(obj *rayv1.RayCluster) (string, error) {
			b, err := yaml.Marshal(obj)
			Expect(err).NotTo(HaveOccurred())
			_, stderr, err := env.Kubectl(ctx, string(b), "apply", "--as", tenant, "-f", "-")
			return stderr, err
		}
		out, _, _ := env.Kubectl(ctx, "", "auth", "can-i", "create", "ingresses.networking.k8s.io", "-n", ns, "--as", tenant)
		Expect(strings.TrimSpace(out)).To(Equal("no"), "the tenant must not be able to create Ingresses itself")

		By("a foreign class and host, a configuration snippet and an auth URL: refused, every problem at its path")
		hostile := builders.RayCluster("dash", ns).
			Annotation(raypod.IngressClassAnnotationKey, "public").
			Annotation("nginx.ingress.kubernetes.io/configuration-snippet", "proxy_pass http://127.0.0.1:10250;").
			Annotation("nginx.ingress.kubernetes.io/auth-url", "http://127.0.0.1:9/steal").Obj()
		hostile.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		hostile.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("bank.example.com"),
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"bank.example.com"}, SecretName: "bank-tls"}}}
		stderr, err := asTenant(hostile)
		Expect(err).To(HaveOccurred())
		domain := ns + ".apps.example.com"
		for _, want := range []string{
			`metadata.annotations[kubernetes.io/ingress.class]: Forbidden: IngressClass "public" is not allowed in namespace ` + ns +
				`; allowed: tenant-nginx (the manager's --allowed-ingress-classes, Helm value policy.allowedIngressClasses)`,
			`metadata.annotations[nginx.ingress.kubernetes.io/auth-url]: Forbidden: raygate never copies snippet, authentication, configuration, mirroring or alias annotations`,
			`metadata.annotations[nginx.ingress.kubernetes.io/configuration-snippet]: Forbidden: raygate never copies snippet, authentication, configuration, mirroring or alias annotations`,
			`spec.headGroupSpec.ingressOptions.host: Forbidden: host "bank.example.com" is not allowed in namespace ` + ns +
				`; allowed: ` + domain + ` and names under them (the manager's --allowed-ingress-hosts, Helm value policy.allowedIngressHosts)`,
			`spec.headGroupSpec.ingressOptions.tls[0].hosts[0]: Forbidden: host "bank.example.com" is not allowed`,
		} {
			Expect(stderr).To(ContainSubstring(want))
		}
		var ingresses networkingv1.IngressList
		Expect(k8s.List(ctx, &ingresses, client.InNamespace(ns))).To(Succeed())
		Expect(ingresses.Items).To(BeEmpty())

		By("an allowed class and host: an Ingress with only the annotations the admin lists")
		allowed := builders.RayCluster("dash", ns).
			Annotation(raypod.IngressClassAnnotationKey, ingressClass).
			Annotation("nginx.ingress.kubernetes.io/rewrite-target", "/$1").
			Annotation("alb.ingress.kubernetes.io/group.name", "shared-public").
			Annotation("team.example.com/owner", "alice").Obj()
		allowed.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		allowed.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray." + domain),
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"ray." + domain}, SecretName: "ray-tls"}}}
		stderr, err = asTenant(allowed)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring("Warning: metadata.annotations[alb.ingress.kubernetes.io/group.name] is not copied to the dashboard Ingress"))

		ing := &networkingv1.Ingress{}
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: raypod.HeadIngressName("dash")}, ing)
		}).Should(Succeed())
		Expect(slices.Sorted(maps.Keys(ing.Annotations))).To(Equal([]string{"nginx.ingress.kubernetes.io/rewrite-target", raypod.CopiedAnnotationsKey}))
		Expect(ing.Spec.IngressClassName).To(HaveValue(Equal(ingressClass)))
		Expect(ing.Spec.Rules).To(HaveLen(1))
		Expect(ing.Spec.Rules[0].Host).To(Equal("ray." + domain))
	})
})
