// Package load sends bounded HTTP load at simulated Serve proxies (directly, through a
// Service's endpoints, or through a gateway) and records every response: status, latency and
// which Ray cluster answered. Tests and benchmarks read the summaries: requests sent, failed,
// p50/p99 latency and the traffic split per interval.
//
// Every connection is refused unless it goes to a loopback address (127.0.0.0/8 or ::1),
// so a misconfigured target can never send traffic off the machine.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ClusterHeader is the response header in which a simulated Serve proxy names the Ray
// cluster (namespace/name) that answered.
const ClusterHeader = "X-Ray-Cluster"

// Bounds every run is held to when Options leave them zero.
const (
	DefaultMaxRequests = 20000
	DefaultMaxDuration = 2 * time.Minute
	DefaultRate        = 50
	DefaultTimeout     = 2 * time.Second
	DefaultWorkers     = 4
)

// Target picks the base URL (scheme://host:port) of the next request; an error counts as a
// failed request (e.g. a Service with no ready endpoint).
type Target func(ctx context.Context) (string, error)

// URL is a Target that always returns the base URL u.
func URL(u string) Target { return func(context.Context) (string, error) { return u, nil } }

// Options bound and shape a run. The run stops at whichever comes first: MaxRequests sent,
// MaxDuration elapsed, Stop called or the context ended.
type Options struct {
	Target Target
	// Path is appended to the target's base URL (default "/").
	Path string
	// Host, when set, is the Host header (a gateway routes by it).
	Host string
	// Rate is the requests per second the run aims for (steady pacing, not a burst).
	Rate float64
	// Workers is how many requests may be in flight at once.
	Workers     int
	MaxRequests int
	MaxDuration time.Duration
	// Timeout bounds one request.
	Timeout time.Duration
	// OK decides whether a status counts as success; default 2xx.
	OK func(status int) bool
}

func (o Options) withDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Path == "" {
		o.Path = "/"
	}
	if o.OK == nil {
		o.OK = func(s int) bool { return s >= 200 && s < 300 }
	}
	return o
}

// Result is one request.
type Result struct {
	// At is when the request was sent, from the start of the run.
	At      time.Duration
	Latency time.Duration
	// Status is the HTTP status, 0 when no response came.
	Status int
	// Cluster is the ClusterHeader of the response ("" when none).
	Cluster string
	// Err is the transport or target error, or the reason the status is a failure.
	Err    string
	Failed bool
}

// Run is load in progress.
type Run struct {
	opts    Options
	client  *http.Client
	cancel  context.CancelFunc
	done    chan struct{}
	start   time.Time
	mu      sync.Mutex
	results []Result
}

// Start begins sending load in the background. Call Stop to end it and read the results.
func Start(ctx context.Context, opts Options) (*Run, error) {
	if opts.Target == nil {
		return nil, errors.New("load: no target")
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.MaxDuration)
	r := &Run{opts: opts, client: LoopbackClient(opts.Timeout), cancel: cancel, done: make(chan struct{}), start: time.Now()}
	go r.loop(ctx)
	return r, nil
}

// Stop ends the run (requests in flight finish) and returns its report.
func (r *Run) Stop() *Report {
	r.cancel()
	<-r.done
	return r.Report()
}

// Done is closed when the run has ended on its own bounds or was stopped.
func (r *Run) Done() <-chan struct{} { return r.done }

// Report is what the run has recorded so far.
func (r *Run) Report() *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Report{Results: append([]Result(nil), r.results...)}
}

func (r *Run) loop(ctx context.Context) {
	defer close(r.done)
	defer r.cancel()
	tick := time.NewTicker(time.Duration(float64(time.Second) / r.opts.Rate))
	defer tick.Stop()
	slots := make(chan struct{}, r.opts.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for sent := 0; sent < r.opts.MaxRequests; sent++ {
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			res := r.one(ctx)
			r.mu.Lock()
			r.results = append(r.results, res)
			r.mu.Unlock()
		}()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// one sends a request. A run that is stopped lets its requests in flight finish on their
// own timeout, so stopping never turns an answer into a failure.
func (r *Run) one(ctx context.Context) Result {
	at := time.Since(r.start)
	res := Result{At: at}
	// The target (e.g. reading a Service's pods) is bounded by the request timeout, not by
	// the run, for the same reason.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	base, err := r.opts.Target(tctx)
	cancel()
	if err != nil {
		res.Err, res.Failed = "target: "+err.Error(), true
		return res
	}
	url := strings.TrimSuffix(base, "/") + r.opts.Path
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, url, nil)
	if err != nil {
		res.Err, res.Failed = err.Error(), true
		return res
	}
	if r.opts.Host != "" {
		req.Host = r.opts.Host
	}
	t0 := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		res.Latency, res.Err, res.Failed = time.Since(t0), err.Error(), true
		return res
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	res.Latency = time.Since(t0)
	res.Status, res.Cluster = resp.StatusCode, resp.Header.Get(ClusterHeader)
	if !r.opts.OK(resp.StatusCode) {
		res.Err, res.Failed = fmt.Sprintf("status %d from %s", resp.StatusCode, url), true
	}
	return res
}

// Once runs a whole bounded load to its end (MaxRequests or MaxDuration) and reports it.
func Once(ctx context.Context, opts Options) (*Report, error) {
	r, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	<-r.Done()
	return r.Report(), nil
}

// LoopbackClient is an HTTP client that dials loopback addresses only, follows no redirects
// and keeps no connection open across requests longer than a proxy would (so a listener
// that closes is noticed as a real client would notice it).
func LoopbackClient(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Control: loopbackOnly}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     time.Second,
			Proxy:               nil,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// loopbackOnly refuses a connection to anything but a loopback address.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("load: refusing %q: %w", address, err)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("load: refusing %s: not a loopback address", address)
	}
	return nil
}
