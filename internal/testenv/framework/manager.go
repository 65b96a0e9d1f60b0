package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/controlplane"
)

// Manager is a raygate manager running in-process.
type Manager struct {
	ctrl.Manager
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	stopErr  error
	// stale is, by controller, what the process's workqueue depth gauge said before this
	// manager started: items an earlier, stopped manager's queue never took stay in it.
	stale map[string]float64
	// Writes counts every write the manager sends to the API server, by verb and resource
	// ("create pods", "update rayclusters/status", "create events", ...).
	Writes *Writes
	// Refusals are the requests the API server refused the manager (403 Forbidden).
	Refusals *Refusals
	// Who names the manager's identity in reports.
	Who string
}

// ManagerOptions are app.DefaultOptions for tests: no metrics or probe listeners, no leader
// election, webhooks off, and managers may be started more than once in the process.
func ManagerOptions() app.Options {
	o := app.DefaultOptions()
	o.SkipControllerNameValidation = true
	o.MetricsAddr = "0"
	o.ProbeAddr = "0"
	o.LeaderElect = false
	o.EnableWebhooks = false
	return o
}

// StartManager builds the raygate manager (app.NewManager) against env and runs it, with
// the control plane's admin rights, until Stop. With opts.EnableWebhooks the webhook server
// listens where env's webhook configuration points. It returns once the caches are synced.
func StartManager(env *controlplane.Env, opts app.Options) (*Manager, error) {
	return StartManagerAs(env, env.Config, opts)
}

// StartManagerAs is StartManager with the manager talking to the API server as cfg says:
// ServiceAccount.Config for the rights the chart grants.
func StartManagerAs(env *controlplane.Env, cfg *rest.Config, opts app.Options) (*Manager, error) {
	if opts.EnableWebhooks {
		opts.WebhookHost, opts.WebhookPort, opts.WebhookCertDir = env.WebhookServing()
	}
	writes, refusals := &Writes{}, &Refusals{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, writes: writes} })
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &refusalTransport{next: rt, refusals: refusals} })
	who := "the manager (admin)"
	if u := cfg.Impersonate.UserName; u != "" {
		who = "the manager (" + u + ")"
	}
	mgr, err := app.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, prefixed("\n", RefusalReport(who, refusals.Snapshot())))
	}
	stale, err := queuedBeforeStart()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{Manager: mgr, cancel: cancel, done: make(chan error, 1), Writes: writes, Refusals: refusals, Who: who, stale: stale}
	started := make(chan error, 1)
	go func() { started <- mgr.Start(ctx) }()
	if err := waitSynced(ctx, mgr.GetCache().WaitForCacheSync, started, m.done, cacheSyncTimeout); err != nil {
		_ = m.Stop()
		// A cache that may not list or watch never syncs: say why.
		return nil, fmt.Errorf("%w%s", err, prefixed("; ", RefusalReport(who, refusals.Snapshot())))
	}
	return m, nil
}

// cacheSyncTimeout bounds how long StartManager waits for the manager's caches.
const cacheSyncTimeout = 30 * time.Second

// waitSynced waits until synced reports the caches synced, within timeout. When the
// manager's Start returns first (its webhook server could not listen, say), that error is
// the answer at once, instead of a cache that never syncs because its manager has stopped.
// Start's result is passed on to done, where Stop reads it.
func waitSynced(ctx context.Context, synced func(context.Context) bool, started <-chan error, done chan<- error, timeout time.Duration) error {
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	result := make(chan bool, 1)
	go func() { result <- synced(syncCtx) }()
	select {
	case ok := <-result:
		go func() { done <- <-started }()
		if !ok {
			return fmt.Errorf("manager caches did not sync within %s", timeout)
		}
		return nil
	case err := <-started:
		done <- err
		cancel()
		<-result
		if err == nil {
			err = errors.New("it returned no error")
		}
		return fmt.Errorf("manager stopped before its caches synced: %w", err)
	}
}

// prefixed is s after sep, or "" when s is.
func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// Stop stops the manager and waits until it has exited (its controllers stopped and its
// caches closed); the next StartManager starts from empty memory.
// Stop is idempotent.
func (m *Manager) Stop() error {
	m.stopOnce.Do(func() {
		m.cancel()
		select {
		case m.stopErr = <-m.done:
		case <-time.After(60 * time.Second):
			m.stopErr = fmt.Errorf("manager did not stop within 60s")
		}
	})
	return m.stopErr
}

// managedControllers are the controllers a raygate manager runs.
var managedControllers = []string{"raycluster", "rayservice"}

func queuedBeforeStart() (map[string]float64, error) {
	out := map[string]float64{}
	for _, c := range managedControllers {
		depth, err := Sum("workqueue_depth", map[string]string{"controller": c})
		if err != nil {
			return nil, err
		}
		out[c] = depth
	}
	return out, nil
}

// Idle reports whether this manager's controllers have handled every event they have seen.
// The workqueue gauges are per controller name and process, so what earlier managers' queues
// were left holding when they stopped is not counted as this manager's work; a suite that
// restarts its manager must ask the running one.
func (m *Manager) Idle(controllers ...string) (bool, error) {
	return idle(m.stale, controllers...)
}
