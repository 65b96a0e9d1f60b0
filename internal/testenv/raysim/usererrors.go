package raysim

import (
	"context"
	"math"
	"net/http"
	"sync"
	"time"
)

// userErrors makes a cluster's Serve proxy fail a share of the user requests it would have
// answered with 200, as a bad release of an application would: HTTP 500 with the cluster
// header, so a load generator and a gateway's metrics both attribute the failure. The
// choice is deterministic (error diffusion over the request count): of any n consecutive
// requests, round(n×ratio) ± 1 fail, so a short window already shows the ratio.
type userErrors struct {
	mu            sync.Mutex
	ratio         float64
	served, fails int64
	// latency is how long the application takes to answer each user request (SetUserLatency).
	latency time.Duration
}

// next counts a request the proxy would answer with 200 and says whether to fail it and how
// long the application takes over it first.
func (u *userErrors) next() (fail bool, latency time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.served++
	if u.ratio <= 0 {
		return false, u.latency
	}
	// Request n fails when floor(n·ratio) steps up: exactly floor(n·ratio) of the first n fail.
	if math.Floor(float64(u.served)*u.ratio) > float64(u.fails) {
		u.fails++
		return true, u.latency
	}
	return false, u.latency
}

// SetUserLatency makes the cluster's applications take d (at least 0) over every user request
// they are routed from now on, failed ones included, as a slow release would: the proxy's
// and the replicas' latency histograms show it. Health checks are not delayed.
func (s *Server) SetUserLatency(d time.Duration) {
	s.userErrors.mu.Lock()
	defer s.userErrors.mu.Unlock()
	s.userErrors.latency = max(d, 0)
}

// sleepCtx waits d, or less when ctx ends first (false then).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// SetUserErrorRatio makes the cluster's Serve proxy answer HTTP 500 to the share ratio
// (clamped to [0, 1]) of the user requests it would answer with 200 from now on; 0 stops
// it. Health checks (/-/healthz) and requests that fail anyway (404, 503) are not counted.
func (s *Server) SetUserErrorRatio(ratio float64) {
	if math.IsNaN(ratio) {
		ratio = 0
	}
	s.userErrors.mu.Lock()
	defer s.userErrors.mu.Unlock()
	s.userErrors.ratio = min(max(ratio, 0), 1)
	s.userErrors.served, s.userErrors.fails = 0, 0
}

// UserRequests is how many user requests the proxy routed to a RUNNING application since
// the last SetUserErrorRatio, and how many of them it failed on purpose.
func (s *Server) UserRequests() (routed, failed int64) {
	s.userErrors.mu.Lock()
	defer s.userErrors.mu.Unlock()
	return s.userErrors.served, s.userErrors.fails
}

// userErrorBody is what a failed user request answers.
const userErrorBody = "simulated application error (raysim SetUserErrorRatio)"

func writeUserError(w http.ResponseWriter) {
	http.Error(w, userErrorBody, http.StatusInternalServerError)
}
