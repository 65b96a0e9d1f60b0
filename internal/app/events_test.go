package app

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	rayscheme "github.com/raygate/raygate/apis/scheme"
)

// stubManager stands for controller-runtime's manager: Start runs the writer like the
// "others" group would, stops it, and then lets a controller's last pass record an Event,
// as controller-runtime v0.24's shutdown order does.
type stubManager struct {
	ctrl.Manager
	c         client.Client
	scheme    *runtime.Scheme
	runnables []manager.Runnable
	lastPass  func()
}

func (m *stubManager) GetClient() client.Client     { return m.c }
func (m *stubManager) GetScheme() *runtime.Scheme   { return m.scheme }
func (m *stubManager) Add(r manager.Runnable) error { m.runnables = append(m.runnables, r); return nil }
func (m *stubManager) Start(ctx context.Context) error {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, len(m.runnables))
	for _, r := range m.runnables {
		go func() { done <- r.Start(rctx) }()
	}
	cancel()
	for range m.runnables {
		if err := <-done; err != nil {
			return err
		}
	}
	m.lastPass()
	return nil
}

func TestEventsManagerDrainsAfterStartReturns(t *testing.T) {
	scheme := rayscheme.New()
	stub := &stubManager{c: fake.NewClientBuilder().WithScheme(scheme).Build(), scheme: scheme}
	mgr, err := newEventsManager(stub)
	if err != nil {
		t.Fatal(err)
	}
	if len(stub.runnables) != 1 || stub.runnables[0] != manager.Runnable(mgr.events) {
		t.Fatalf("the event writer is not a manager runnable: %v", stub.runnables)
	}
	if mgr.events.NeedLeaderElection() {
		t.Error("the event writer must not wait for leadership")
	}
	rec := mgr.GetEventRecorder("raycluster-controller")
	stub.lastPass = func() {
		rec.Eventf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, nil, corev1.EventTypeNormal, "Deleted", "Delete", "last pass")
	}
	if err := mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var l eventsv1.EventList
	if err := stub.c.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Note != "last pass" || l.Items[0].ReportingController != "raycluster-controller" {
		t.Fatalf("events after Start returned: %+v, want the last pass's event", l.Items)
	}
}
