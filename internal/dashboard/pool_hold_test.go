package dashboard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A pass that read the pool before the dashboard's answer came asks for the same config
// again: the pool does not PUT a config the dashboard accepted a moment ago, and sends it
// again once acceptedHold is over.
func TestPoolHoldsAnAcceptedSubmission(t *testing.T) {
	var status atomic.Int64
	status.Store(http.StatusOK)
	srv, puts := countingServer(t, &status)
	clock := &fakeClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	p, done := startPool(t, PoolOptions{Now: clock.Now})
	tg := target("ns", "c", srv.URL)

	p.Submit(tg, Submission{ID: "a", Body: []byte(`{}`)})
	if d, _ := waitFor(t, done, "c", 5*time.Second); d.Outcome != Accepted {
		t.Fatalf("done %+v", d)
	}
	waitFor(t, done, "c", 5*time.Second) // the read the acceptance asks for

	clock.Add(acceptedHold - time.Millisecond)
	if p.Wants(tg, "a") {
		t.Error("Wants: the pool would send again a config accepted a moment ago")
	}
	p.Submit(tg, Submission{ID: "a", Body: []byte(`{}`)})
	time.Sleep(100 * time.Millisecond)
	if n := puts.Load(); n != 1 {
		t.Fatalf("%d PUTs; the accepted config was sent again within %v", n, acceptedHold)
	}
	if s := p.Snapshot(tg).Submission; s.Outcome != Accepted || s.Sending {
		t.Fatalf("the held submission changed state: %+v", s)
	}

	// Another config is not held by the first one's acceptance.
	if !p.Wants(tg, "b") {
		t.Error("Wants: a different config is held")
	}

	clock.Add(time.Millisecond)
	p.Submit(tg, Submission{ID: "a", Body: []byte(`{}`)})
	if d, _ := waitFor(t, done, "c", 5*time.Second); d.Submission == nil || d.Outcome != Accepted {
		t.Fatalf("done %+v", d)
	}
	if n := puts.Load(); n != 2 {
		t.Fatalf("%d PUTs; the config was not sent again after the hold", n)
	}
}

// headerTimeoutErr is what the HTTP transport returns when its response header timeout
// fires: a real one, from a server that never answers.
func headerTimeoutErr(t *testing.T) error {
	t.Helper()
	srv, _ := hangingServer(t)
	hc := NewHTTP()
	hc.Transport.(*http.Transport).ResponseHeaderTimeout = 50 * time.Millisecond
	_, err := (&HTTPClient{BaseURL: srv.URL, HTTP: hc, Timeout: time.Minute}).GetServeDetails(context.Background())
	if err == nil || !strings.Contains(err.Error(), "awaiting response headers") {
		t.Fatalf("want the transport's header timeout, got %v", err)
	}
	return err
}

func TestNoAnswerInTime(t *testing.T) {
	dial := func(inner error) error {
		return fmt.Errorf("the Ray dashboard is unreachable: %w", &url.Error{Op: "Get", URL: "http://127.0.0.1:8265/api/serve/applications/",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: inner}})
	}
	for _, tt := range []struct {
		name   string
		err    error
		ctxErr error
		want   bool
	}{
		{"answered", nil, nil, false},
		{"request deadline", fmt.Errorf("unreachable: %w", &url.Error{Op: "Get", URL: "u", Err: context.DeadlineExceeded}), context.DeadlineExceeded, true},
		{"transport's response header timeout, deadline not reached", headerTimeoutErr(t), nil, true},
		{"dial timeout", dial(os.ErrDeadlineExceeded), nil, false},
		{"dial cut short by the request deadline", dial(context.DeadlineExceeded), context.DeadlineExceeded, false},
		{"connection refused", dial(syscall.ECONNREFUSED), nil, false},
		{"HTTP 503", &Error{Op: "GET", URL: "u", StatusCode: http.StatusServiceUnavailable}, nil, false},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), context.Canceled, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := noAnswerInTime(tt.err, tt.ctxErr); got != tt.want {
				t.Errorf("noAnswerInTime(%v, %v) = %v, want %v", tt.err, tt.ctxErr, got, tt.want)
			}
		})
	}
}

// A hung read that the transport gives up on at its response header timeout, before the
// pool's own deadline, is reported as no answer in time, not in the transport's wording.
func TestPoolReportsTheHeaderTimeoutAsNoAnswerInTime(t *testing.T) {
	srv, _ := hangingServer(t)
	hc := NewHTTP()
	hc.Transport.(*http.Transport).ResponseHeaderTimeout = 100 * time.Millisecond
	p, done := startPool(t, PoolOptions{HTTP: hc, Timeout: 10 * time.Second, MinBackoff: time.Minute})
	tg := target("ns", "c", srv.URL)
	p.Refresh(tg)
	d, took := waitFor(t, done, "c", 8*time.Second)
	if took > 5*time.Second {
		t.Errorf("the read took %v; the header timeout is 100ms", took)
	}
	s := p.Snapshot(tg)
	if d.Err == nil || !strings.Contains(s.Err, "no answer within 100ms") || strings.Contains(s.Err, "awaiting") {
		t.Fatalf("error %q, want no answer within 100ms in raygate's words", s.Err)
	}
}
