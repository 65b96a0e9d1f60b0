package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// hangingServer accepts connections and requests and never answers, until the test ends.
func hangingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, &calls
}

func healthyServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			return
		}
		_, _ = w.Write([]byte(`{"applications":{"app":{"name":"app","status":"RUNNING"}}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func target(ns, name, url string) Target {
	c := types.NamespacedName{Namespace: ns, Name: name}
	return Target{Head: Head{Cluster: c, Pod: types.UID(name + "-head")}, URL: url, Owner: c}
}

// startPool runs a pool whose completions arrive on the returned channel.
func startPool(t *testing.T, o PoolOptions) (*Pool, <-chan Done) {
	t.Helper()
	done := make(chan Done, 1024)
	o.OnDone = func(d Done) { done <- d }
	p := NewPool(o)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = p.Start(ctx) }()
	t.Cleanup(cancel)
	return p, done
}

// waitFor returns the first completion for cluster within limit, and how long it took.
func waitFor(t *testing.T, done <-chan Done, cluster string, limit time.Duration) (Done, time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := time.After(limit)
	for {
		select {
		case d := <-done:
			if d.Target.Head.Cluster.Name == cluster {
				return d, time.Since(start)
			}
		case <-deadline:
			t.Fatalf("no answer for %s within %v", cluster, limit)
		}
	}
}

// One namespace's dashboards that never answer hold at most PerNamespace workers: another
// namespace's request starts at once, long before any hung request times out.
func TestPoolOneNamespaceNeverHoldsMoreThanItsShare(t *testing.T) {
	hung, calls := hangingServer(t)
	ok := healthyServer(t)
	p, done := startPool(t, PoolOptions{Workers: 4, PerNamespace: 2, Timeout: 5 * time.Second})
	for i := range 8 {
		p.Refresh(target("attacker", fmt.Sprintf("slow-%d", i), hung.URL))
	}
	for calls.Load() < 2 {
		select {
		case <-done:
			t.Fatal("a hung request ended early")
		case <-time.After(10 * time.Millisecond):
		}
	}
	p.Refresh(target("victim", "fast", ok.URL))
	d, took := waitFor(t, done, "fast", 2*time.Second)
	if d.Err != nil || took > time.Second {
		t.Fatalf("the victim's read took %v: %v", took, d.Err)
	}
	if total, attacker := p.MaxInFlight("attacker"); attacker > 2 || total > 4 {
		t.Fatalf("in flight at most: %d in all, %d for the attacker", total, attacker)
	}
	if s := p.Snapshot(target("victim", "fast", ok.URL)); s.Details == nil || s.Details.Applications["app"].Status != "RUNNING" {
		t.Fatalf("snapshot %+v", s)
	}
}

// With every worker held by slow namespaces, a request still starts within one timeout:
// namespaces take turns, so it waits behind one request per busy namespace at most.
func TestPoolWaitIsBoundedByTheTimeoutWhenAllWorkersAreHeld(t *testing.T) {
	hung, _ := hangingServer(t)
	ok := healthyServer(t)
	const timeout = 400 * time.Millisecond
	p, done := startPool(t, PoolOptions{Workers: 2, PerNamespace: 1, Timeout: timeout, MinBackoff: time.Minute})
	for ns := range 2 {
		for i := range 5 {
			p.Refresh(target(fmt.Sprintf("attacker-%d", ns), fmt.Sprintf("slow-%d", i), hung.URL))
		}
	}
	p.Refresh(target("victim", "fast", ok.URL))
	// Workers 2, namespaces queueing 3: ceil(3/2) = 2 timeouts at most.
	d, took := waitFor(t, done, "fast", 3*timeout)
	if d.Err != nil || took > 2*timeout+200*time.Millisecond {
		t.Fatalf("the victim's read took %v (bound %v): %v", took, 2*timeout, d.Err)
	}
}

// A failing dashboard is asked again only after a doubling backoff; its error text does
// not change between attempts (the status quoting it is not rewritten).
func TestPoolBacksOffAFailingDashboard(t *testing.T) {
	hung, calls := hangingServer(t)
	const timeout = 50 * time.Millisecond
	p, done := startPool(t, PoolOptions{Timeout: timeout, MinBackoff: 200 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
	tg := target("ns", "c", hung.URL)
	var errs []string
	for range 4 {
		p.Refresh(tg)
		d, _ := waitFor(t, done, "c", 2*time.Second)
		if d.Err == nil {
			t.Fatal("a hung read succeeded")
		}
		errs = append(errs, p.Snapshot(tg).Err)
	}
	if errs[0] != errs[3] || errs[0] == "" {
		t.Errorf("errors %q", errs)
	}
	if calls.Load() != 4 {
		t.Errorf("%d calls, want 4", calls.Load())
	}
	// Asked during the backoff, it waits: the next attempt is at least MaxBackoff after the last.
	start := time.Now()
	p.Refresh(tg)
	waitFor(t, done, "c", 2*time.Second)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("asked again after %v, inside the backoff", took)
	}
}

// countingServer answers PUTs with status and counts them.
func countingServer(t *testing.T, status *atomic.Int64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var puts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			puts.Add(1)
			if s := int(status.Load()); s != http.StatusOK {
				http.Error(w, "nope\x1b[31m", s)
			}
			return
		}
		_, _ = w.Write([]byte(`{"applications":{}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &puts
}

func TestPoolSubmissions(t *testing.T) {
	var status atomic.Int64
	status.Store(http.StatusOK)
	srv, puts := countingServer(t, &status)
	p, done := startPool(t, PoolOptions{MinBackoff: 10 * time.Millisecond, RefusedRetry: time.Hour})
	tg := target("ns", "c", srv.URL)

	// Accepted: recorded, and the status read before it is stale until read again, which
	// the pool does by itself.
	p.Submit(tg, Submission{ID: "a", Body: []byte(`{}`)})
	if d, _ := waitFor(t, done, "c", 2*time.Second); d.Outcome != Accepted || d.Submission.ID != "a" {
		t.Fatalf("done %+v", d)
	}
	s := p.Snapshot(tg)
	if s.Accepted == nil || s.Accepted.ID != "a" || s.Submission.Outcome != Accepted || s.Submission.Sending {
		t.Fatalf("after acceptance %+v %+v", s.Accepted, s.Submission)
	}
	if d, _ := waitFor(t, done, "c", 2*time.Second); d.Submission != nil || p.Snapshot(tg).Stale {
		t.Fatalf("no fresh read after the acceptance: %+v", d)
	}

	// Refused (400): not sent again unchanged; a different config is.
	status.Store(http.StatusBadRequest)
	p.Submit(tg, Submission{ID: "b", Body: []byte(`{}`)})
	if d, _ := waitFor(t, done, "c", 2*time.Second); d.Outcome != Refused {
		t.Fatalf("done %+v", d)
	}
	s = p.Snapshot(tg)
	if !s.Submission.BadRequest || s.Submission.Message == "" || s.Accepted.ID != "a" {
		t.Fatalf("after refusal %+v", s.Submission)
	}
	for _, r := range s.Submission.Message {
		if r < ' ' {
			t.Fatalf("unsanitized message %q", s.Submission.Message)
		}
	}
	p.Submit(tg, Submission{ID: "b", Body: []byte(`{}`)})
	if n := puts.Load(); n != 2 {
		t.Fatalf("%d PUTs; the refused config was sent again", n)
	}

	// Failed (503): sent again, after the backoff, when asked again.
	status.Store(http.StatusServiceUnavailable)
	p.Submit(tg, Submission{ID: "c", Body: []byte(`{}`)})
	if d, _ := waitFor(t, done, "c", 2*time.Second); d.Outcome != Failed {
		t.Fatalf("done %+v", d)
	}
	status.Store(http.StatusOK)
	p.Submit(tg, Submission{ID: "c", Body: []byte(`{}`)})
	if p.Snapshot(tg).Submission.Outcome != Failed {
		t.Fatal("the failure was forgotten while the retry is queued")
	}
	if d, _ := waitFor(t, done, "c", 2*time.Second); d.Outcome != Accepted {
		t.Fatalf("retry %+v", d)
	}

	// A new head pod knows nothing of what the old one was given.
	tg.Head.Pod = "new-head"
	if s := p.Snapshot(tg); s.Submission != nil || s.Accepted != nil || s.Details != nil {
		t.Fatalf("new head: %+v", s)
	}
}

// Redirects are answers, never followed: a PUT is not re-sent anywhere.
func TestPoolNeverFollowsARedirect(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+ApplicationsPath, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	p, done := startPool(t, PoolOptions{})
	p.Submit(target("ns", "c", redirect.URL), Submission{ID: "x", Body: []byte(`{"applications":[]}`)})
	if d, _ := waitFor(t, done, "c", 2*time.Second); d.Outcome == Accepted {
		t.Fatalf("a redirect counted as accepted: %+v", d)
	}
	if elsewhere.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

func TestPoolTurnsGoRoundTheNamespaces(t *testing.T) {
	var mu sync.Mutex
	var order []string
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		mu.Lock()
		order = append(order, strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0])
		mu.Unlock()
		_, _ = w.Write([]byte(`{"applications":{}}`))
	}))
	t.Cleanup(srv.Close)
	p, done := startPool(t, PoolOptions{Workers: 1, PerNamespace: 1})
	// The first request holds the only worker while the queues fill: a busy namespace with
	// many clusters, then two namespaces with one each.
	p.Refresh(target("first", "c", srv.URL+"/first"))
	for i := range 4 {
		p.Refresh(target("busy", fmt.Sprint("c", i), srv.URL+"/busy"))
	}
	p.Refresh(target("a", "c", srv.URL+"/a"))
	p.Refresh(target("b", "c", srv.URL+"/b"))
	close(gate)
	for range 7 {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("requests did not finish")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// a and b go before the busy namespace's second request.
	if got := fmt.Sprint(order); got != "[first busy a b busy busy busy]" {
		t.Errorf("order %s", got)
	}
}
