package rayservice

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/test/builders"
)

// The events a plan announces (a promotion, a traffic step, a rollback) describe what its
// status records: they are emitted once that status is stored, never before, and not at all
// when the write fails. The same holds for the finished-upgrade histogram.
func TestRecordAnnouncesOnlyWhatTheStoredStatusSays(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(builders.RayService("svc", "ns").Obj()).WithStatusSubresource(&rayv1.RayService{}).Build()
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Config: Config{DeployingPoll: time.Second, AppStatusResync: time.Minute}, Metrics: NewMetrics(), client: c, recorder: rec}
	read := func() *rayv1.RayService {
		svc := &rayv1.RayService{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "svc"}, svc); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	promoted := func(svc *rayv1.RayService) plan.Outcome {
		st := *svc.Status.DeepCopy()
		st.ActiveServiceStatus.RayClusterName = "svc-green"
		return plan.Outcome{
			Status:  st,
			Events:  []plan.Event{plan.NormalEvent(nil, plan.EventPromoted, "Promote", "RayCluster svc-green serves all traffic")},
			Metrics: plan.MetricFacts{Finished: &plan.FinishedUpgrade{Strategy: rayv1.NewCluster, Result: plan.ResultPromoted, Seconds: 42}},
			Wake:    plan.Wakeup{Soon: true},
		}
	}
	// Observations, not series: every strategy and result has its series from the start.
	finished := func() int {
		m := &dto.Metric{}
		if err := r.Metrics.upgrades.WithLabelValues(string(rayv1.NewCluster), plan.ResultPromoted).(prometheus.Metric).Write(m); err != nil {
			t.Fatal(err)
		}
		return int(m.GetHistogram().GetSampleCount())
	}
	announced := func() int { return len(rec.Events) + finished() }

	// A write the API server refuses is an error: it is retried through the rate limiter,
	// never on a fixed short delay, and nothing of the plan is announced.
	r.client = interceptor.NewClient(c, interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
		return apierrors.NewServiceUnavailable("etcd is down")
	}})
	res, err := r.record(ctx, read(), promoted(read()), t0)
	if !apierrors.IsServiceUnavailable(err) || res.RequeueAfter != 0 {
		t.Fatalf("a refused write: %v, %v; want the error returned", res, err)
	}
	if n := announced(); n != 0 || read().Status.ActiveServiceStatus.RayClusterName != "" {
		t.Fatalf("a status that was not stored was announced (%d) or stored", n)
	}
	r.client = c

	// The status is replaced without a resourceVersion: a read older than the stored object
	// (a cache behind a write) does not make the write fail.
	stale := read()
	stale.ResourceVersion = "1"
	res, err = r.record(ctx, stale, promoted(stale), t0)
	if soon := (plan.Wakeup{Soon: true}).After(t0, 0, 0); err != nil || res.RequeueAfter != soon {
		t.Fatalf("%v, %v", res, err)
	}
	if got := read().Status.ActiveServiceStatus.RayClusterName; got != "svc-green" {
		t.Fatalf("stored active %q", got)
	}
	if got := <-rec.Events; got != "Normal PromotedPendingCluster RayCluster svc-green serves all traffic" {
		t.Errorf("event %q", got)
	}
	if n := finished(); n != 1 {
		t.Errorf("finished upgrades %d", n)
	}

	// An unchanged status is not written again; what the plan announces still goes out.
	svc := read()
	rv := svc.ResourceVersion
	same := plan.Outcome{Status: *svc.Status.DeepCopy(), Events: []plan.Event{plan.WarningEvent(nil, plan.EventFailedCluster, "Delete", "delete it by hand")}}
	if _, err := r.record(ctx, svc, same, t0); err != nil {
		t.Fatal(err)
	}
	if read().ResourceVersion != rv || len(rec.Events) != 1 {
		t.Errorf("resourceVersion %s → %s, %d events", rv, read().ResourceVersion, len(rec.Events))
	}
}
