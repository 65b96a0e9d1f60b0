// Package localmode runs raygate the way `make run` and `make demo` show it: a whole
// Kubernetes control plane without containers (internal/testenv/kwokcluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok playing the kubelet of a few Nodes), the
// raygate manager in this process with its admission webhooks called by the API server over
// TLS, a simulated Ray dashboard for every RayCluster, and Traefik (internal/testenv/traefik)
// as the Gateway API implementation of the GatewayClass raygate-local: it writes the status
// of raygate's Gateways and HTTPRoutes and routes requests by their weights to the serve
// pods' EndpointSlice addresses. A user reaches it with a kubeconfig at a stable path and
// the kubectl built for the control plane.
//
// Each simulated dashboard serves the Ray Jobs API too, and a RayJob's K8sJobMode submitter
// pods run without containers: kwok makes them Running but does not complete them
// (kwokcluster.Options.HeldJobPods), and framework.Submitters carries out their `ray job
// submit` script against the simulated cluster and sets them Succeeded or Failed, so
// kube-controller-manager's Job controller sees the submitter Job finish. A SidecarMode head
// pod's submitter container is carried out the same way (kwok would keep it running for
// ever): it ends with the script's exit code while the head runs on.
package localmode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/invariants"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/proc"
	"github.com/raygate/raygate/internal/testenv/prometheus"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/traefik"
)

const (
	// GatewayClassName is the GatewayClass Traefik implements.
	GatewayClassName = "raygate-local"
)

// Options shape the environment. The zero value is what `make run` uses.
type Options struct {
	// Dir holds the kubeconfig, the operator log and the components' logs (default DefaultDir()).
	Dir string
	// Nodes is the number of simulated Nodes (default 3).
	Nodes int
	// DeployDelay is how long a simulated Serve application stays DEPLOYING before it is
	// RUNNING (default 5s).
	DeployDelay time.Duration
	// JobDuration is how long a simulated Ray job runs before it SUCCEEDS (default 10s); it
	// is PENDING for a second before.
	JobDuration time.Duration
	// LogLevel is the operator's log level (default info).
	LogLevel string
	// Progress receives one line per phase of start-up (nil: discarded).
	Progress io.Writer
	// OnViolation, when set, is called for every invariant violation the checker records
	// (in namespace default); they are also appended to ViolationsPath(Dir).
	OnViolation func(invariants.Violation)
	// NoPrometheus leaves Prometheus out (prometheus.go): no scrapes, and raygate runs
	// without --prometheus-url, so gated upgrades wait.
	NoPrometheus bool
}

