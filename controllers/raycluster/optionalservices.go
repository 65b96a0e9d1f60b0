package raycluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
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

// Optional Services in events and errors.
var (
	headlessServiceKind = serviceKind("headless worker service")
	serveServiceKind    = serviceKind("serve service")
)

func serviceKind(noun string) ownedKind {
	return ownedKind{noun: noun,
		created: EventCreatedService, updated: EventUpdatedService, deleted: EventDeletedService,
		createFailed: EventFailedService, changeFailed: EventFailedService}
}

// decideService is the change to one of the cluster's Services: desired is nil when the
// cluster does not want it, existing nil when there is none. controlled says the cluster is
// the existing object's controller, ours that it also carries the labels of the kind of
// Service raygate builds under that name (only such a Service is deleted when no longer
// wanted).
func decideService(desired, existing *corev1.Service, controlled, ours bool) change {
	if desired == nil && !ours {
		return change{}
	}
	c := changeOf(ownerref.Decide(desired, existing, controlled, raypod.MergeService))
	switch c.op {
	case ownerref.Delete:
		c.why = "the cluster no longer asks for it"
	case ownerref.Recreate:
		c.why = "with a different cluster IP mode"
	}
	return c
}

// reconcileHeadlessService creates or corrects `<cluster>-headless` while a worker group
// spans several hosts.
func (r *Reconciler) reconcileHeadlessService(ctx context.Context, p *pass) error {
	if !raypod.NeedsHeadlessWorkerService(&p.cluster.Spec) {
		return nil
	}
	desired := raypod.HeadlessWorkerService(p.cluster)
	return r.reconcileOptionalService(ctx, p, headlessServiceKind, desired.Name, desired, func(*corev1.Service) bool { return false })
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
	return r.reconcileOptionalService(ctx, p, serveServiceKind, name, desired, func(s *corev1.Service) bool {
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

// reconcileOptionalService reads the Service called name and carries out the change
// decideService gives.
func (r *Reconciler) reconcileOptionalService(ctx context.Context, p *pass, k ownedKind, name string, desired *corev1.Service, ours func(*corev1.Service) bool) error {
	existing, err := owned.Read(ctx, r.objects(p), client.ObjectKey{Namespace: p.cluster.Namespace, Name: name}, &corev1.Service{})
	if err != nil {
		return err
	}
	found := existing != nil
	_, err = r.applyChange(ctx, p, k, decideService(desired, existing, found && ownerref.ControlledBy(existing, p.object), found && ours(existing)))
	return err
}
