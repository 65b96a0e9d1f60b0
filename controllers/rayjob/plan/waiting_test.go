package plan

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// TestWaitingForTheClusterWritesNothing: from the write that records the attempt to the
// cluster's readiness, a job creating its cluster writes no status of its own: the message
// naming what it waits for is in the first write, and the cluster's steps while it comes up
// (conditions, replica counts) are not copied one by one. Its ready state is copied with the
// move to Running. SidecarMode copies every step: the record says the cluster existed.
func TestWaitingForTheClusterWritesNothing(t *testing.T) {
	for _, mode := range []rayv1.JobSubmissionMode{rayv1.K8sJobMode, rayv1.HTTPMode, rayv1.InteractiveMode, rayv1.SidecarMode} {
		t.Run(string(mode), func(t *testing.T) {
			job := storedJob(mode, rayv1.JobDeploymentStatusNew)
			p := Decide(inputsFor(job, 0, Observed{}))
			if p.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusInitializing {
				t.Fatalf("first pass: %s", p.Status.JobDeploymentStatus)
			}
			job.Status = *p.Status.DeepCopy()
			recorded := job.Status.DeepCopy()

			rc := ownCluster(job, false)
			rc.Name = job.Status.RayClusterName
			passes := []struct {
				what    string
				cluster *rayv1.RayCluster
			}{
				{"the cluster is created", nil},
				{"the cluster exists, no status yet", rc.DeepCopy()},
				{"its first status: nothing ready", withStatus(rc, rayv1.RayClusterStatus{DesiredWorkerReplicas: 1,
					Conditions: []metav1.Condition{{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionFalse, Reason: "HeadPodNotFound"}}})},
				{"the head is ready, the worker not yet", withStatus(rc, rayv1.RayClusterStatus{DesiredWorkerReplicas: 1,
					Conditions: []metav1.Condition{{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue, Reason: "HeadPodRunningAndReady"}}})},
			}
			for i, pass := range passes {
				p := Decide(inputsFor(job, time.Duration(i+1)*time.Second, Observed{Cluster: pass.cluster}))
				changed := !equality.Semantic.DeepEqual(p.Status, *recorded)
				if mode == rayv1.SidecarMode && pass.cluster != nil && len(pass.cluster.Status.Conditions) > 0 {
					if !changed || p.Status.RayClusterStatus.DesiredWorkerReplicas != 1 {
						t.Errorf("%s: SidecarMode records the cluster's status: %+v", pass.what, p.Status.RayClusterStatus)
					}
					job.Status = *p.Status.DeepCopy()
					recorded = job.Status.DeepCopy()
					continue
				}
				if changed {
					t.Errorf("%s: the status changed:\nstored %+v\nplan   %+v", pass.what, *recorded, p.Status)
				}
			}

			ready := withStatus(rc, rayv1.RayClusterStatus{State: rayv1.Ready, DesiredWorkerReplicas: 1, ReadyWorkerReplicas: 1})
			p = Decide(inputsFor(job, 10*time.Second, Observed{Cluster: ready, HeadService: headService(rc.Name)}))
			if p.Status.RayClusterStatus.State != rayv1.Ready || p.Status.RayClusterStatus.ReadyWorkerReplicas != 1 {
				t.Errorf("ready: the cluster's status is not recorded: %+v", p.Status.RayClusterStatus)
			}
		})
	}
}

func withStatus(rc *rayv1.RayCluster, st rayv1.RayClusterStatus) *rayv1.RayCluster {
	c := rc.DeepCopy()
	c.Status = st
	return c
}
