package raycluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// A RayCluster's Services, ServiceAccount, Role and RoleBinding (and its other owned objects)
// have names derived from the cluster's, so a tenant (or a GitOps tool) may already have an
// object of that name. raygate only ever updates or deletes an object the cluster controls
// (its controller reference carries the cluster's UID); anything else is reported and left
// as it is. Package owned reads and writes them; ownerref decides.

// conflict is an object with a name raygate wants that the cluster does not control.
type conflict = ownerref.Conflict

// conflictOf describes obj as a conflict, or returns false when the cluster controls it.
func conflictOf(p *pass, kind string, obj metav1.Object) (conflict, bool) {
	if ownerref.ControlledBy(obj, p.object) {
		return conflict{}, false
	}
	return ownerref.NewConflict(kind, obj, "this "+rayv1.RayClusterKind), true
}

// conflictMessage is the OwnershipConflict condition's message ("" without conflicts).
func conflictMessage(cs []conflict) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return ownerref.Message(parts, "raygate leaves it untouched: delete or rename it, or rename the RayCluster.")
}

// ownedMeta is the metadata of an object the cluster owns besides its pods and Services: its
// name, the cluster's namespace and controller reference, and the labels raygate's cache
// selects on.
func ownedMeta(rc *rayv1.RayCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: rc.Namespace,
		Labels: map[string]string{
			rayv1.ClusterLabelKey:                   rc.Name,
			rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
			rayv1.KubernetesCreatedByLabelKey:       rayv1.ComponentName,
		},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))},
	}
}

// objects reads and writes the objects the pass's cluster owns.
func (r *Reconciler) objects(p *pass) owned.Client {
	return owned.Client{Writer: r.Client, API: r.APIReader, Names: &r.taken, Owner: key(p.object), OwnerKind: rayv1.RayClusterKind}
}

// getUncached reads an object from the API server, for a kind the cache does not hold.
func (r *Reconciler) getUncached(ctx context.Context, k client.ObjectKey, obj client.Object) error {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	return reader.Get(ctx, k, obj)
}

// headServiceKind names the head Service in events and errors.
var headServiceKind = serviceKind("head service")

// reconcileHeadService creates the head Service or brings the fields raygate sets back to
// the desired values. Fields the API server defaulted or allocated are left alone.
func (r *Reconciler) reconcileHeadService(ctx context.Context, p *pass) error {
	k := key(p.object)
	// Read only (MergeService changes a copy): no deep copy of the cached Service.
	existing, err := owned.Read(ctx, r.objects(p), client.ObjectKey{Namespace: p.cluster.Namespace, Name: raypod.HeadServiceName(p.cluster)}, &corev1.Service{}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return err
	}
	if existing != nil && r.headServices.agree(k, p.object.ResourceVersion, existing.ResourceVersion) {
		p.headSvc = existing
		return nil
	}
	desired := r.Pods.HeadService(p.cluster)
	c := decideService(desired, existing, existing != nil && ownerref.ControlledBy(existing, p.object), true)
	done, err := r.applyChange(ctx, p, headServiceKind, c)
	switch {
	case err != nil:
		return err
	case c.op == ownerref.Keep:
		p.headSvc = existing
		r.headServices.remember(k, p.object.ResourceVersion, existing.ResourceVersion)
	case done && (c.op == ownerref.Create || c.op == ownerref.Update):
		p.headSvc = c.object.(*corev1.Service)
	}
	return nil
}

// rbacKind names the autoscaler's ServiceAccount, Role and RoleBinding in events and errors.
// Their creation is reported once for the three (createdTogether), not by applyChange.
var rbacKind = ownedKind{named: true, purpose: " for the autoscaler", quietCreate: true,
	created: EventCreatedAutoscalerRBAC, updated: EventUpdatedAutoscalerRBAC, deleted: EventUpdatedAutoscalerRBAC,
	createFailed: EventFailedAutoscalerRBAC, changeFailed: EventFailedAutoscalerRBAC}

