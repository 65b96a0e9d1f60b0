package framework

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// rbacEffectiveTimeout bounds the wait for the authorizer to apply new bindings.
const rbacEffectiveTimeout = 30 * time.Second

// GrantChartRBAC gives sa the RBAC the chart installs with o, with the rules read from the
// checkout's config/rbac now (so a new marker counts after `make manifests`, with no test
// edited). It creates the ServiceAccount and the namespaces the objects go in when missing
// (the chart is installed into namespaces that exist), creates or updates the roles and
// bindings, deletes those an earlier grant to sa made that this one does not, and returns
// once the API server's authorizer applies the new bindings. admin must be an admin's
// config.
func GrantChartRBAC(ctx context.Context, admin *rest.Config, sa ServiceAccount, o RBACOptions) error {
	gen, err := ReadGeneratedRBAC(filepath.Join(tools.RepoRoot(), "config", "rbac"))
	if err != nil {
		return err
	}
	namespaced, err := resourceScopes(admin)
	if err != nil {
		return err
	}
	c, err := client.New(admin, client.Options{Scheme: rayscheme.New()})
	if err != nil {
		return err
	}
	objs := ChartRBAC(sa, gen, o, namespaced)
	if err := ensureServiceAccount(ctx, c, sa, objs); err != nil {
		return err
	}
	for _, obj := range objs {
		if err := createOrUpdate(ctx, c, obj); err != nil {
			return fmt.Errorf("granting %s: %w", sa, err)
		}
	}
	if err := deleteStaleRBAC(ctx, c, sa, objs); err != nil {
		return err
	}
	return waitEffective(ctx, c, sa, objs)
}

// resourceScopes answers, from the API server's discovery, whether a resource is
// namespaced; a resource it does not serve counts as namespaced, as the chart counts every
// resource missing from its list of cluster-scoped ones.
func resourceScopes(cfg *rest.Config) (func(group, resource string) bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering the API server's resources: %w", err)
	}
	clusterScoped := sets.New[schema.GroupResource]()
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !r.Namespaced && !strings.Contains(r.Name, "/") {
				clusterScoped.Insert(schema.GroupResource{Group: gv.Group, Resource: r.Name})
			}
		}
	}
	return func(group, resource string) bool {
		return !clusterScoped.Has(schema.GroupResource{Group: group, Resource: resource})
	}, nil
}

// ensureServiceAccount creates the namespaces of sa and of objs, and sa, when missing.
func ensureServiceAccount(ctx context.Context, c client.Client, sa ServiceAccount, objs []client.Object) error {
	namespaces := sets.New(sa.Namespace)
	for _, o := range objs {
		if o.GetNamespace() != "" {
			namespaces.Insert(o.GetNamespace())
		}
	}
	for _, ns := range sets.List(namespaces) {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: sa.Name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s: %w", sa, err)
	}
	return nil
}

// createOrUpdate stores obj as given: created, or its rules, subjects and labels replaced.
// A binding whose role changed is recreated (roleRef is immutable).
func createOrUpdate(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err
	}
	want := obj.DeepCopyObject().(client.Object)
	want.SetResourceVersion(cur.GetResourceVersion())
	if roleRef(cur) != roleRef(want) {
		if err := c.Delete(ctx, cur); err != nil {
			return err
		}
		want.SetResourceVersion("")
		return c.Create(ctx, want)
	}
	return c.Update(ctx, want)
}

func roleRef(obj client.Object) rbacv1.RoleRef {
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		return b.RoleRef
	case *rbacv1.ClusterRoleBinding:
		return b.RoleRef
	}
	return rbacv1.RoleRef{}
}

// deleteStaleRBAC deletes the roles and bindings an earlier grant to sa made that objs do
// not hold.
func deleteStaleRBAC(ctx context.Context, c client.Client, sa ServiceAccount, objs []client.Object) error {
	keep := sets.New[string]()
	for _, o := range objs {
		keep.Insert(rbacKey(o))
	}
	mine := client.MatchingLabels{RBACLabel: sa.Namespace + "." + sa.Name}
	lists := []client.ObjectList{&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}}
	for _, l := range lists {
		if err := c.List(ctx, l, mine); err != nil {
			return err
		}
		var stale []client.Object
		switch l := l.(type) {
		case *rbacv1.ClusterRoleList:
			stale = staleOf(l.Items, keep)
		case *rbacv1.ClusterRoleBindingList:
			stale = staleOf(l.Items, keep)
		case *rbacv1.RoleList:
			stale = staleOf(l.Items, keep)
		case *rbacv1.RoleBindingList:
			stale = staleOf(l.Items, keep)
		}
		for _, o := range stale {
			if err := client.IgnoreNotFound(c.Delete(ctx, o)); err != nil {
				return err
			}
		}
	}
	return nil
}

// staleOf returns the items (a list's Items) whose key keep lacks.
func staleOf[T any, PT interface {
	*T
	client.Object
}](items []T, keep sets.Set[string]) []client.Object {
	var out []client.Object
	for i := range items {
		if o := PT(&items[i]); !keep.Has(rbacKey(o)) {
			out = append(out, o)
		}
	}
	return out
}

func rbacKey(o client.Object) string {
	kind := fmt.Sprintf("%T", o)
	return kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// waitEffective waits until the authorizer allows sa the first rule of every role it was
// just bound to, where it was bound: the RBAC authorizer reads bindings from its own
// informers, a moment after they are stored.
func waitEffective(ctx context.Context, c client.Client, sa ServiceAccount, objs []client.Object) error {
	rules := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch r := o.(type) {
		case *rbacv1.Role:
			rules["Role/"+r.Namespace+"/"+r.Name] = r.Rules
		case *rbacv1.ClusterRole:
			rules["ClusterRole//"+r.Name] = r.Rules
		}
	}
	var checks []authorizationv1.ResourceAttributes
	for _, o := range objs {
		ref, ns := roleRef(o), o.GetNamespace()
		if ref.Name == "" {
			continue
		}
		refNS := ns
		if ref.Kind == "ClusterRole" {
			refNS = ""
		}
		if rs := rules[ref.Kind+"/"+refNS+"/"+ref.Name]; len(rs) > 0 {
			if attrs, ok := firstPermission(rs[0], ns); ok {
				checks = append(checks, attrs)
			}
		}
	}
	for _, attrs := range checks {
		last := errors.New("not asked yet")
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, rbacEffectiveTimeout, true, func(ctx context.Context) (bool, error) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: sa.User(), Groups: sa.Groups(), ResourceAttributes: attrs.DeepCopy(),
			}}
			if err := c.Create(ctx, sar); err != nil {
				last = err
				return false, nil
			}
			last = errors.New(sar.Status.Reason)
			return sar.Status.Allowed, nil
		})
		if err != nil {
			return fmt.Errorf("%s was not allowed to %s %s/%s in %q within %s: %w", sa, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace, rbacEffectiveTimeout, last)
		}
	}
	return nil
}

// firstPermission is one request a rule allows in ns; false for a rule on non-resource
// URLs only.
func firstPermission(r rbacv1.PolicyRule, ns string) (authorizationv1.ResourceAttributes, bool) {
	if len(r.Verbs) == 0 || len(r.APIGroups) == 0 || len(r.Resources) == 0 {
		return authorizationv1.ResourceAttributes{}, false
	}
	res, sub, _ := strings.Cut(r.Resources[0], "/")
	return authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: res, Subresource: sub}, true
}
