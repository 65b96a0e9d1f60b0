package raycluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// A RayCluster's Services, ServiceAccount, Role and RoleBinding have names derived from the
// cluster's, so a tenant (or a GitOps tool) may already have an object of that name. raygate
// only ever updates or deletes an object the cluster controls (its controller reference
// carries the cluster's UID); anything else is reported and left as it is.

// conflict is an object with a name raygate wants that the cluster does not control.
type conflict struct {
	kind, name string
	owner      string // "kind name" of its controller, or "" when it has none
}

func (c conflict) String() string {
	owner := "it has no controller"
	if c.owner != "" {
		owner = "it is controlled by " + c.owner
	}
	return fmt.Sprintf("%s %s exists and is not controlled by this RayCluster (%s)", c.kind, c.name, owner)
}

// conflictOf describes obj as a conflict, or returns false when the cluster controls it.
func conflictOf(p *pass, kind string, obj client.Object) (conflict, bool) {
	if metav1.IsControlledBy(obj, p.object) {
		return conflict{}, false
	}
	c := conflict{kind: kind, name: obj.GetName()}
	if ref := metav1.GetControllerOf(obj); ref != nil {
		c.owner = ref.Kind + " " + ref.Name
	}
	return c, true
}

// conflictMessage is the OwnershipConflict condition's message ("" without conflicts).
func conflictMessage(cs []conflict) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + ". raygate leaves it untouched: delete or rename it, or rename the RayCluster."
}

// getUncached reads an object from the API server: a create that finds the name taken may
// be racing the cache, or the object may be one the cache does not hold (it holds only
// objects raygate labels).
func (r *Reconciler) getUncached(ctx context.Context, k client.ObjectKey, obj client.Object) error {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	return reader.Get(ctx, k, obj)
}

// reportTaken turns a create refused with AlreadyExists into a conflict when the object is
// not the cluster's; nil error means the pass goes on.
func (r *Reconciler) reportTaken(ctx context.Context, p *pass, kind string, desired, existing client.Object) error {
	if err := r.getUncached(ctx, key(desired), existing); err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, desired.GetName(), err)
	}
	if c, foreign := conflictOf(p, kind, existing); foreign {
		p.conflicts = append(p.conflicts, c)
		return nil
	}
	return owned.Relabel(ctx, r.Client, existing) // made by an older raygate: the cache selects on the label
}

// reconcileHeadService creates the head Service or brings the fields raygate sets back to
// the desired values. Fields the API server defaulted or allocated are left alone.
func (r *Reconciler) reconcileHeadService(ctx context.Context, p *pass) error {
	k := key(p.object)
	existing := &corev1.Service{}
	// Read only (mergeService changes a copy): no deep copy of the cached Service.
	err := r.Get(ctx, client.ObjectKey{Namespace: p.cluster.Namespace, Name: raypod.HeadServiceName(p.cluster)}, existing, client.UnsafeDisableDeepCopy)
	if err == nil && r.headServices.agree(k, p.object.ResourceVersion, existing.ResourceVersion) {
		p.headSvc = existing
		return nil
	}
	desired := r.Pods.HeadService(p.cluster)
	switch {
	case apierrors.IsNotFound(err):
		err := r.Create(ctx, desired)
		switch {
		case apierrors.IsAlreadyExists(err):
			return r.reportTaken(ctx, p, "Service", desired, existing)
		case err != nil:
			p.warn(EventFailedService, actionCreate, "Failed to create head service %s: %v", desired.Name, err)
			return fmt.Errorf("creating head service: %w", err)
		}
		p.normal(EventCreatedService, actionCreate, "Created head service %s", desired.Name)
		p.headSvc = desired
		return nil
	case err != nil:
		return err
	}
	if c, foreign := conflictOf(p, "Service", existing); foreign {
		p.conflicts = append(p.conflicts, c)
		return nil
	}
	updated, recreate := mergeService(existing, desired)
	switch {
	case recreate:
		// A Service cannot switch between headless and a cluster IP in place.
		if err := r.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
			p.warn(EventFailedService, actionDelete, "Failed to delete head service %s to recreate it: %v", existing.Name, err)
			return fmt.Errorf("deleting head service: %w", err)
		}
		p.normal(EventDeletedService, actionDelete, "Deleted head service %s to recreate it with a different cluster IP mode", existing.Name)
		return nil
	case updated != nil:
		if err := r.Update(ctx, updated); err != nil {
			p.warn(EventFailedService, actionUpdate, "Failed to update head service %s: %v", existing.Name, err)
			return fmt.Errorf("updating head service: %w", err)
		}
		p.normal(EventUpdatedService, actionUpdate, "Updated head service %s", existing.Name)
		p.headSvc = updated
	default:
		p.headSvc = existing
		r.headServices.remember(k, p.object.ResourceVersion, existing.ResourceVersion)
	}
	return nil
}

