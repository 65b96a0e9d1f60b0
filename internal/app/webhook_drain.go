package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// errDraining is what /readyz reports while the webhook server drains.
var errDraining = errors.New("webhook server is draining before shutdown")

// webhookIdleTimeout is how long the webhook server keeps an idle kept-alive connection
// open. The API server's webhook client drops idle connections after 90 s (client-go's
// transport takes net/http's default), and controller-runtime's server closes them after
// the same 90 s: when both expire together, the API server can send an admission request
// on a connection the server is closing, and it does not retry an admission POST, so the
// user's write fails with "failed calling webhook ... broken pipe" (seen under load in the
// hostile suite). With a longer server timeout it is always the client that closes.
const webhookIdleTimeout = 150 * time.Second

// webhookShutdownTimeout bounds the graceful shutdown after the drain, as controller-runtime's.
const webhookShutdownTimeout = time.Minute

// drainingServer is the webhook server. It registers hooks through controller-runtime's
// server (its mux and metrics) and serves them itself, for two reasons.
//
// The idle timeout: see webhookIdleTimeout.
//
// The drain between the stop signal and the graceful shutdown. The API server keeps
// connections to a webhook pod alive and does not retry an admission request whose
// connection was closed under it, so a plain shutdown refuses the requests that race with
// it. For drain after the manager stops the server, the server keeps answering, /readyz
// fails, and every answer carries `Connection: close`, which makes the API server drop the
// kept-alive connection and dial again, through the Service, to a replica that is not
// stopping. Then the server shuts down gracefully.
type drainingServer struct {
	webhook.Server
	opts        webhook.Options
	drain       time.Duration
	idleTimeout time.Duration // webhookIdleTimeout; shorter in tests
	started     atomic.Bool
	draining    atomic.Bool
}

// newDrainingServer serves the hooks registered with a server made from opts (as
// webhook.NewServer's, whose defaults apply); a drain of zero shuts down at once.
func newDrainingServer(opts webhook.Options, drain time.Duration) *drainingServer {
	if opts.Port <= 0 {
		opts.Port = webhook.DefaultPort
	}
	if opts.CertName == "" {
		opts.CertName = "tls.crt"
	}
	if opts.KeyName == "" {
		opts.KeyName = "tls.key"
	}
	if opts.WebhookMux == nil { // controller-runtime's server registers into it; Start serves it
		opts.WebhookMux = http.NewServeMux()
	}
	return &drainingServer{Server: webhook.NewServer(opts), opts: opts, drain: drain, idleTimeout: webhookIdleTimeout}
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

func (s *drainingServer) address() string {
	return net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
}

// StartedChecker is ready once the server serves TLS (a local handshake succeeds), and not
// while draining.
func (s *drainingServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if s.draining.Load() {
			return errDraining
		}
		if !s.started.Load() {
			return errors.New("webhook server has not been started yet")
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		// Only the handshake is checked, against the server's own address.
		conn, err := tls.DialWithDialer(d, "tcp", s.address(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness probe of our own listener
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		return conn.Close()
	}
}

// Start serves until ctx ends, drains, then shuts down gracefully.
func (s *drainingServer) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhook")
	// Requests and the certificate watcher outlive ctx by the drain: they end with the server.
	serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	cfg := &tls.Config{NextProtos: []string{"h2"}} // TLSOpts set the minimum version and HTTP/2 (options.go)
	for _, op := range s.opts.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate == nil {
		w, err := certwatcher.New(filepath.Join(s.opts.CertDir, s.opts.CertName), filepath.Join(s.opts.CertDir, s.opts.KeyName))
		if err != nil {
			return err
		}
		cfg.GetCertificate = w.GetCertificate
		go func() {
			if err := w.Start(serving); err != nil {
				log.Error(err, "watching the serving certificate")
			}
		}()
	}
	ln, err := tls.Listen("tcp", s.address(), cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.opts.WebhookMux,
		BaseContext:       func(net.Listener) context.Context { return serving },
		MaxHeaderBytes:    1 << 20,
		ReadHeaderTimeout: 32 * time.Second,
		IdleTimeout:       s.idleTimeout,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.started.Store(true)
	log.Info("serving webhooks", "address", s.address(), "idleTimeout", s.idleTimeout.String())

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	if s.drain > 0 {
		s.draining.Store(true)
		log.Info("draining the webhook server before shutdown", "drain", s.drain.String())
		t := time.NewTimer(s.drain)
		select {
		case err := <-served:
			t.Stop()
			return err
		case <-t.C:
		}
		log.Info("webhook server drained; shutting down")
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), webhookShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}
