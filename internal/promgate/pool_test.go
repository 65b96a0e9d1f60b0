package promgate

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

// heldEvaluator records which RayService each evaluation is for, in start order, and holds
// every evaluation until release lets it end (or its context ends).
type heldEvaluator struct {
	mu      sync.Mutex
	started []string
	release chan struct{}
	value   atomic.Value // float64 every gate returns
}

func newHeldEvaluator() *heldEvaluator {
	h := &heldEvaluator{release: make(chan struct{}, 100)}
	h.value.Store(0.01)
	return h
}

func (h *heldEvaluator) Evaluate(ctx context.Context, gates []raygatev1alpha1.Gate, _ time.Duration, v Vars) []Result {
	h.mu.Lock()
	h.started = append(h.started, v.Namespace+"/"+v.RayService)
	h.mu.Unlock()
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	out := make([]Result, 0, len(gates))
	for _, g := range gates {
		out = append(out, Result{Gate: g.Name, Query: g.Query, Values: []float64{h.value.Load().(float64)}})
	}
	return out
}

func (h *heldEvaluator) starts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.started)
}

func (h *heldEvaluator) waitStarts(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(h.starts()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d evaluations started, want %d: %v", len(h.starts()), n, h.starts())
		}
		time.Sleep(time.Millisecond)
	}
	return h.starts()
}

func ask(ns, name string) Ask {
	return Ask{
		Owner:   types.NamespacedName{Namespace: ns, Name: name},
		Gates:   []raygatev1alpha1.Gate{{Name: "errors", Query: `sum(errors{namespace="{{namespace}}"})`, Max: "0.05"}},
		Timeout: 5 * time.Second,
		Vars:    Vars{Namespace: ns, RayService: name, Pending: name + "-green", Active: name + "-blue"},
	}
}

