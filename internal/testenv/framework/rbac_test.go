package framework

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/tools"
)

var (
	podsRule       = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create"}}
	mixedCoreRule  = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces", "resourcequotas"}, Verbs: []string{"get", "list", "watch"}}
	statusRule     = rbacv1.PolicyRule{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters/status"}, Verbs: []string{"update"}}
	classRule      = rbacv1.PolicyRule{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gatewayclasses"}, Verbs: []string{"get"}}
	leaseRule      = rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}}
	reviewRule     = rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}
	ownRule        = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}
	testGenerated  = GeneratedRBAC{Cluster: []rbacv1.PolicyRule{podsRule, mixedCoreRule, statusRule, classRule}, LeaderElection: []rbacv1.PolicyRule{leaseRule}, MetricsAuth: []rbacv1.PolicyRule{reviewRule}}
	testAccount    = ServiceAccount{Namespace: "raygate-system", Name: "raygate"}
	clusterScoped  = map[string]bool{"/namespaces": true, "gateway.networking.k8s.io/gatewayclasses": true, "authentication.k8s.io/tokenreviews": true}
	testNamespaced = func(group, resource string) bool { return !clusterScoped[group+"/"+resource] }
)

// layout is what ChartRBAC binds: "Kind namespace/name -> role" per binding and the rules of
// each role.
func layout(objs []client.Object) (bindings []string, rules map[string][]rbacv1.PolicyRule) {
	rules = map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			rules["ClusterRole "+o.Name] = o.Rules
		case *rbacv1.Role:
			rules["Role "+o.Namespace+"/"+o.Name] = o.Rules
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, "ClusterRoleBinding "+o.Name+" -> "+o.RoleRef.Kind+" "+o.RoleRef.Name)
		case *rbacv1.RoleBinding:
			bindings = append(bindings, "RoleBinding "+o.Namespace+"/"+o.Name+" -> "+o.RoleRef.Kind+" "+o.RoleRef.Name)
		}
		if o.GetLabels()[RBACLabel] != "raygate-system.raygate" {
			panic("unlabelled " + o.GetName())
		}
	}
	slices.Sort(bindings)
	return bindings, rules
}

const p = "raygate-test-raygate-system-raygate"

func TestChartRBACClusterWide(t *testing.T) {
	bindings, rules := layout(ChartRBAC(testAccount, testGenerated, RBACOptions{}, testNamespaced))
	wantBindings := []string{
		"ClusterRoleBinding " + p + "-manager -> ClusterRole " + p + "-manager",
		"ClusterRoleBinding " + p + "-metrics-auth -> ClusterRole " + p + "-metrics-auth",
		"RoleBinding raygate-system/" + p + "-leader-election -> Role " + p + "-leader-election",
	}
	if d := cmp.Diff(wantBindings, bindings); d != "" {
		t.Errorf("bindings (-want +got):\n%s", d)
	}
	wantRules := map[string][]rbacv1.PolicyRule{
		"ClusterRole " + p + "-manager":                 testGenerated.Cluster,
		"ClusterRole " + p + "-metrics-auth":            {reviewRule},
		"Role raygate-system/" + p + "-leader-election": {leaseRule},
	}
	if d := cmp.Diff(wantRules, rules); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}
}

func TestChartRBACNamespaceScoped(t *testing.T) {
	gen := testGenerated
	gen.Own = []rbacv1.PolicyRule{ownRule}
	o := RBACOptions{WatchNamespaces: []string{"team-a", "team-b"}, TokenAuthentication: true, LeaderElectionNamespace: "default"}
	bindings, rules := layout(ChartRBAC(testAccount, gen, o, testNamespaced))
	wantBindings := []string{
		"ClusterRoleBinding " + p + "-manager-cluster-scoped -> ClusterRole " + p + "-manager-cluster-scoped",
		"ClusterRoleBinding " + p + "-metrics-auth -> ClusterRole " + p + "-metrics-auth",
		"RoleBinding default/" + p + "-leader-election -> Role " + p + "-leader-election",
		"RoleBinding raygate-system/" + p + "-manager-local -> Role " + p + "-manager-local",
		"RoleBinding team-a/" + p + "-manager -> Role " + p + "-manager",
		"RoleBinding team-a/" + p + "-token-secrets -> ClusterRole " + p + "-token-secrets",
		"RoleBinding team-b/" + p + "-manager -> Role " + p + "-manager",
		"RoleBinding team-b/" + p + "-token-secrets -> ClusterRole " + p + "-token-secrets",
	}
	if d := cmp.Diff(wantBindings, bindings); d != "" {
		t.Errorf("bindings (-want +got):\n%s", d)
	}
	local := []rbacv1.PolicyRule{
		podsRule,
		{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"get", "list", "watch"}},
		statusRule,
	}
	wantRules := map[string][]rbacv1.PolicyRule{
		"Role team-a/" + p + "-manager": local,
		"Role team-b/" + p + "-manager": local,
		"ClusterRole " + p + "-manager-cluster-scoped": {
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			classRule,
		},
		"Role raygate-system/" + p + "-manager-local": {ownRule},
		"Role default/" + p + "-leader-election":      {leaseRule},
		"ClusterRole " + p + "-metrics-auth":          {reviewRule},
		"ClusterRole " + p + "-token-secrets":         tokenSecretsRules,
	}
	if d := cmp.Diff(wantRules, rules); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}
}

func TestChartRBACTokenSecretsClusterWide(t *testing.T) {
	bindings, _ := layout(ChartRBAC(testAccount, testGenerated, RBACOptions{TokenAuthentication: true}, testNamespaced))
	if !slices.Contains(bindings, "ClusterRoleBinding "+p+"-token-secrets -> ClusterRole "+p+"-token-secrets") {
		t.Errorf("token Secrets not bound cluster-wide: %v", bindings)
	}
}

func TestChartRBACEditRules(t *testing.T) {
	o := RBACOptions{EditRules: func(rs []rbacv1.PolicyRule) []rbacv1.PolicyRule { return rs[1:] }}
	_, rules := layout(ChartRBAC(testAccount, testGenerated, o, testNamespaced))
	if d := cmp.Diff(testGenerated.Cluster[1:], rules["ClusterRole "+p+"-manager"]); d != "" {
		t.Errorf("edited rules (-want +got):\n%s", d)
	}
	if len(testGenerated.Cluster) != 4 {
		t.Errorf("EditRules changed the generated rules it was given")
	}
}

// The checkout's files parse: the generated ClusterRole, the leader-election Role (leases)
// and the metrics-auth ClusterRole (tokenreviews).
func TestReadGeneratedRBAC(t *testing.T) {
	gen, err := ReadGeneratedRBAC(filepath.Join(tools.RepoRoot(), "config", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	has := func(rules []rbacv1.PolicyRule, resource string) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, resource) })
	}
	for what, ok := range map[string]bool{
		"generated rules name rayclusters":     has(gen.Cluster, "rayclusters"),
		"leader election names leases":         has(gen.LeaderElection, "leases"),
		"metrics auth names tokenreviews":      has(gen.MetricsAuth, "tokenreviews"),
		"no generated rule names secrets":      !has(gen.Cluster, "secrets"),
		"leader election is not in the others": !has(gen.Cluster, "leases"),
	} {
		if !ok {
			t.Errorf("%s: false", what)
		}
	}
}
