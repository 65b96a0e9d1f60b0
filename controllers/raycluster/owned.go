package raycluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// ownedByOther reports whether obj is controlled by something other than the cluster; such
// an object is never modified.
func ownedByOther(p *pass, obj client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID != p.object.UID
}

// reconcileHeadService creates the head Service or brings the fields raygate sets back to
// the desired values. Fields the API server defaulted or allocated are left alone.
func (r *Reconciler) reconcileHeadService(ctx context.Context, p *pass) error {
	desired := raypod.HeadService(p.cluster)
	existing := &corev1.Service{}
	err := r.Get(ctx, key(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, desired); err != nil {
			p.warn(EventFailedService, actionCreate, "Failed to create head service %s: %v", desired.Name, err)
			return fmt.Errorf("creating head service: %w", err)
		}
		p.normal(EventCreatedService, actionCreate, "Created head service %s", desired.Name)
		p.headSvc = desired
		return nil
	case err != nil:
		return err
	case ownedByOther(p, existing):
		p.warn(EventFailedService, actionUpdate, "Service %s exists and belongs to another object; not modifying it", existing.Name)
		return fmt.Errorf("service %s exists and is controlled by another object", existing.Name)
	}
	updated, recreate := mergeHeadService(existing, desired)
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
		if err := r.ensure(ctx, p, sa, &corev1.ServiceAccount{}, func(existing client.Object) (bool, bool) { return false, false }); err != nil {
			return err
		}
	}
	role := raypod.AutoscalerRole(p.cluster)
	if err := r.ensure(ctx, p, role, &rbacv1.Role{}, func(existing client.Object) (bool, bool) {
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
	return r.ensure(ctx, p, rb, &rbacv1.RoleBinding{}, func(existing client.Object) (bool, bool) {
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

// ensure creates desired if missing; otherwise mutate brings the existing object in line and
// says whether to update it or to delete it (to be recreated by the next pass).
func (r *Reconciler) ensure(ctx context.Context, p *pass, desired, existing client.Object, mutate func(client.Object) (update, recreate bool)) error {
	kind := fmt.Sprintf("%T", desired)[len("*v1."):]
	err := r.Get(ctx, key(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, desired); err != nil {
			p.warn(EventFailedAutoscalerRBAC, actionCreate, "Failed to create %s %s for the autoscaler: %v", kind, desired.GetName(), err)
			return fmt.Errorf("creating %s %s: %w", kind, desired.GetName(), err)
		}
		p.normal(EventCreatedAutoscalerRBAC, actionCreate, "Created %s %s for the autoscaler", kind, desired.GetName())
		return nil
	case err != nil:
		return err
	case ownedByOther(p, existing):
		return nil // the user's own object (e.g. a shared ServiceAccount): leave it alone
	}
	update, recreate := mutate(existing)
	switch {
	case recreate:
		if err := r.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
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