func (o Options) withDefaults() Options {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.DeployDelay == 0 {
		o.DeployDelay = 5 * time.Second
	}
	if o.JobDuration == 0 {
		o.JobDuration = 10 * time.Second
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// NodeCapacity is each simulated Node's size: a common cloud machine, so `kubectl describe
// node` reads like a real cluster and the samples' requests are scheduled as they would be.
func NodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

// Env is a running local environment.
type Env struct {
	Session
	Cluster *kwokcluster.Cluster
	// Dashboards are the simulated Ray dashboards, one per RayCluster the operator asked for.
	Dashboards *raysim.Registry

	// Gateway is Traefik; its URL is where clients reach raygate's Gateways.
	Gateway *traefik.Traefik
	// endpoints publishes serve pods' loopback IPs for Traefik (see traefik.LoopbackEndpoints).
	endpoints *traefik.LoopbackEndpoints
	pods      *framework.PodServers // the simulators' listeners on pod IPs
	prom      *localPrometheus      // nil with Options.NoPrometheus
	recorder  *recorder
	cancel    context.CancelFunc
	mgrDone   chan struct{} // closed when the manager returned, with mgrErr
	mgrErr    error
	lock      *lock
	closeLog  func()

	// submitters run RayJob submitter pods against the simulators.
	submitters *framework.Submitters
}

// Start brings the environment up and returns once the webhooks answer the API server and
// the controllers run. On error nothing is left running. Stop it when done.
func Start(ctx context.Context, o Options) (_ *Env, err error) {
	o = o.withDefaults()
	l, err := acquire(o.Dir)
	if err != nil {
		return nil, err
	}
	e := &Env{lock: l, Session: Session{Dir: o.Dir, Kubeconfig: KubeconfigPath(o.Dir)}}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if stopped := reapOrphans(o.Dir); len(stopped) > 0 {
		fmt.Fprintf(o.Progress, "stopped what a previous run left behind: %s\n", strings.Join(stopped, ", "))
	}
	if e.closeLog, err = operatorLogger(e.OperatorLog(), o.LogLevel); err != nil {
		return nil, err
	}
	// The demo environment shows incremental upgrades, which are behind an alpha gate.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.RayServiceIncrementalUpgrade): true}); err != nil {
		return nil, err
	}

	fmt.Fprintf(o.Progress, "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (%d nodes)...\n", o.Nodes)
	logs := filepath.Join(o.Dir, componentLogs)
	_ = os.RemoveAll(logs)
	e.Cluster, err = kwokcluster.Start(ctx, kwokcluster.Options{
		Nodes: o.Nodes, NodeCapacity: NodeCapacity(), GatewayAPI: true, Webhooks: true, LogDir: logs,
		HeldJobPods: framework.SubmitterPods(),
	})
	if err != nil {
		return nil, err
	}
	if err := recordChildren(o.Dir); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(e.Cluster.Config, e.Kubeconfig); err != nil {
		return nil, err
	}
	s, err := newSession(o.Dir, e.Kubeconfig, filepath.Join(e.Cluster.AssetsDir, "kubectl"), e.Cluster.Config)
	if err != nil {
		return nil, err
	}
	e.Session = *s

	fmt.Fprintln(o.Progress, "starting raygate (controllers and admission webhooks), simulated Ray dashboards and Traefik (the Gateway API implementation)...")
	e.Dashboards = raysim.NewRegistry(raysim.Options{DeployDelay: o.DeployDelay, Jobs: raysim.JobOptions{PendingDelay: time.Second, RunDelay: o.JobDuration}})
	// kwok gives pods loopback IPs: each simulator listens on its pods' IPs as Ray would, and
	// raygate reaches it there with its production resolver.
	if e.pods, err = framework.StartPodServers(e.Config, e.Dashboards); err != nil {
		return nil, fmt.Errorf("starting the simulated Ray listeners: %w", err)
	}
	if e.submitters, err = framework.StartSubmitters(e.Config, e.Dashboards, framework.SubmitterOptions{Sidecars: true}); err != nil {
		return nil, fmt.Errorf("starting the simulated RayJob submitters: %w", err)
	}
	metricsAddr := "0"
	if !o.NoPrometheus {
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		metricsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		fmt.Fprintln(o.Progress, "starting Prometheus (scraping raygate, Traefik and the simulated Ray pods)...")
		if e.prom, err = startPrometheus(ctx, o.Dir, logs, "http://"+metricsAddr+"/metrics"); err != nil {
			return nil, err
		}
	}
	if err := e.startManager(ctx, metricsAddr); err != nil {
		return nil, err
	}
	if e.Gateway, err = startTraefik(ctx, e, logs, e.prom != nil); err != nil {
		return nil, err
	}
	if e.prom != nil {
		if err := e.prom.addFixed(ctx, prometheus.Target{Job: JobTraefik, URL: e.Gateway.MetricsURL()}); err != nil {
			return nil, err
		}
		e.prom.followRayPods(e.Client)
	}
	if e.endpoints, err = traefik.StartLoopbackEndpoints(e.Config); err != nil {
		return nil, err
	}
	// Traefik is a child too: a later run stops it if this one dies.
	if err := recordChildren(o.Dir); err != nil {
		return nil, err
	}
	if e.recorder, err = startRecorder(ctx, e, o.OnViolation); err != nil {
		return nil, err
	}
	return e, e.waitWebhooks(ctx)
}

// startManager runs the raygate manager in this process, serving its metrics at metricsAddr
// over plain HTTP ("0": none) and querying the environment's Prometheus, if any, for gates.
func (e *Env) startManager(ctx context.Context, metricsAddr string) error {
	opts := app.DefaultOptions()
	opts.ReadEnvironment() // the operator's environment, as the binary reads it
	// Loopback only, for the local Prometheus: no TLS nor Kubernetes authorization to set up.
	opts.MetricsAddr, opts.SecureMetrics, opts.ProbeAddr = metricsAddr, false, "0"
	if e.prom != nil {
		opts.PrometheusURL = e.prom.URL()
	}
	opts.LogFormat = "console"
	opts.WebhookHost, opts.WebhookPort, opts.WebhookCertDir = e.Cluster.WebhookServing()
	opts.DashboardResolver = framework.PodResolver()
	// The local operator runs as the local cluster's admin, so it may read and create Secrets.
	opts.TokenAuthentication = true
	mgr, err := app.NewManager(e.Config, opts)
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.mgrDone = cancel, make(chan struct{})
	go func() {
		e.mgrErr = mgr.Start(mctx)
		close(e.mgrDone)
	}()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if !mgr.GetCache().WaitForCacheSync(wctx) {
		return fmt.Errorf("the raygate manager's caches did not sync (log: %s)", e.OperatorLog())
	}
	return nil
}

// startTraefik starts Traefik for GatewayClassName, logging to <logs>/traefik.log, with its
// Prometheus metrics on an entry point of their own when metrics is set.
func startTraefik(ctx context.Context, e *Env, logs string, metrics bool) (*traefik.Traefik, error) {
	f, err := os.Create(filepath.Join(logs, "traefik.log"))
	if err != nil {
		return nil, err
	}
	// The process holds its own copy of the descriptor.
	defer func() { _ = f.Close() }()
	t, err := traefik.Start(ctx, e.Client, traefik.Options{Kubeconfig: e.Kubeconfig, ClassName: GatewayClassName, Log: f, Metrics: metrics})
	if err != nil {
		return nil, fmt.Errorf("starting Traefik (log: %s): %w", f.Name(), err)
	}
	return t, nil
}

// waitWebhooks returns once the API server gets an answer from raygate's webhooks over TLS
// (any answer: a probe with an empty spec may well be rejected, by the webhook).
func (e *Env) waitWebhooks(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	probe := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: metav1.NamespaceDefault}}
	for {
		err := e.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server cannot reach raygate's webhooks: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops everything Start started, newest first, and releases the state directory.
func (e *Env) Stop() error {
	var errs []error
	if e.prom != nil {
		errs = append(errs, e.prom.stop(e.Dir))
	}
	if e.recorder != nil {
		e.recorder.stop()
	}
	if e.endpoints != nil {
		e.endpoints.Stop()
	}
	if e.Gateway != nil {
		errs = append(errs, e.Gateway.Stop())
	}
	if e.cancel != nil {
		e.cancel()
		select {
		case <-e.mgrDone:
			errs = append(errs, e.mgrErr)
		case <-time.After(30 * time.Second):
			errs = append(errs, errors.New("the raygate manager did not stop within 30s"))
		}
	}
	if e.submitters != nil {
		e.submitters.Stop()
	}
	if e.pods != nil {
		e.pods.Stop()
	}
	if e.Dashboards != nil {
		e.Dashboards.Close()
	}
	if e.Cluster != nil {
		errs = append(errs, e.Cluster.Stop())
	}
	_ = os.Remove(e.Kubeconfig)
	_ = os.Remove(filepath.Join(e.Dir, pidsFile))
	if e.closeLog != nil {
		e.closeLog()
	}
	e.lock.release()
	return errors.Join(errs...)
}

// PrometheusURL is the environment's Prometheus ("" with Options.NoPrometheus).
func (e *Env) PrometheusURL() string {
	if e.prom == nil {
		return ""
	}
	return e.prom.URL()
}

// Healthy reports a component, or the raygate manager, that stopped on its own.
func (e *Env) Healthy() error {
	select {
	case <-e.mgrDone:
		return fmt.Errorf("the raygate manager stopped: %w (log: %s)", e.mgrErr, e.OperatorLog())
	default:
	}
	return e.Cluster.Healthy()
}

// operatorLogger sends the manager's logs (and client-go's klog output) to a file, so the
// terminal shows what a newcomer needs and the details stay one `tail -f` away.
func operatorLogger(path, level string) (func(), error) {
	_ = os.Remove(path) // one run per file
	log, sync, err := fileLogger(path, level)
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	return sync, nil
}
