package statuspatch_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/statuspatch"
)

// The package documentation's example, compiled.

type jobStatus struct{}

func (jobStatus) Status(j *rayv1.RayJob) *rayv1.RayJobStatus     { return &j.Status }
func (jobStatus) Copy(s *rayv1.RayJobStatus) *rayv1.RayJobStatus { return s.DeepCopy() }

type jobReconciler struct {
	client    client.Client
	apiReader client.Reader
	statuses  statuspatch.Writer[*rayv1.RayJob, rayv1.RayJobStatus, time.Time, jobStatus]
}

func (r *jobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &rayv1.RayJob{}
	if err := r.statuses.Get(ctx, r.client, r.apiReader, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := time.Now()
	status := computeJobStatus(job)
	res, err := r.statuses.Write(ctx, r.client, job, status, now, messageWaits(2*time.Second))
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: res.Wait}, nil
}

func computeJobStatus(job *rayv1.RayJob) rayv1.RayJobStatus {
	st := *job.Status.DeepCopy()
	st.Message = "waiting for the cluster"
	return st
}

func messageWaits(window time.Duration) statuspatch.Policy[rayv1.RayJobStatus, time.Time] {
	return func(stored, computed rayv1.RayJobStatus, since, now time.Time) statuspatch.Decision[time.Time] {
		if since.IsZero() {
			since = now
		}
		stored.Message = computed.Message
		if waited := now.Sub(since); waited < window && equality.Semantic.DeepEqual(stored, computed) {
			return statuspatch.Decision[time.Time]{After: window - waited, Pending: since}
		}
		return statuspatch.Decision[time.Time]{Write: true}
	}
}

// The example runs: the first pass only sets a message, which waits.
func TestTheDocumentedExample(t *testing.T) {
	job := &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithStatusSubresource(&rayv1.RayJob{}).WithObjects(job).Build()
	r := &jobReconciler{client: c, apiReader: c}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)})
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > 2*time.Second {
		t.Errorf("Reconcile = %+v, %v; want the message left waiting up to 2s", res, err)
	}
}
