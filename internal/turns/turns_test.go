package turns

import (
	"slices"
	"testing"
	"time"
)

type item struct {
	ns, name string
	retryAt  time.Time
}

func newScheduler(workers, perNamespace int) *Scheduler[*item] {
	return New(workers, perNamespace, func(i *item) time.Time { return i.retryAt })
}

func started(t *Scheduler[*item], now time.Time) []string {
	var out []string
	t.Dispatch(now, func(i *item) { out = append(out, i.ns+"/"+i.name) })
	return out
}

func TestNamespacesTakeTurnsWithinTheirLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newScheduler(3, 2)
	for _, name := range []string{"a", "b", "c", "d"} {
		s.Add("busy", &item{ns: "busy", name: name})
	}
	s.Add("quiet", &item{ns: "quiet", name: "x"})
	got := started(s, now)
	want := []string{"busy/a", "quiet/x", "busy/b"}
	if !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	if s.Queued() != 2 || s.InFlight() != 3 {
		t.Fatalf("queued %d, in flight %d; want 2, 3", s.Queued(), s.InFlight())
	}
	// A worker frees up in the quiet namespace: busy is at its limit, so nothing starts.
	s.Done("quiet")
	if got := started(s, now); len(got) != 0 {
		t.Fatalf("started %v past the per-namespace limit", got)
	}
	s.Done("busy")
	if got := started(s, now); !slices.Equal(got, []string{"busy/c"}) {
		t.Fatalf("started %v, want busy/c", got)
	}
	if total, inNS := s.MaxInFlight("busy"); total != 3 || inNS != 2 {
		t.Fatalf("max in flight %d (busy %d), want 3 (2)", total, inNS)
	}
}

func TestBackoffIsPassedOverAndTimed(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newScheduler(4, 4)
	s.Add("ns", &item{ns: "ns", name: "later", retryAt: now.Add(3 * time.Second)})
	s.Add("ns", &item{ns: "ns", name: "now"})
	var got []string
	wait := s.Dispatch(now, func(i *item) { got = append(got, i.name) })
	if !slices.Equal(got, []string{"now"}) || wait != 3*time.Second {
		t.Fatalf("started %v, wait %v; want [now], 3s", got, wait)
	}
	if got := started(s, now.Add(3*time.Second)); !slices.Equal(got, []string{"ns/later"}) {
		t.Fatalf("after the backoff started %v", got)
	}
}
