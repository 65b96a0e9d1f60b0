// Package traefik runs Traefik (built by `make tools` from github.com/traefik/traefik/v3) as
// the Gateway API implementation of a test control plane or of the local mode: its
// Kubernetes Gateway provider programs the Gateways and HTTPRoutes of one GatewayClass,
// writes their status conditions itself, and routes requests by the HTTPRoute weights to
// the addresses in the backend Services' EndpointSlices.
//
// Traefik picks the entry point of a Gateway listener by port: the listener's port must be
// the port of an entry point's address. raygate's Gateways listen on port 80, so the entry
// point listens on port 80 of an address of its own in 127.0.0.0/8, and several Traefiks
// (one per test suite) never collide.
package traefik

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/testenv/proc"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// ControllerName is the GatewayClass controllerName Traefik implements.
const ControllerName = "traefik.io/gateway-controller"

const (
	readyTimeout    = time.Minute
	stopGracePeriod = 10 * time.Second
	// DefaultListenerPort is the port of the Gateway listeners raygate creates.
	DefaultListenerPort = 80
	// hostAttempts bounds the search for a free loopback address.
	hostAttempts = 50
)

// Options configure the Traefik process.
type Options struct {
	// Kubeconfig is an admin kubeconfig of the control plane Traefik watches.
	Kubeconfig string
	// ClassName, when set, is a GatewayClass created for ControllerName.
	ClassName string
	// ListenerPort is the Gateway listener port the entry point serves
	// (default DefaultListenerPort).
	ListenerPort int
	// Log receives Traefik's output (nil: discarded).
	Log io.Writer
	// Metrics, when set, exposes Traefik's Prometheus metrics (per entry point and per
	// service, with status codes) at MetricsURL, on an entry point of its own on 127.0.0.1.
	Metrics bool
}

// Traefik is a running Traefik.
type Traefik struct {
	proc *proc.Process
	// Host is the loopback address the entry point listens on (also the address Traefik
	// writes into Gateway status), Port its port (the Gateway listener port).
	Host string
	Port int
	// PingPort is the port of Traefik's own entry point on 127.0.0.1, which serves /ping.
	PingPort int
	// MetricsPort is the port of the metrics entry point on 127.0.0.1 (0: Options.Metrics off).
	MetricsPort int
}

// Start starts Traefik against the control plane of opts.Kubeconfig, creates the
// GatewayClass opts.ClassName with c (when set), and returns once Traefik answers its
// health check. Stop it when done.
func Start(ctx context.Context, c client.Client, opts Options) (*Traefik, error) {
	bin, err := tools.Path("traefik")
	if err != nil {
		return nil, err
	}
	if opts.Kubeconfig == "" {
		return nil, errors.New("traefik: Options.Kubeconfig is required")
	}
	if opts.ListenerPort == 0 {
		opts.ListenerPort = DefaultListenerPort
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	t := &Traefik{Port: opts.ListenerPort}
	if t.Host, err = freeHost(opts.ListenerPort); err != nil {
		return nil, err
	}
	if t.PingPort, err = proc.FreePort(); err != nil {
		return nil, err
	}
	args := Args(t.Host, t.Port, t.PingPort)
	if opts.Metrics {
		if t.MetricsPort, err = proc.FreePort(); err != nil {
			return nil, err
		}
		args = append(args, MetricsArgs(t.MetricsPort)...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(withoutInCluster(os.Environ()), "KUBECONFIG="+opts.Kubeconfig)
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	if t.proc, err = proc.Start("traefik", cmd); err != nil {
		return nil, err
	}
	if err := t.proc.WaitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/ping", t.PingPort), readyTimeout); err != nil {
		_ = t.Stop()
		return nil, err
	}
	if opts.ClassName != "" {
		gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: opts.ClassName}, Spec: gwv1.GatewayClassSpec{ControllerName: ControllerName}}
		if err := c.Create(ctx, gc); err != nil && !apierrors.IsAlreadyExists(err) {
			_ = t.Stop()
			return nil, err
		}
	}
	return t, nil
}