// reconcileAutoscalerRBAC gives the autoscaler sidecar its ServiceAccount, Role and
// RoleBinding when in-tree autoscaling is on.
func (r *Reconciler) reconcileAutoscalerRBAC(ctx context.Context, p *pass) error {
	if !rayspec.AutoscalingEnabled(&p.cluster.Spec) {
		return nil
	}
	if sa := raypod.AutoscalerServiceAccount(p.cluster); sa != nil {
		if err := r.ensure(ctx, p, "ServiceAccount", sa, &corev1.ServiceAccount{}, func(existing client.Object) (bool, bool) { return false, false }); err != nil {
			return err
		}
	}
	role := raypod.AutoscalerRole(p.cluster)
	if err := r.ensure(ctx, p, "Role", role, &rbacv1.Role{}, func(existing client.Object) (bool, bool) {
		e := existing.(*rbacv1.Role)
		if equality.Semantic.DeepEqual(e.Rules, role.Rules) {
			return false, false
		}
		e.Rules = role.Rules
		return true, false
	}); err != nil {
		return err
	}
	rb := raypod.AutoscalerRoleBinding(p.cluster)
	return r.ensure(ctx, p, "RoleBinding", rb, &rbacv1.RoleBinding{}, func(existing client.Object) (bool, bool) {
		e := existing.(*rbacv1.RoleBinding)
		if e.RoleRef != rb.RoleRef {
			return false, true // roleRef is immutable
		}
		if equality.Semantic.DeepEqual(e.Subjects, rb.Subjects) {
			return false, false
		}
		e.Subjects = rb.Subjects
		return true, false
	})
}

// ensure creates desired if missing; otherwise, when the cluster controls the existing
// object, mutate brings it in line and says whether to update it or to delete it (to be
// recreated by the next pass). An object the cluster does not control is only reported.
func (r *Reconciler) ensure(ctx context.Context, p *pass, kind string, desired, existing client.Object, mutate func(client.Object) (update, recreate bool)) error {
	err := r.Get(ctx, key(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		err := r.Create(ctx, desired)
		switch {
		case apierrors.IsAlreadyExists(err):
			return r.reportTaken(ctx, p, kind, desired, existing)
		case err != nil:
			p.warn(EventFailedAutoscalerRBAC, actionCreate, "Failed to create %s %s for the autoscaler: %v", kind, desired.GetName(), err)
			return fmt.Errorf("creating %s %s: %w", kind, desired.GetName(), err)
		}
		p.normal(EventCreatedAutoscalerRBAC, actionCreate, "Created %s %s for the autoscaler", kind, desired.GetName())
		return nil
	case err != nil:
		return err
	}
	if c, foreign := conflictOf(p, kind, existing); foreign {
		p.conflicts = append(p.conflicts, c)
		return nil
	}
	update, recreate := mutate(existing)
	switch {
	case recreate:
		uid := existing.GetUID()
		if err := r.Delete(ctx, existing, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			p.warn(EventFailedAutoscalerRBAC, actionDelete, "Failed to delete %s %s: %v", kind, existing.GetName(), err)
			return err
		}
		p.normal(EventUpdatedAutoscalerRBAC, actionDelete, "Deleted %s %s to recreate it", kind, existing.GetName())
	case update:
		if err := r.Update(ctx, existing); err != nil {
			p.warn(EventFailedAutoscalerRBAC, actionUpdate, "Failed to update %s %s: %v", kind, existing.GetName(), err)
			return err
		}
		p.normal(EventUpdatedAutoscalerRBAC, actionUpdate, "Updated %s %s for the autoscaler", kind, existing.GetName())
	}
	return nil
}
