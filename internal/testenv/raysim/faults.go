package raysim

import (
	"net/http"
	"strings"
	"time"
)

// FaultMode is how a hostile or broken head pod answers the Serve API.
type FaultMode int

const (
	// FaultNone: the simulator behaves like Ray.
	FaultNone FaultMode = iota
	// FaultHang accepts the connection and the request, then never answers (until the
	// client gives up or the simulator is closed): a head that holds whoever calls it.
	FaultHang
	// FaultRedirect answers every request with a 307 to Fault.Location, which would make a
	// client that follows redirects re-send a PUT, body and all, somewhere else.
	FaultRedirect
	// FaultHuge answers with a JSON document of Fault.Bytes bytes (default 4 MiB).
	FaultHuge
	// FaultNoisy answers errors whose text is long and full of control characters.
	FaultNoisy
	// FaultDense answers every read of the Serve status with DenseAnswer(Fault.Deployments)
	// and accepts every config.
	FaultDense
)

// Fault is a fault mode and its parameters.
type Fault struct {
	Mode FaultMode
	// Location is where FaultRedirect points.
	Location string
	// Bytes is the size of a FaultHuge answer.
	Bytes int
	// Deployments is how many deployments a FaultDense answer lists.
	Deployments int
}

// SetFault makes every later request meet the fault (FaultNone: behave again).
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests is how many requests the simulator received, faulty ones included.
func (s *Server) Requests() int64 { return s.requests.Load() }

func (s *Server) misbehave(w http.ResponseWriter, r *http.Request, f Fault) {
	switch f.Mode {
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-s.held:
		}
	case FaultRedirect:
		http.Redirect(w, r, f.Location, http.StatusTemporaryRedirect)
	case FaultHuge:
		n := f.Bytes
		if n <= 0 {
			n = 4 << 20
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"applications":{},"padding":"` + strings.Repeat("x", max(n-32, 0)) + `"}`))
	case FaultDense:
		serveDense(w, r, f.Deployments)
	case FaultNoisy:
		http.Error(w, strings.Repeat("Traceback\x1b[31m\r\n\tFile \"/home/ray/evil.py\"\x00", 200), http.StatusInternalServerError)
	}
}

// releaseHeld lets every request held by FaultHang go.
func (s *Server) releaseHeld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.held:
	default:
		close(s.held)
	}
}

// SetNamespaceFault gives every simulator of a namespace the fault, those made later too.
func (r *Registry) SetNamespaceFault(namespace string, f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[namespace] = f
	for c, s := range r.servers {
		if c.Namespace == namespace {
			s.SetFault(f)
		}
	}
}

// closeGrace is how long the simulator may take to notice that a client gave up on a
// request (closed its connection): a client that gives up on one request and sends the next
// at once must not look like two requests in flight.
const closeGrace = 50 * time.Millisecond

// maxRequestLog bounds the requests remembered per namespace.
const maxRequestLog = 4096

// requestSpan is one request: when it started and ended (zero: in progress).
type requestSpan struct{ start, end time.Time }

// requestLog is a namespace's recent requests and the most seen at once among those
// forgotten.
type requestLog struct {
	spans     []*requestSpan
	forgotten int64
}

// maxAt is the most requests in flight at once at any instant up to horizon, counting a
// request as ended closeGrace before the simulator saw it end.
func (l *requestLog) maxAt(horizon time.Time) int64 {
	var most int64
	for _, x := range l.spans {
		if x.start.After(horizon) {
			continue
		}
		var n int64
		for _, t := range l.spans {
			if !t.start.After(x.start) && (t.end.IsZero() || x.start.Before(t.end.Add(-closeGrace))) {
				n++
			}
		}
		most = max(most, n)
	}
	return max(most, l.forgotten)
}

// MaxConcurrent is the most requests the simulators of a namespace were answering (or
// holding) at once, up to closeGrace ago.
func (r *Registry) MaxConcurrent(namespace string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.requests[namespace]
	if l == nil {
		return 0
	}
	return l.maxAt(time.Now().Add(-closeGrace))
}

// enter records a request of the namespace; the function it returns records its end.
func (r *Registry) enter(namespace string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.requests[namespace]
	if l == nil {
		l = &requestLog{}
		r.requests[namespace] = l
	}
	if len(l.spans) >= maxRequestLog {
		l.forgotten = l.maxAt(time.Now().Add(-closeGrace))
		kept := l.spans[:0]
		for _, sp := range l.spans {
			if sp.end.IsZero() || time.Since(sp.end) < time.Second {
				kept = append(kept, sp)
			}
		}
		l.spans = kept
	}
	sp := &requestSpan{start: time.Now()}
	l.spans = append(l.spans, sp)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		sp.end = time.Now()
	}
}
