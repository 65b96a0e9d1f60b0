package rayservice

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/statuspatch"
	"github.com/raygate/raygate/test/builders"
)

func TestMessageWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = 2 * time.Second
	base := rayv1.RayServiceStatuses{Conditions: []metav1.Condition{
		{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "NonZeroServeEndpoints", Message: "2 serve endpoint(s) ready"},
		{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionTrue, Reason: "BothActivePendingClustersExist", Message: "shift traffic"},
		{Type: string(rayv1.UpgradeAction), Status: metav1.ConditionTrue, Reason: "Paused", Message: "paused by pause"},
	}}
	with := func(f func(*rayv1.RayServiceStatuses)) *rayv1.RayServiceStatuses {
		s := base.DeepCopy()
		f(s)
		return s
	}
	upgradeMsg := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[1].Message = "waiting for the route" })
	readyMsg := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[0].Message = "1 serve endpoint(s) ready" })
	stamped := with(func(s *rayv1.RayServiceStatuses) {
		s.Conditions[1].Message = "waiting for the route"
		s.LastUpdateTime = &metav1.Time{Time: t0}
	})
	actionMsg := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[2].Message = "paused by someone else" })
	reason := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[1].Reason = "Other" })
	status := with(func(s *rayv1.RayServiceStatuses) { s.Conditions[1].Status = metav1.ConditionFalse })
	traffic := with(func(s *rayv1.RayServiceStatuses) {
		s.Conditions[1].Message = "shift traffic"
		s.PendingServiceStatus.TrafficRoutedPercent = ptr.To[int32](20)
	})
	clusterCopy := with(func(s *rayv1.RayServiceStatuses) {
		s.PendingServiceStatus.RayClusterStatus.State = rayv1.Ready
		s.ActiveServiceStatus.RayClusterStatus.ReadyWorkerReplicas = 3
	})
	endpoints := with(func(s *rayv1.RayServiceStatuses) {
		s.NumServeEndpoints = 1
		s.Conditions[0].Message = "1 serve endpoint(s) ready"
	})
	clusterName := with(func(s *rayv1.RayServiceStatuses) { s.PendingServiceStatus.RayClusterName = "llm-new" })
	apps := with(func(s *rayv1.RayServiceStatuses) {
		s.PendingServiceStatus.Applications = map[string]rayv1.AppStatus{"fruit": {Status: rayv1.ApplicationStatusDeploying}}
	})
	rejected := &rayv1.RayServiceStatuses{Conditions: []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: rayv1.ValidationFailed, Message: "a"}}}
	rejectedOther := &rayv1.RayServiceStatuses{Conditions: []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: rayv1.ValidationFailed, Message: "b"}}}

	for _, tt := range []struct {
		name         string
		old, cur     *rayv1.RayServiceStatuses
		quiet        bool
		pendingSince time.Time
		now          time.Time
		window       time.Duration
		want         time.Duration
	}{
		{"an upgrade message waits the window", &base, upgradeMsg, true, time.Time{}, t0, window, window},
		{"a Ready message waits too", &base, readyMsg, true, time.Time{}, t0, window, window},
		{"lastUpdateTime is not a change of its own", &base, stamped, true, time.Time{}, t0, window, window},
		{"seen again, it waits the rest", &base, upgradeMsg, true, t0, t0.Add(500 * time.Millisecond), window, 1500 * time.Millisecond},
		{"written once the window is over", &base, upgradeMsg, true, t0, t0.Add(window), window, 0},
		{"a pending time in the future restarts the wait", &base, upgradeMsg, true, t0.Add(time.Hour), t0, window, window},
		{"a pass with events writes at once", &base, upgradeMsg, false, time.Time{}, t0, window, 0},
		{"without a window, at once", &base, upgradeMsg, true, time.Time{}, t0, 0, 0},
		{"a copy of a cluster's status waits", &base, clusterCopy, true, time.Time{}, t0, window, window},
		{"the serve endpoint count waits", &base, endpoints, true, time.Time{}, t0, window, window},
		{"a cluster's name at once", &base, clusterName, true, time.Time{}, t0, window, 0},
		{"applications at once", &base, apps, true, time.Time{}, t0, window, 0},
		{"the message of a record (UpgradeAction) at once", &base, actionMsg, true, time.Time{}, t0, window, 0},
		{"a reason at once", &base, reason, true, time.Time{}, t0, window, 0},
		{"a condition's status at once", &base, status, true, time.Time{}, t0, window, 0},
		{"traffic at once", &base, traffic, true, time.Time{}, t0, window, 0},
		{"a rejection's message at once", rejected, rejectedOther, true, time.Time{}, t0, window, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := messageWait(tt.old, tt.cur, tt.quiet, tt.pendingSince, tt.now, tt.window); got != tt.want {
				t.Errorf("messageWait = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMessagePolicy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = 2 * time.Second
	stored := rayv1.RayServiceStatuses{Conditions: []metav1.Condition{
		{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionTrue, Reason: "BothActivePendingClustersExist", Message: "shift traffic"},
	}}
	reworded := *stored.DeepCopy()
	reworded.Conditions[0].Message = "waiting for the route"
	traffic := *reworded.DeepCopy()
	traffic.PendingServiceStatus.TrafficRoutedPercent = ptr.To[int32](20)
	type decision = statuspatch.Decision[time.Time]
	for _, tt := range []struct {
		name    string
		planned rayv1.RayServiceStatuses
		quiet   bool
		since   time.Time
		now     time.Time
		want    decision
	}{
		{"a reworded message waits from now", reworded, true, time.Time{}, t0, decision{After: window, Pending: t0}},
		{"and the rest of its window later", reworded, true, t0, t0.Add(500 * time.Millisecond), decision{After: 1500 * time.Millisecond, Pending: t0}},
		{"it is written when the window is over", reworded, true, t0, t0.Add(window), decision{Write: true}},
		{"a pass with something to announce writes at once", reworded, false, time.Time{}, t0, decision{Write: true}},
		{"anything else at once", traffic, true, t0, t0.Add(time.Millisecond), decision{Write: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := messagePolicy(tt.quiet, window)(stored, tt.planned, tt.since, tt.now); got != tt.want {
				t.Errorf("messagePolicy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// frozenServices reads RayServices from a frozen copy of the cache and everything else live,
// like an informer that has not seen the last status write yet. Writes go to the live store.
type frozenServices struct {
	client.Client
	frozen client.Reader
}

func (f frozenServices) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	if _, ok := o.(*rayv1.RayService); ok {
		return f.frozen.Get(ctx, k, o, opts...)
	}
	return f.Client.Get(ctx, k, o, opts...)
}

// A pass reads the status it last wrote although the cache is behind it, and a change of
// progress messages alone waits the window, announcing nothing.
func TestStatusWritesAreReadBackAndMessagesWait(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	build := func(objs ...client.Object) client.Client {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&rayv1.RayService{}).Build()
	}
	store := build(builders.RayService("svc", "ns").Obj())
	key := client.ObjectKey{Namespace: "ns", Name: "svc"}
	before := &rayv1.RayService{}
	if err := store.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	var statusWrites int
	live := interceptor.NewClient(store.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			statusWrites++
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		}})
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Config: Config{DeployingPoll: time.Second, AppStatusResync: time.Minute, MessageCoalesce: 2 * time.Second},
		Metrics: NewMetrics(), client: frozenServices{Client: live, frozen: build(before)}, apiReader: store, recorder: rec}
	get := func() *rayv1.RayService {
		t.Helper()
		svc, err := r.get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	withMessage := func(svc *rayv1.RayService, msg string) plan.Outcome {
		st := *svc.Status.DeepCopy()
		st.Conditions = []metav1.Condition{{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionTrue, Reason: "BothActivePendingClustersExist", Message: msg}}
		return plan.Outcome{Status: st}
	}
	writes := func() int { return statusWrites }

	if _, err := r.record(ctx, get(), withMessage(get(), "shift traffic"), t0); err != nil || writes() != 1 {
		t.Fatalf("first status: %v, %d writes", err, writes())
	}
	if got := get(); len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Message != "shift traffic" {
		t.Fatalf("the cache is behind the write: the pass read %+v, want the status written", got.Status.Conditions)
	}
	for i, at := range []time.Duration{0, time.Second} {
		res, err := r.record(ctx, get(), withMessage(get(), "waiting for the route"), t0.Add(time.Second+at))
		if want := 2*time.Second - at; err != nil || res.RequeueAfter != want || writes() != 1 {
			t.Fatalf("reworded, pass %d: %v, %v, %d writes; want no write and a look again after %v", i, res, err, writes(), want)
		}
	}
	if _, err := r.record(ctx, get(), withMessage(get(), "waiting for the route"), t0.Add(3*time.Second)); err != nil || writes() != 2 {
		t.Fatalf("the window is over: %v, %d writes", err, writes())
	}
	if got := get(); got.Status.Conditions[0].Message != "waiting for the route" || len(rec.Events) != 0 {
		t.Errorf("read %+v, %d events", got.Status.Conditions, len(rec.Events))
	}
}
