package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/app"
)

// ServiceAccount is who a manager is to the API server in the suites: the ServiceAccount of
// a chart release, impersonated by the control plane's admin, so that the API server's RBAC
// authorizer decides every request as it would in a cluster.
type ServiceAccount struct {
	Namespace, Name string
}

// ChartServiceAccount is the ServiceAccount of the chart's documented release: raygate in
// raygate-system.
func ChartServiceAccount() ServiceAccount {
	return ServiceAccount{Namespace: "raygate-system", Name: "raygate"}
}

// User is the ServiceAccount's user name, as the API server authenticates its token.
func (sa ServiceAccount) User() string { return serviceaccount.MakeUsername(sa.Namespace, sa.Name) }

// Groups are the groups the API server puts a ServiceAccount's token in.
func (sa ServiceAccount) Groups() []string {
	return append(serviceaccount.MakeGroupNames(sa.Namespace), user.AllAuthenticated)
}

func (sa ServiceAccount) String() string { return sa.User() }

// Config is a copy of the admin's config that impersonates the ServiceAccount.
func (sa ServiceAccount) Config(admin *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sa.User(), Groups: sa.Groups()}
	return cfg
}

// WriteKubeconfig writes a kubeconfig for processes (the operator's binary) that talks to the
// API server as the ServiceAccount, through the admin's impersonation. Private (0600): it
// holds the admin's client key.
func (sa ServiceAccount) WriteKubeconfig(admin *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos[sa.Name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: admin.CertData, ClientKeyData: admin.KeyData, Token: admin.BearerToken,
		Impersonate: sa.User(), ImpersonateGroups: sa.Groups(),
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: sa.Name, Namespace: sa.Namespace}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// RBACOptions are the chart values that change the RBAC it installs, with the manager
// options that go with them.
type RBACOptions struct {
	// WatchNamespaces is the chart's watchNamespaces (the manager's --watch-namespaces):
	// set, the rules are bound per namespace.
	WatchNamespaces []string
	// TokenAuthentication is tokenAuthentication.enabled (--token-authentication).
	TokenAuthentication bool
	// LeaderElectionNamespace is where the leader-election Role goes: the release namespace,
	// where the chart's operator elects its leader. "": the ServiceAccount's namespace.
	LeaderElectionNamespace string
	// EditRules, when set, changes the generated ClusterRole's rules before they are bound:
	// the harness's own test takes one away to see the manager refused.
	EditRules func([]rbacv1.PolicyRule) []rbacv1.PolicyRule
}

// RBACOptionsFor are the chart values a manager with these options is installed with.
func RBACOptionsFor(o app.Options) RBACOptions {
	return RBACOptions{
		WatchNamespaces:         o.WatchNamespaces,
		TokenAuthentication:     o.TokenAuthentication,
		LeaderElectionNamespace: o.LeaderElectionNS,
	}
}

// GeneratedRBAC are the rules the chart binds, from the files it is kept equal to:
// config/rbac/role.yaml (`make manifests`, from the +kubebuilder:rbac markers; the chart's
// generated/role.yaml is a copy) and the hand-written leader-election and metrics-auth
// roles of config/rbac (the install suite checks them against the chart's templates).
type GeneratedRBAC struct {
	// Cluster are the rules of the generated ClusterRole.
	Cluster []rbacv1.PolicyRule
	// Own are the rules of generated Roles (markers with namespace=...): the chart binds
	// them in the release namespace.
	Own []rbacv1.PolicyRule
	// LeaderElection are the rules of the leader-election Role.
	LeaderElection []rbacv1.PolicyRule
	// MetricsAuth are the rules that authenticate and authorize scrapers of the HTTPS
	// metrics endpoint (chart values metrics.enabled and metrics.secure, on by default).
	MetricsAuth []rbacv1.PolicyRule
}

// tokenSecretsRules are the rules of charts/raygate/templates/rbac-token-secrets.yaml,
// granted with tokenAuthentication.enabled: a cluster's Ray auth token Secret, created and
// read by name.
var tokenSecretsRules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "get"}}}

// ReadGeneratedRBAC reads the rules from a checkout's config/rbac directory.
func ReadGeneratedRBAC(dir string) (GeneratedRBAC, error) {
	var gen GeneratedRBAC
	for file, into := range map[string]func(kind string, rules []rbacv1.PolicyRule){
		"role.yaml": func(kind string, rules []rbacv1.PolicyRule) {
			if kind == "Role" {
				gen.Own = append(gen.Own, rules...)
			} else {
				gen.Cluster = append(gen.Cluster, rules...)
			}
		},
		"leader_election_role.yaml": func(_ string, rules []rbacv1.PolicyRule) { gen.LeaderElection = append(gen.LeaderElection, rules...) },
		"metrics_auth_role.yaml":    func(_ string, rules []rbacv1.PolicyRule) { gen.MetricsAuth = append(gen.MetricsAuth, rules...) },
	} {
		if err := readRoles(filepath.Join(dir, file), into); err != nil {
			return GeneratedRBAC{}, err
		}
	}
	if len(gen.Cluster) == 0 {
		return GeneratedRBAC{}, fmt.Errorf("%s holds no ClusterRole rules: run `make manifests`", filepath.Join(dir, "role.yaml"))
	}
	return gen, nil
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// readRoles calls into with the kind and rules of every Role and ClusterRole in a YAML file.
func readRoles(path string, into func(kind string, rules []rbacv1.PolicyRule)) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, doc := range docSeparator.Split(string(b), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var role struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if role.Kind == "Role" || role.Kind == "ClusterRole" {
			into(role.Kind, role.Rules)
		}
	}
	return nil
}

