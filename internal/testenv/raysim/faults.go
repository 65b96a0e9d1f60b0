package raysim

import (
	"net/http"
	"strings"
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
)

// Fault is a fault mode and its parameters.
type Fault struct {
	Mode FaultMode
	// Location is where FaultRedirect points.
	Location string
	// Bytes is the size of a FaultHuge answer.
	Bytes int
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

// MaxConcurrent is the most requests the simulators of a namespace were answering (or
// holding) at once.
func (r *Registry) MaxConcurrent(namespace string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxConcurrent[namespace]
}

// enter and leave count a namespace's requests in progress.
func (r *Registry) enter(namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.concurrent[namespace]++
	r.maxConcurrent[namespace] = max(r.maxConcurrent[namespace], r.concurrent[namespace])
}

func (r *Registry) leave(namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.concurrent[namespace]--
}
