package rayjob

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/raypod"
)

// observation is what observe read, and the attempt's cluster's Jobs API for the pool.
type observation struct {
	plan.Observed
	target dashboard.JobsTarget
}

// observe reads, changing nothing, what the plan needs: the RayCluster status.rayClusterName
// names, its head Service and head pod, the submitter Job, `<job>-head-svc`, and what the
// Jobs API pool last heard from the cluster about status.jobId. Objects come from the cache
// (or the API server for names found taken); a read that fails ends the pass.
func (r *Reconciler) observe(ctx context.Context, job *rayv1.RayJob) (observation, error) {
	var obs observation
	objects := r.objects(job)
	ns, st := job.Namespace, &job.Status
	var err error
	if st.RayClusterName != "" {
		if obs.Cluster, err = owned.Read(ctx, objects, types.NamespacedName{Namespace: ns, Name: st.RayClusterName}, &rayv1.RayCluster{}); err != nil {
			return obs, err
		}
	}
	if rc := obs.Cluster; rc != nil {
		if obs.HeadService, err = owned.Read(ctx, objects, types.NamespacedName{Namespace: ns, Name: raypod.HeadServiceName(rc)}, &corev1.Service{}); err != nil {
			return obs, err
		}
		if obs.HeadPod, err = r.headPod(ctx, rc); err != nil {
			return obs, err
		}
	}
	if obs.Submitter, err = owned.Read(ctx, objects, types.NamespacedName{Namespace: ns, Name: rayjob.SubmitterJobName(job.Name)}, &batchv1.Job{}); err != nil {
		return obs, err
	}
	if obs.JobService, err = owned.Read(ctx, objects, types.NamespacedName{Namespace: ns, Name: rayjob.HeadServiceName(job.Name)}, &corev1.Service{}); err != nil {
		return obs, err
	}
	if st.RayClusterName == "" {
		return obs, nil
	}
	obs.target = r.targetOf(ctx, job, obs.Cluster, obs.HeadPod)
	if st.JobId != "" {
		obs.Jobs = jobsView(st.RayClusterName, st.JobId, r.jobs.View(obs.target, st.JobId))
	}
	return obs, nil
}

// headPod is the cluster's head pod: one the cluster controls (by UID), not being deleted
// when there is such a one, the newest of several (nil: none).
func (r *Reconciler) headPod(ctx context.Context, rc *rayv1.RayCluster) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(rc.Namespace), client.MatchingLabels{
		rayv1.ClusterLabelKey: rc.Name, rayv1.NodeTypeLabelKey: string(rayv1.HeadNode),
	}); err != nil {
		return nil, fmt.Errorf("listing the head pod of RayCluster %s: %w", rc.Name, err)
	}
	var best *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if !metav1.IsControlledBy(p, rc) {
			continue // someone else's pod with the cluster's labels: never called
		}
		if best == nil || betterHead(p, best) {
			best = p
		}
	}
	return best, nil
}

// betterHead: a pod not being deleted beats one being deleted, then the newer one.
func betterHead(p, than *corev1.Pod) bool {
	if (p.DeletionTimestamp == nil) != (than.DeletionTimestamp == nil) {
		return p.DeletionTimestamp == nil
	}
	return than.CreationTimestamp.Before(&p.CreationTimestamp)
}

// objects is the owned-object client of one pass for a RayJob.
func (r *Reconciler) objects(job *rayv1.RayJob) owned.Client {
	return owned.Client{Writer: r.client, API: r.apiReader, Names: &r.taken, Owner: client.ObjectKeyFromObject(job), OwnerKind: rayv1.RayJobKind}
}