// RBACLabel marks the RBAC objects the harness binds to a ServiceAccount, so a new grant
// removes what an earlier one bound and this one does not.
const RBACLabel = "test.raygate.ray.io/serviceaccount"

// ChartRBAC lays the rules out as the chart does for a release whose ServiceAccount is sa,
// installed with o (charts/raygate/templates/rbac*.yaml and _rbac.tpl):
//   - cluster-wide: a ClusterRole with the generated rules, bound cluster-wide;
//   - namespace-scoped (WatchNamespaces): a Role with every namespaced rule in each watched
//     namespace, and a ClusterRole with only the rules on cluster-scoped resources
//     (namespaced says which are; the chart's list is checked against the API server);
//   - always: the generated Roles and the leader-election Role in the release namespace,
//     and the metrics-auth ClusterRole;
//   - with TokenAuthentication: the token Secrets ClusterRole, bound cluster-wide or in each
//     watched namespace.
//
// Roles and bindings are returned in namespaces that may not exist yet.
func ChartRBAC(sa ServiceAccount, gen GeneratedRBAC, o RBACOptions, namespaced func(group, resource string) bool) []client.Object {
	b := rbacBuilder{sa: sa, prefix: "raygate-test-" + sa.Namespace + "-" + sa.Name}
	leaderNS := o.LeaderElectionNamespace
	if leaderNS == "" {
		leaderNS = sa.Namespace
	}
	cluster := gen.Cluster
	if o.EditRules != nil {
		cluster = o.EditRules(slices.Clone(cluster))
	}
	if len(o.WatchNamespaces) == 0 {
		b.clusterRole("manager", cluster)
	} else {
		local, scoped := splitRules(cluster, namespaced)
		for _, ns := range o.WatchNamespaces {
			b.role("manager", ns, local)
		}
		b.clusterRole("manager-cluster-scoped", scoped)
	}
	b.role("manager-local", sa.Namespace, gen.Own)
	b.role("leader-election", leaderNS, gen.LeaderElection)
	b.clusterRole("metrics-auth", gen.MetricsAuth)
	if o.TokenAuthentication {
		b.objs = append(b.objs, &rbacv1.ClusterRole{ObjectMeta: b.meta("token-secrets", ""), Rules: tokenSecretsRules})
		for _, ns := range o.WatchNamespaces {
			b.bindClusterRole("token-secrets", ns)
		}
		if len(o.WatchNamespaces) == 0 {
			b.bindClusterRole("token-secrets", "")
		}
	}
	return b.objs
}

// splitRules splits each rule per API group into what a Role can grant and rules on
// cluster-scoped resources; subresources follow their resource, non-resource URLs are
// cluster-scoped.
func splitRules(rules []rbacv1.PolicyRule, namespaced func(group, resource string) bool) (local, scoped []rbacv1.PolicyRule) {
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			scoped = append(scoped, r)
			continue
		}
		for _, g := range r.APIGroups {
			var mine, theirs []string
			for _, res := range r.Resources {
				if namespaced(g, strings.SplitN(res, "/", 2)[0]) {
					mine = append(mine, res)
				} else {
					theirs = append(theirs, res)
				}
			}
			if len(mine) > 0 {
				local = append(local, withResources(r, g, mine))
			}
			for _, res := range theirs {
				scoped = append(scoped, withResources(r, g, []string{res}))
			}
		}
	}
	return local, scoped
}

func withResources(r rbacv1.PolicyRule, group string, resources []string) rbacv1.PolicyRule {
	out := *r.DeepCopy()
	out.APIGroups, out.Resources = []string{group}, resources
	return out
}

type rbacBuilder struct {
	sa     ServiceAccount
	prefix string
	objs   []client.Object
}

func (b *rbacBuilder) meta(name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: b.prefix + "-" + name, Namespace: ns, Labels: map[string]string{RBACLabel: b.sa.Namespace + "." + b.sa.Name}}
}

func (b *rbacBuilder) subjects() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: b.sa.Name, Namespace: b.sa.Namespace}}
}

// clusterRole adds a ClusterRole and binds it cluster-wide; nothing without rules.
func (b *rbacBuilder) clusterRole(name string, rules []rbacv1.PolicyRule) {
	if len(rules) == 0 {
		return
	}
	b.objs = append(b.objs, &rbacv1.ClusterRole{ObjectMeta: b.meta(name, ""), Rules: rules})
	b.bindClusterRole(name, "")
}

// bindClusterRole binds a ClusterRole cluster-wide (ns "") or in one namespace.
func (b *rbacBuilder) bindClusterRole(name, ns string) {
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.prefix + "-" + name}
	if ns == "" {
		b.objs = append(b.objs, &rbacv1.ClusterRoleBinding{ObjectMeta: b.meta(name, ""), RoleRef: ref, Subjects: b.subjects()})
		return
	}
	b.objs = append(b.objs, &rbacv1.RoleBinding{ObjectMeta: b.meta(name, ns), RoleRef: ref, Subjects: b.subjects()})
}

// role adds a Role in ns and binds it there; nothing without rules.
func (b *rbacBuilder) role(name, ns string, rules []rbacv1.PolicyRule) {
	if len(rules) == 0 {
		return
	}
	b.objs = append(b.objs,
		&rbacv1.Role{ObjectMeta: b.meta(name, ns), Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: b.meta(name, ns), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: b.prefix + "-" + name}, Subjects: b.subjects()})
}
