package install

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/test/builders"
)

// The ClusterRoles of userRoles: for the people who use raygate, never bound to the operator.
const (
	editorRole = "raygate-system-raygate-ray-editor"
	viewerRole = "raygate-system-raygate-ray-viewer"
)

const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// rayResources are the kinds users write: every ray.io kind and UpgradePolicies.
var rayResources = map[string][]string{
	"ray.io":         {"rayclusters", "rayservices", "rayjobs", "raycronjobs"},
	"raygate.ray.io": {"upgradepolicies"},
}

// withoutUserRoles leaves out the user-facing ClusterRoles (of any release), for checks of
// the operator's own rights.
func (o objects) withoutUserRoles() objects {
	return slices.DeleteFunc(slices.Clone(o), func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "ClusterRole" && (strings.HasSuffix(u.GetName(), "-ray-editor") || strings.HasSuffix(u.GetName(), "-ray-viewer"))
	})
}

var _ = Describe("the roles for raygate's users", func() {
	It("render an editor aggregated into admin and edit and a viewer aggregated into view, none bound to the operator", func(ctx context.Context) {
		expectUserRoles := func(objs objects, aggregated bool) {
			GinkgoHelper()
			editor, viewer := objs.get("ClusterRole", editorRole), objs.get("ClusterRole", viewerRole)
			Expect(editor).NotTo(BeNil())
			Expect(viewer).NotTo(BeNil())
			if aggregated {
				Expect(editor.GetLabels()).To(And(HaveKeyWithValue(aggregateToAdmin, "true"), HaveKeyWithValue(aggregateToEdit, "true"), Not(HaveKey(aggregateToView))))
				Expect(viewer.GetLabels()).To(And(HaveKeyWithValue(aggregateToView, "true"), Not(HaveKey(aggregateToEdit)), Not(HaveKey(aggregateToAdmin))))
			} else {
				Expect(editor.GetLabels()).NotTo(Or(HaveKey(aggregateToAdmin), HaveKey(aggregateToEdit)))
				Expect(viewer.GetLabels()).NotTo(HaveKey(aggregateToView))
			}
			editRules, viewRules := typed[rbacv1.ClusterRole](editor).Rules, typed[rbacv1.ClusterRole](viewer).Rules
			for group, resources := range rayResources {
				for _, res := range resources {
					for _, verb := range []string{"create", "update", "patch", "delete", "get", "list", "watch"} {
						Expect(grants(editRules, group, res, verb)).To(BeTrue(), "editor: %s %s.%s", verb, res, group)
					}
					for _, verb := range []string{"get", "list", "watch"} {
						Expect(grants(viewRules, group, res, verb)).To(BeTrue(), "viewer: %s %s.%s", verb, res, group)
					}
					for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
						Expect(grants(viewRules, group, res, verb)).To(BeFalse(), "viewer: %s %s.%s", verb, res, group)
					}
					// Status is the controllers'.
					Expect(grants(editRules, group, res+"/status", "update")).To(BeFalse())
					Expect(grants(editRules, group, res+"/status", "patch")).To(BeFalse())
				}
			}
			for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
				for _, b := range objs.ofKind(kind) {
					Expect(typed[rbacv1.RoleBinding](b).RoleRef.Name).NotTo(BeElementOf(editorRole, viewerRole), "%s %s", kind, b.GetName())
				}
			}
		}

		By("by default, in both modes")
		expectUserRoles(render(), true)
		expectUserRoles(render("-f", filepath.Join(chartDir, "ci", "namespaced-values.yaml")), true)
		By("userRoles.aggregate=false: the roles, to bind by hand")
		expectUserRoles(render("--set", "userRoles.aggregate=false"), false)
		By("userRoles.enabled=false: none")
		off := render("--set", "userRoles.enabled=false")
		Expect(off.get("ClusterRole", editorRole)).To(BeNil())
		Expect(off.get("ClusterRole", viewerRole)).To(BeNil())
		By("the kustomize config, with the same labels (the parity spec compares without labels)")
		out := kustomizeDefault(ctx)
		expectUserRoles(parse(out), true)
	})

	It("let a namespace's editor create a RayCluster there and its viewer only read, and neither touch another namespace", func(ctx context.Context) {
		// The chart's roles, as `helm install` creates them.
		roles := objects{render().get("ClusterRole", editorRole), render().get("ClusterRole", viewerRole)}
		_, stderr, err := env.Kubectl(ctx, roles.yaml(), "apply", "--server-side", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		DeferCleanup(func(ctx context.Context) {
			_, stderr, err := env.Kubectl(ctx, roles.yaml(), "delete", "--ignore-not-found", "--wait", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
		})

		// The API server only creates the aggregated roles; kube-controller-manager's
		// clusterrole-aggregation controller fills their rules from the labelled ones.
		stop, err := env.StartControllers(context.WithoutCancel(ctx), GinkgoWriter, "clusterrole-aggregation-controller")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		aggregated := func(granted bool) {
			GinkgoHelper()
			for role, verb := range map[string]string{"admin": "create", "edit": "create", "view": "list"} {
				Eventually(func(g Gomega) {
					cr := &rbacv1.ClusterRole{}
					g.Expect(harness.Client.Get(ctx, client.ObjectKey{Name: role}, cr)).To(Succeed())
					g.Expect(grants(cr.Rules, "ray.io", "rayclusters", verb)).To(Equal(granted), "%s: %s rayclusters", role, verb)
				}).WithTimeout(time.Minute).Should(Succeed())
			}
		}
		aggregated(true)

		bindings := `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-view, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
`
		_, stderr, err = env.Kubectl(ctx, bindings, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		DeferCleanup(func(ctx context.Context) {
			_, stderr, err := env.Kubectl(ctx, bindings, "delete", "--ignore-not-found", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
		})

		cluster := func(name string) string {
			GinkgoHelper()
			rc := builders.RayCluster(name, "").Obj()
			b, err := json.Marshal(rc)
			Expect(err).NotTo(HaveOccurred())
			return string(b)
		}
		as := func(user string, stdin string, args ...string) (string, string, error) {
			return env.Kubectl(ctx, stdin, append([]string{"--as=" + user}, args...)...)
		}
		DeferCleanup(func(ctx context.Context) {
			_, stderr, err := env.Kubectl(ctx, "", "delete", "raycluster", "by-alice", "-n", "team-a", "--ignore-not-found", "--wait=false")
			Expect(err).NotTo(HaveOccurred(), stderr)
		})

		By("alice, bound to edit in team-a, creates a RayCluster there")
		out, stderr, err := as("alice", cluster("by-alice"), "create", "-n", "team-a", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(Equal("raycluster.ray.io/by-alice created\n"))
		By("but not in team-b")
		_, stderr, err = as("alice", cluster("by-alice"), "create", "-n", "team-b", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`Error from server (Forbidden): error when creating "STDIN": rayclusters.ray.io is forbidden: User "alice" cannot create resource "rayclusters" in API group "ray.io" in the namespace "team-b"` + "\n"))

		By("bob, bound to view in team-a, reads it")
		out, stderr, err = as("bob", "", "get", "rayclusters", "-n", "team-a", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(Equal("raycluster.ray.io/by-alice\n"))
		By("and may not create one")
		_, stderr, err = as("bob", cluster("by-bob"), "create", "-n", "team-a", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`Error from server (Forbidden): error when creating "STDIN": rayclusters.ray.io is forbidden: User "bob" cannot create resource "rayclusters" in API group "ray.io" in the namespace "team-a"` + "\n"))
		By("nor read team-b's")
		_, stderr, err = as("bob", "", "get", "rayclusters", "-n", "team-b")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(Equal(`Error from server (Forbidden): rayclusters.ray.io is forbidden: User "bob" cannot list resource "rayclusters" in API group "ray.io" in the namespace "team-b"` + "\n"))

		By("the other kinds the same way")
		for group, resources := range rayResources {
			for _, res := range resources {
				r := res + "." + group
				Expect(canI(ctx, "alice", access("create", group, res, "team-a"))).To(BeTrue(), r)
				Expect(canI(ctx, "alice", access("delete", group, res, "team-a"))).To(BeTrue(), r)
				Expect(canI(ctx, "alice", access("update", group, res+"/status", "team-a"))).To(BeFalse(), r+": status is the controllers'")
				Expect(canI(ctx, "alice", access("list", group, res, "team-b"))).To(BeFalse(), r)
				Expect(canI(ctx, "bob", access("list", group, res, "team-a"))).To(BeTrue(), r)
				Expect(canI(ctx, "bob", access("create", group, res, "team-a"))).To(BeFalse(), r)
				Expect(canI(ctx, "bob", access("list", group, res, "team-b"))).To(BeFalse(), r)
			}
		}

		By("without the roles (helm uninstall), edit and view grant nothing on Ray objects")
		_, stderr, err = env.Kubectl(ctx, roles.yaml(), "delete", "--wait", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		aggregated(false)
		Expect(canI(ctx, "alice", access("create", "ray.io", "rayclusters", "team-a"))).To(BeFalse())
		Expect(canI(ctx, "bob", access("list", "ray.io", "rayclusters", "team-a"))).To(BeFalse())
	})
})