func startPool(t *testing.T, eval Evaluator, o PoolOptions) *Pool {
	t.Helper()
	p := NewPool(eval, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

func TestPoolAnswersAtOnceAndHandsTheAnswerBack(t *testing.T) {
	h := newHeldEvaluator()
	owners := make(chan types.NamespacedName, 10)
	p := startPool(t, h, PoolOptions{OnDone: func(o types.NamespacedName) { owners <- o }})
	a := ask("team-a", "svc")

	start := time.Now()
	if _, why, ok := p.Answer(a); ok || why != Queued {
		t.Fatalf("first ask: ok %v, %q; want no answer, queued", ok, why)
	}
	h.waitStarts(t, 1)
	if _, why, ok := p.Answer(a); ok || why != Running {
		t.Fatalf("while Prometheus holds the query: ok %v, %q; want no answer, running", ok, why)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("asking took %v while the evaluation hangs", took)
	}
	h.release <- struct{}{}
	select {
	case o := <-owners:
		if o != a.Owner {
			t.Fatalf("OnDone(%v), want %v", o, a.Owner)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pool did not hand the answer back")
	}
	ans, _, ok := p.Answer(a)
	if !ok || len(ans.Results) != 1 || ans.Results[0].Values[0] != 0.01 {
		t.Fatalf("after OnDone: %+v, %v", ans, ok)
	}
	if got := h.starts(); len(got) != 1 {
		t.Fatalf("evaluations %v, want one", got)
	}
}

// A namespace whose RayServices all wait at gates gets no more than PerNamespace workers;
// another namespace's evaluation starts at once on a free worker.
func TestPoolPerNamespaceLimit(t *testing.T) {
	h := newHeldEvaluator()
	p := startPool(t, h, PoolOptions{Workers: 3, PerNamespace: 2})
	for i := range 6 {
		p.Answer(ask("attacker", string(rune('a'+i))))
	}
	h.waitStarts(t, 2)
	time.Sleep(50 * time.Millisecond) // room for a third attacker evaluation to start, if the pool allowed it
	p.Answer(ask("victim", "v"))
	got := h.waitStarts(t, 3)
	if got[2] != "victim/v" {
		t.Fatalf("started %v; the victim's evaluation should start third, on the free worker", got)
	}
	if total, inNS := p.MaxInFlight("attacker"); inNS != 2 || total != 3 {
		t.Fatalf("max in flight %d, attacker %d; want 3, 2", total, inNS)
	}
	close(h.release)
}

// With one worker the namespaces take turns: a namespace with many RayServices waiting
// delays another's by at most one evaluation (the one whose turn it was).
func TestPoolNamespacesTakeTurns(t *testing.T) {
	h := newHeldEvaluator()
	p := startPool(t, h, PoolOptions{Workers: 1, PerNamespace: 1})
	for i := range 3 {
		p.Answer(ask("busy", string(rune('a'+i))))
	}
	h.waitStarts(t, 1)
	p.Answer(ask("quiet", "q"))
	for i := range 4 {
		h.release <- struct{}{}
		h.waitStarts(t, min(i+2, 4))
	}
	h.release <- struct{}{}
	// The turn was busy's when quiet asked: quiet waits behind one more of busy's.
	want := []string{"busy/a", "busy/b", "quiet/q", "busy/c"}
	if got := h.starts(); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// clock is a settable time for the staleness tests.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock(t time.Time) *clock    { c := &clock{}; c.ns.Store(t.UnixNano()); return c }
func (p *Pool) answerNow(a Ask) bool { _, _, ok := p.Answer(a); return ok }
func (p *Pool) evaluated(c *clock, h *heldEvaluator, t *testing.T, n int, a Ask) {
	t.Helper()
	c.add(time.Millisecond) // past MinInterval
	h.release <- struct{}{}
	h.waitStarts(t, n)
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		e := p.byKey[a.Owner]
		ready := e != nil && !e.running && e.answer != nil
		p.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the evaluation did not end")
		}
		time.Sleep(time.Millisecond)
	}
}

// A stale answer never decides: one older than MaxAge, one evaluated before NotBefore (the
// last traffic step), one for other queries or clusters, one dropped after it made a gate
// fail. Each time the pass gets no answer and a new evaluation is queued.
func TestPoolNeverGivesAStaleAnswer(t *testing.T) {
	c := newClock(time.Unix(1_000_000, 0))
	h := newHeldEvaluator()
	p := startPool(t, h, PoolOptions{Now: c.now, MaxAge: 15 * time.Second, MinInterval: time.Nanosecond})
	a := ask("team-a", "svc")

	fetch := func(n int, a Ask) {
		t.Helper()
		if p.answerNow(a) {
			t.Fatalf("evaluation %d: an answer before it ran", n)
		}
		p.evaluated(c, h, t, n, a)
	}
	fetch(1, a)
	c.add(16 * time.Second)
	if p.answerNow(a) {
		t.Fatal("an answer evaluated 16 s ago decided (MaxAge 15 s)")
	}

	p.evaluated(c, h, t, 2, a) // the evaluation the stale ask queued
	c.add(time.Second)
	step := a
	step.NotBefore = c.now() // a traffic step after the evaluation started
	if p.answerNow(step) {
		t.Fatal("an answer evaluated before the last traffic step decided")
	}

	p.evaluated(c, h, t, 3, step)
	other := step
	other.Vars.Pending = "svc-other"
	if p.answerNow(other) {
		t.Fatal("an answer for another pending cluster decided")
	}

	p.evaluated(c, h, t, 4, other)
	c.add(time.Second) // still after NotBefore and within MaxAge
	for pass := range 2 {
		if !p.answerNow(other) {
			t.Fatalf("pass %d: a fresh answer did not decide", pass)
		}
	}
	if got := h.starts(); len(got) != 4 {
		t.Fatalf("an answer younger than RefreshAfter was evaluated again: %v", got)
	}

	// An answer RefreshAfter old is still given, and a newer one asked for.
	c.add(DefaultRefreshAfter)
	if !p.answerNow(other) {
		t.Fatal("a fresh answer RefreshAfter old was not given")
	}
	p.evaluated(c, h, t, 5, other)
	newer, _, ok := p.Answer(other)
	if !ok || !newer.At.After(step.NotBefore.Add(DefaultRefreshAfter)) {
		t.Fatalf("the newer answer: %+v, %v", newer, ok)
	}

	// An answer that made a gate fail is dropped.
	p.Drop(other.Owner, newer.At.Add(-time.Millisecond)) // another answer's time: kept
	if !p.answerNow(other) {
		t.Fatal("Drop discarded an answer of another time")
	}
	p.Drop(other.Owner, newer.At)
	if p.answerNow(other) {
		t.Fatal("a dropped answer decided")
	}
	c.add(time.Millisecond) // past MinInterval
	h.waitStarts(t, 6)
	close(h.release)
}

// A RayService asking again and again while its evaluation hangs gets one evaluation in
// flight, not one per ask.
func TestPoolOneEvaluationPerRayService(t *testing.T) {
	h := newHeldEvaluator()
	p := startPool(t, h, PoolOptions{})
	a := ask("team-a", "svc")
	for range 50 {
		p.Answer(a)
	}
	h.waitStarts(t, 1)
	time.Sleep(50 * time.Millisecond)
	if got := h.starts(); len(got) != 1 {
		t.Fatalf("%d evaluations for one RayService", len(got))
	}
	close(h.release)
}
