package batchscheduler

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Action is what Sync did to a cluster's PodGroup.
type Action string

// Result is what Sync did, and to which PodGroup (empty when the cluster needs none).
type Result struct {
	Action Action
	Name   string
}

const (
	Unchanged Action = ""
	Created   Action = "Created"
	Updated   Action = "Updated"
)

// ErrNotInstalled is returned by Sync when the scheduler's PodGroup CRD was not served when
// raygate started.
var ErrNotInstalled = errors.New("the PodGroup CRD is not installed")

// Syncer creates and updates the PodGroups of RayClusters.
type Syncer struct {
	Scheduler Scheduler
	// Client writes PodGroups. Reader reads them: the manager's cache, which holds only the
	// PodGroups raygate created (labelled app.kubernetes.io/created-by). APIReader reads
	// from the API server, for a PodGroup the cache does not show.
	Client    client.Client
	Reader    client.Reader
	APIReader client.Reader
	// Installed says the PodGroup CRD was served when raygate started; without it nothing
	// is read or written and every Sync fails with ErrNotInstalled (the kind cannot be
	// watched, so the CRD installed later needs a restart of raygate).
	Installed bool
}

// Owned is the object the RayCluster controller watches to notice changes to the PodGroups
// it owns, or nil when there is nothing to watch.
func (s *Syncer) Owned() client.Object {
	gvk := s.Scheduler.PodGroupKind()
	if gvk.Empty() || !s.Installed {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// DecoratePod marks a pod raygate built for the cluster for the scheduler.
func (s *Syncer) DecoratePod(rc *rayv1.RayCluster, pod *corev1.Pod) { s.Scheduler.DecoratePod(rc, pod) }

// Sync creates the cluster's PodGroup, or updates an existing one the scheduler keeps up to
// date. rc is the defaulted cluster as stored (with its UID). A PodGroup of that name that the
// cluster does not own is left alone.
func (s *Syncer) Sync(ctx context.Context, rc *rayv1.RayCluster) (Result, error) {
	desired, err := s.Scheduler.DesiredPodGroup(rc)
	if err != nil || desired == nil {
		return Result{}, err
	}
	a, err := s.sync(ctx, rc, desired)
	return Result{Action: a, Name: desired.GetName()}, err
}

func (s *Syncer) sync(ctx context.Context, rc *rayv1.RayCluster, desired *unstructured.Unstructured) (Action, error) {
	gvk := desired.GroupVersionKind()
	if !s.Installed {
		return Unchanged, fmt.Errorf("%w: %s is not served by the API server (it was not when raygate started); install %s, then restart raygate, or run raygate without --batch-scheduler=%s",
			ErrNotInstalled, PodGroupResource(gvk), s.Scheduler.Name(), s.Scheduler.Name())
	}
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(gvk)
	err := s.Reader.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if apierrors.IsNotFound(err) {
		stamp(desired, rc)
		err = s.Client.Create(ctx, desired)
		if err == nil {
			return Created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return Unchanged, fmt.Errorf("creating %s %s: %w", gvk.Kind, desired.GetName(), err)
		}
		// Not in the cache: created meanwhile, or not labelled as raygate's.
		current.SetGroupVersionKind(gvk)
		err = s.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), current)
		if err == nil && !metav1.IsControlledBy(current, rc) {
			return Unchanged, nil
		}
	}
	if err != nil {
		return Unchanged, fmt.Errorf("reading %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	if !metav1.IsControlledBy(current, rc) {
		return Unchanged, nil
	}
	if !s.Scheduler.UpdatePodGroup(current, rc) {
		return Unchanged, nil
	}
	if err := s.Client.Update(ctx, current); err != nil {
		return Unchanged, fmt.Errorf("updating %s %s: %w", gvk.Kind, current.GetName(), err)
	}
	return Updated, nil
}

// stamp makes the cluster the controller of a PodGroup it creates (the garbage collector
// deletes it with the cluster) and labels it as raygate's, so the cache holds it.
func stamp(pg *unstructured.Unstructured, rc *rayv1.RayCluster) {
	pg.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))})
	labels := pg.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[rayv1.KubernetesCreatedByLabelKey] = rayv1.ComponentName
	labels[rayv1.ClusterLabelKey] = rc.Name
	pg.SetLabels(labels)
}