// Args are Traefik's flags: the Kubernetes Gateway provider (the API server comes from
// $KUBECONFIG), the "web" entry point on host:port that Gateway listeners on port map to,
// /ping on its own entry point on 127.0.0.1:pingPort, and nothing that calls out to the
// internet (no version check, no usage statistics).
func Args(host string, port, pingPort int) []string {
	web := net.JoinHostPort(host, strconv.Itoa(port))
	return []string{
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
		"--entryPoints.web.address=" + web,
		// A stopped Traefik (a test's cleanup) closes at once instead of draining for 10 s.
		"--entryPoints.web.transport.lifeCycle.graceTimeOut=1s",
		"--entryPoints.traefik.address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(pingPort)),
		"--entryPoints.traefik.transport.lifeCycle.graceTimeOut=1s",
		"--ping=true",
		"--ping.entryPoint=traefik",
		"--providers.kubernetesgateway=true",
		// Gateway status shows where clients reach the listener.
		"--providers.kubernetesgateway.statusAddress.ip=" + host,
		"--log.level=INFO",
	}
}

// MetricsArgs are the flags that expose Traefik's Prometheus metrics on an entry point
// "metrics" of their own on 127.0.0.1:port, so a scrape never goes through a Gateway's
// listener. Service labels give request counters per backend (for raygate's HTTPRoute: one
// per cluster, service="<namespace>-<cluster>-serve-svc-http-<port>@kubernetesgateway")
// by status code.
func MetricsArgs(port int) []string {
	return []string{
		"--entryPoints.metrics.address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--entryPoints.metrics.transport.lifeCycle.graceTimeOut=1s",
		"--metrics.prometheus=true",
		"--metrics.prometheus.entryPoint=metrics",
		"--metrics.prometheus.addEntryPointsLabels=true",
		"--metrics.prometheus.addServicesLabels=true",
	}
}

// MetricsURL is where Traefik serves its Prometheus metrics ("" when Options.Metrics was off).
func (t *Traefik) MetricsURL() string {
	if t.MetricsPort == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(t.MetricsPort)) + "/metrics"
}

// URL is the base URL of the entry point.
func (t *Traefik) URL() string {
	return "http://" + net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// Stop ends the Traefik process (SIGTERM, then SIGKILL after a grace period).
func (t *Traefik) Stop() error {
	if t == nil {
		return nil
	}
	return t.proc.Stop(stopGracePeriod)
}

// freeHost is a loopback address (in 127.200.0.0/16) where nothing listens on port yet.
func freeHost(port int) (string, error) {
	for range hostAttempts {
		host := loopbackHost(rand.Uint32()) //nolint:gosec // spreads suites over addresses; nothing secret
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			_ = l.Close()
			return host, nil
		}
		if errors.Is(err, syscall.EACCES) {
			return "", fmt.Errorf("traefik: listening on port %d needs root or CAP_NET_BIND_SERVICE (Gateway listeners map to entry points by port): %w", port, err)
		}
	}
	return "", fmt.Errorf("traefik: no free loopback address for port %d after %d tries", port, hostAttempts)
}

// loopbackHost maps n to an address of 127.200.0.0/16 other than its network and broadcast
// addresses. The range stays clear of 127.0.0.1 and of the simulated pod network (127.64.0.0/10).
func loopbackHost(n uint32) string {
	const usable = 1<<16 - 2
	v := n%usable + 1
	return fmt.Sprintf("127.200.%d.%d", v>>8, v&0xff)
}

// withoutInCluster drops the variables that make Traefik's provider use in-cluster
// credentials instead of $KUBECONFIG, and any inherited KUBECONFIG.
func withoutInCluster(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "KUBERNETES_SERVICE_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