// reconcileAutoscalerRBAC gives the autoscaler sidecar its ServiceAccount, Role and
// RoleBinding when in-tree autoscaling is on. A new cluster gets the three at once, and one
// event that says so.
func (r *Reconciler) reconcileAutoscalerRBAC(ctx context.Context, p *pass) error {
	if !rayspec.AutoscalingEnabled(&p.cluster.Spec) {
		return nil
	}
	var created []client.Object
	defer func() {
		if len(created) > 0 {
			p.normalAbout(created[0], rbacKind.created, actionCreate, "Created %s for the autoscaler", createdTogether(created))
		}
	}()
	steps := []func() (client.Object, error){
		func() (client.Object, error) {
			sa := raypod.AutoscalerServiceAccount(p.cluster)
			if sa == nil {
				return nil, nil
			}
			return ensure(ctx, r, p, rbacKind.of("ServiceAccount"), sa, &corev1.ServiceAccount{}, keepServiceAccount)
		},
		func() (client.Object, error) {
			return ensure(ctx, r, p, rbacKind.of("Role"), raypod.AutoscalerRole(p.cluster), &rbacv1.Role{}, mergeRole)
		},
		func() (client.Object, error) {
			return ensure(ctx, r, p, rbacKind.of("RoleBinding"), raypod.AutoscalerRoleBinding(p.cluster), &rbacv1.RoleBinding{}, mergeRoleBinding)
		},
	}
	for _, step := range steps {
		obj, err := step()
		if obj != nil {
			created = append(created, obj)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// createdTogether names objects created together: "ServiceAccount, Role and RoleBinding x"
// when they share a name, each kind with its name otherwise.
func createdTogether(objs []client.Object) string {
	parts := make([]string, len(objs))
	shared := true
	for i, o := range objs {
		parts[i] = kindOf(o)
		shared = shared && o.GetName() == objs[0].GetName()
	}
	if !shared {
		for i, o := range objs {
			parts[i] += " " + o.GetName()
		}
	}
	list := parts[len(parts)-1]
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + " and " + list
	}
	if shared {
		list += " " + objs[0].GetName()
	}
	return list
}

// kindOf names the autoscaler's objects by kind.
func kindOf(o client.Object) string {
	switch o.(type) {
	case *corev1.ServiceAccount:
		return "ServiceAccount"
	case *rbacv1.Role:
		return "Role"
	case *rbacv1.RoleBinding:
		return "RoleBinding"
	}
	return fmt.Sprintf("%T", o)
}

// keepServiceAccount: the autoscaler's ServiceAccount is never updated.
func keepServiceAccount(_, _ *corev1.ServiceAccount) (*corev1.ServiceAccount, bool) {
	return nil, false
}

func mergeRole(existing, desired *rbacv1.Role) (*rbacv1.Role, bool) {
	if equality.Semantic.DeepEqual(existing.Rules, desired.Rules) {
		return nil, false
	}
	u := existing.DeepCopy()
	u.Rules = desired.Rules
	return u, false
}

func mergeRoleBinding(existing, desired *rbacv1.RoleBinding) (*rbacv1.RoleBinding, bool) {
	if existing.RoleRef != desired.RoleRef {
		return nil, true // roleRef is immutable
	}
	if equality.Semantic.DeepEqual(existing.Subjects, desired.Subjects) {
		return nil, false
	}
	u := existing.DeepCopy()
	u.Subjects = desired.Subjects
	return u, false
}

// ensure creates desired if missing; otherwise, when the cluster controls the existing
// object (read into blank), merge brings it in line, by an update or by deleting it (to be
// recreated by the next pass). An object the cluster does not control is only reported.
// It returns desired when it created it.
func ensure[T ownedObject](ctx context.Context, r *Reconciler, p *pass, k ownedKind, desired, blank T, merge ownerref.Merge[T]) (client.Object, error) {
	existing, err := owned.Read(ctx, r.objects(p), key(desired), blank)
	if err != nil {
		return nil, err
	}
	var none T
	c := changeOf(ownerref.Decide(desired, existing, existing != none && ownerref.ControlledBy(existing, p.object), merge))
	done, err := r.applyChange(ctx, p, k, c)
	if done && c.op == ownerref.Create {
		return desired, err
	}
	return nil, err
}

// isHeadless reports whether a Service has no virtual IP.
var isHeadless = raypod.IsHeadless

// takenNames are the names a create found taken by objects the cache lacks (owned.TakenNames).
type takenNames = owned.TakenNames
