package app

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// errDraining is what /readyz reports while the webhook server drains.
var errDraining = errors.New("webhook server is draining before shutdown")

// drainingServer is the webhook server with a drain between the stop signal and the
// graceful shutdown. The API server keeps connections to a webhook pod alive and does not
// retry an admission request whose connection was closed under it, so a plain shutdown
// refuses the requests that race with it. For drain after the manager stops the server,
// the server keeps answering, /readyz fails, and every answer carries `Connection: close`,
// which makes the API server drop the kept-alive connection and dial again, through the
// Service, to a replica that is not stopping. Then the server shuts down gracefully.
type drainingServer struct {
	webhook.Server
	drain    time.Duration
	draining atomic.Bool
}

// newDrainingServer wraps srv; a drain of zero shuts down at once, as srv alone does.
func newDrainingServer(srv webhook.Server, drain time.Duration) *drainingServer {
	return &drainingServer{Server: srv, drain: drain}
}

// Register serves hook at path, closing the connection after each answer while draining.
func (s *drainingServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		hook.ServeHTTP(w, r)
	}))
}

// StartedChecker is ready once the wrapped server serves TLS, and not while draining.
func (s *drainingServer) StartedChecker() healthz.Checker {
	started := s.Server.StartedChecker()
	return func(req *http.Request) error {
		if s.draining.Load() {
			return errDraining
		}
		return started(req)
	}
}

// Start serves until ctx ends, drains, then shuts the wrapped server down.
func (s *drainingServer) Start(ctx context.Context) error {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Server.Start(inner) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if s.drain > 0 {
		s.draining.Store(true)
		log := ctrl.Log.WithName("webhook")
		log.Info("draining the webhook server before shutdown", "drain", s.drain.String())
		t := time.NewTimer(s.drain)
		select {
		case err := <-done:
			t.Stop()
			return err
		case <-t.C:
		}
		log.Info("webhook server drained; shutting down")
	}
	cancel()
	return <-done
}
