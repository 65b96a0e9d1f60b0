package raysim

import (
	"testing"
	"time"
)

// A client that gives up on a request and sends the next at once is one request in flight,
// even though the simulator notices the first one end a moment later; requests that really
// overlap are counted.
func TestMaxConcurrentAllowsForNoticingAClosedConnection(t *testing.T) {
	t0 := time.Now().Add(-time.Minute)
	l := &requestLog{spans: []*requestSpan{
		{start: t0, end: t0.Add(5*time.Second + 10*time.Millisecond)}, // its client left at 5 s
		{start: t0.Add(5 * time.Second), end: t0.Add(10 * time.Second)},
		{start: t0.Add(9 * time.Second)}, // still held
	}}
	if got := l.maxAt(time.Now()); got != 2 {
		t.Errorf("max in flight = %d, want 2 (the second and third overlap; the first had ended)", got)
	}
	now := time.Now()
	l.spans = append(l.spans, &requestSpan{start: now}, &requestSpan{start: now})
	if got := l.maxAt(now.Add(-closeGrace)); got != 2 {
		t.Errorf("requests started within the grace counted: %d", got)
	}
	if got := l.maxAt(now.Add(time.Second)); got != 3 {
		t.Errorf("max in flight = %d, want 3 (the held one and the two new ones) once they are older than the grace", got)
	}
}
