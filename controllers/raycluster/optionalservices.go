package raycluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// Besides its head Service a cluster may have two Services, as under KubeRay:
//   - `<cluster>-headless`, over its worker pods, once a worker group spans several hosts. Like
//     KubeRay, raygate does not remove it when no such group remains: it goes with the cluster.
//   - `<cluster>-serve-svc`, over all its pods on the serve port, while a standalone cluster is
//     annotated ray.io/enable-serve-service=true. raygate removes it when the annotation goes
//     (KubeRay leaves it). A RayService's clusters never get it from here: the RayService
//     controller owns that name for its upgrade backends.

// reconcileServices brings the head Service and the optional Services to the spec.
func (r *Reconciler) reconcileServices(ctx context.Context, p *pass) error {
	for _, phase := range []func(context.Context, *pass) error{r.reconcileHeadService, r.reconcileHeadlessService, r.reconcileServeService} {
		if err := phase(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// serviceStep is what one pass does with an optional Service.
type serviceStep int

const (
	serviceKeep serviceStep = iota
	serviceCreate
	serviceUpdate
	serviceRecreate // delete now, created again by the next pass
	serviceDelete
	serviceConflict
)

// decideService is the step for an optional Service: desired is nil when the cluster does not
// want it, existing nil when there is none in the cache. controlled says the cluster is the
// existing object's controller, ours that it also carries the labels of the kind of Service
// raygate builds under that name (only such a Service is deleted when no longer wanted).
// updated is the object to write for serviceUpdate.
func decideService(desired, existing *corev1.Service, controlled, ours bool) (step serviceStep, updated *corev1.Service) {
	switch {
	case existing == nil && desired == nil:
		return serviceKeep, nil
	case existing == nil:
		return serviceCreate, nil
	case desired == nil:
		if controlled && ours {
			return serviceDelete, nil
		}
		return serviceKeep, nil
	case !controlled:
		return serviceConflict, nil
	}
	u, recreate := mergeService(existing, desired)
	switch {
	case recreate:
		return serviceRecreate, nil
	case u != nil:
		return serviceUpdate, u
	}
	return serviceKeep, nil
}

// reconcileHeadlessService creates or corrects `<cluster>-headless` while a worker group
// spans several hosts.
func (r *Reconciler) reconcileHeadlessService(ctx context.Context, p *pass) error {
	if !raypod.NeedsHeadlessWorkerService(&p.cluster.Spec) {
		return nil
	}
	desired := raypod.HeadlessWorkerService(p.cluster)
	return r.applyOptionalService(ctx, p, "headless worker service", desired.Name, desired, func(*corev1.Service) bool { return false })
}

// reconcileServeService creates or corrects `<cluster>-serve-svc` of a standalone cluster
// annotated ray.io/enable-serve-service=true, and deletes it once the annotation goes.
func (r *Reconciler) reconcileServeService(ctx context.Context, p *pass) error {
	if ownedByRayService(p.object) {
		return nil
	}
	desired := raypod.ClusterServeService(p.cluster)
	name := desired.Name
	if !raypod.WantsServeService(p.object) {
		desired = nil
	}
	return r.applyOptionalService(ctx, p, "serve service", name, desired, func(s *corev1.Service) bool {
		return s.Labels[rayv1.OriginatedFromCRDLabelKey] == rayv1.RayClusterKind
	})
}

// ownedByRayService reports whether a RayService made the cluster.
func ownedByRayService(rc *rayv1.RayCluster) bool {
	if rc.Labels[rayv1.OriginatedFromCRDLabelKey] == rayv1.RayServiceKind {
		return true
	}
	ref := metav1.GetControllerOf(rc)
	return ref != nil && ref.Kind == rayv1.RayServiceKind
}

// applyOptionalService reads the Service called name and takes the step decideService gives.
func (r *Reconciler) applyOptionalService(ctx context.Context, p *pass, what, name string, desired *corev1.Service, ours func(*corev1.Service) bool) error {
	var existing *corev1.Service
	got := &corev1.Service{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: p.cluster.Namespace, Name: name}, got); {
	case err == nil:
		existing = got
	case !apierrors.IsNotFound(err):
		return err
	}
	controlled := existing != nil && metav1.IsControlledBy(existing, p.object)
	step, updated := decideService(desired, existing, controlled, existing != nil && ours(existing))
	switch step {
	case serviceCreate:
		err := r.Create(ctx, desired)
		switch {
		case apierrors.IsAlreadyExists(err):
			return r.reportTaken(ctx, p, "Service", desired, &corev1.Service{})
		case err != nil:
			p.warnAbout(desired, EventFailedService, actionCreate, "Failed to create %s %s: %v", what, name, err)
			return fmt.Errorf("creating %s: %w", what, err)
		}
		p.normalAbout(desired, EventCreatedService, actionCreate, "Created %s %s", what, name)
	case serviceUpdate:
		if err := r.Update(ctx, updated); err != nil {
			p.warnAbout(updated, EventFailedService, actionUpdate, "Failed to update %s %s: %v", what, name, err)
			return fmt.Errorf("updating %s: %w", what, err)
		}
		p.normalAbout(updated, EventUpdatedService, actionUpdate, "Updated %s %s", what, name)
	case serviceRecreate, serviceDelete:
		if err := r.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
			p.warnAbout(existing, EventFailedService, actionDelete, "Failed to delete %s %s: %v", what, name, err)
			return fmt.Errorf("deleting %s: %w", what, err)
		}
		why := "to recreate it with a different cluster IP mode"
		if step == serviceDelete {
			why = "the cluster no longer asks for it"
		}
		p.normalAbout(existing, EventDeletedService, actionDelete, "Deleted %s %s: %s", what, name, why)
	case serviceConflict:
		c, _ := conflictOf(p, "Service", existing)
		p.conflicts = append(p.conflicts, c)
	}
	return nil
}
