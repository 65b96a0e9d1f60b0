// Package localcluster runs a whole Kubernetes cluster without containers: the envtest
// control plane (etcd + kube-apiserver) plus kube-controller-manager (garbage collection,
// Deployments/ReplicaSets, EndpointSlices, namespaces), kube-scheduler and kwok, which plays
// the kubelet of N fake Nodes. Pods are scheduled and become Running and Ready with pod IPs
// in seconds. The local mode, e2e tests and the benchmarks run on it.
package kwokcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/raygate/raygate/internal/testenv/controlplane"
)

// Options shape the cluster. The zero value is a one-node cluster with kwok's general pod
// stages and the components' default client rate limits.
type Options struct {
	// Nodes is the number of kwok Nodes (default 1, at most MaxNodes).
	Nodes int
	// NodeCapacity is each node's capacity and allocatable (default DefaultNodeCapacity).
	NodeCapacity corev1.ResourceList
	// PodStages chooses kwok's pod stages (default GeneralStages).
	PodStages StageSet
	// HeldJobPods are the Job pods kwok leaves Running instead of completing them (see
	// HeldPods); the zero value holds none.
	HeldJobPods HeldPods

	// SchedulerQPS and SchedulerBurst raise kube-scheduler's client rate limit (defaults:
	// the scheduler's own, 50 and 100). Burst defaults to twice the QPS.
	SchedulerQPS   float32
	SchedulerBurst int32
	// ControllerManagerQPS and ControllerManagerBurst do the same for
	// kube-controller-manager (its defaults: 20 and 30).
	ControllerManagerQPS   float32
	ControllerManagerBurst int32
	// ControllerManagerArgs are extra kube-controller-manager flags ("--name=value").
	ControllerManagerArgs []string

	// AuditPolicy, when set, is an audit.k8s.io/v1 Policy (YAML); the API server then writes
	// its audit log as JSON lines to AuditLogPath (default <LogDir>/audit.log).
	AuditPolicy  string
	AuditLogPath string
	// APIServerArgs are extra kube-apiserver flags (key → value).
	APIServerArgs map[string]string
	// GatewayAPI and Webhooks are passed to controlplane.Options.
	GatewayAPI bool
	Webhooks   bool
	// PodIPs, when set, replaces the loopback pod IPs: node i's pods get the i-th /18 of it
	// (not claimed across processes). For an operator that must find pod IPs in Endpoints
	// (KubeRay), which the API server refuses to hold loopback addresses. Nothing may dial
	// these addresses: route such calls through a proxy on loopback.
	PodIPs netip.Prefix

	// LogDir receives each component's log (default: a new temporary directory).
	LogDir string
	// KeepLogs keeps LogDir after Stop (it is removed otherwise).
	KeepLogs bool
	// StartTimeout bounds how long the components may take to become healthy (default 90s).
	StartTimeout time.Duration
}

// Cluster is a running local cluster. Env is its control plane (admin client, kubeconfig,
// kubectl).
type Cluster struct {
	*controlplane.Env
	// LogDir holds <component>.log for kube-controller-manager, kube-scheduler and kwok,
	// the kwok stages and the scheduler configuration.
	LogDir string
	// AuditLogPath is the API server's audit log, when Options.AuditPolicy was set.
	AuditLogPath string
	// Nodes are the names of the kwok Nodes.
	Nodes []string
	// KeepLogs keeps LogDir after Stop; set it when a test failed.
	KeepLogs bool

	procs []*Process
}

// Start brings up the control plane, the components and the Nodes, and returns once the
// controller manager and scheduler report healthy and every Node is Ready. On error nothing
// is left running and the error names the log directory.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	o = withDefaults(o)
	if o.Nodes > MaxNodes {
		return nil, fmt.Errorf("at most %d nodes, not %d", MaxNodes, o.Nodes)
	}
	bins, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	if o.LogDir == "" {
		if o.LogDir, err = os.MkdirTemp("", "raygate-localcluster-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{LogDir: o.LogDir, KeepLogs: o.KeepLogs}
	if err := c.start(ctx, o, bins); err != nil {
		c.KeepLogs = true
		_ = c.Stop()
		return nil, fmt.Errorf("%w (component logs in %s)", err, o.LogDir)
	}
	return c, nil
}

func withDefaults(o Options) Options {
	if o.Nodes <= 0 {
		o.Nodes = 1
	}
	if o.NodeCapacity == nil {
		o.NodeCapacity = DefaultNodeCapacity()
	}
	if o.SchedulerQPS > 0 && o.SchedulerBurst == 0 {
		o.SchedulerBurst = int32(2 * o.SchedulerQPS)
	}
	if o.ControllerManagerQPS > 0 && o.ControllerManagerBurst == 0 {
		o.ControllerManagerBurst = int32(2 * o.ControllerManagerQPS)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 90 * time.Second
	}
	return o
}

func (c *Cluster) start(ctx context.Context, o Options, bins Binaries) error {
	apiArgs := map[string]string{}
	for k, v := range o.APIServerArgs {
		apiArgs[k] = v
	}
	if o.AuditPolicy != "" {
		policy := filepath.Join(c.LogDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(o.AuditPolicy), 0o600); err != nil {
			return err
		}
		c.AuditLogPath = o.AuditLogPath
		if c.AuditLogPath == "" {
			c.AuditLogPath = filepath.Join(c.LogDir, "audit.log")
		}
		apiArgs["audit-policy-file"] = policy
		apiArgs["audit-log-path"] = c.AuditLogPath
		apiArgs["audit-log-format"] = "json"
	}
	env, err := controlplane.Start(controlplane.Options{GatewayAPI: o.GatewayAPI, Webhooks: o.Webhooks, APIServerArgs: apiArgs})
	if err != nil {
		return err
	}
	c.Env = env

	stages, err := writeStages(c.LogDir, bins.KwokStagesDir, o.PodStages, o.HeldJobPods)
	if err != nil {
		return err
	}
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	schedConfig := filepath.Join(c.LogDir, "kube-scheduler.yaml")
	if err := os.WriteFile(schedConfig, schedulerConfig(env.Kubeconfig, o.SchedulerQPS, o.SchedulerBurst), 0o600); err != nil {
		return err
	}
	for _, comp := range []struct {
		name, bin string
		args      []string
	}{
		{"kube-controller-manager", bins.KubeControllerManager, controllerManagerArgs(env.Kubeconfig, kcmPort, filepath.Join(c.LogDir, "kube-controller-manager-certs"), o)},
		{"kube-scheduler", bins.KubeScheduler, schedulerArgs(env.Kubeconfig, schedConfig, schedPort, filepath.Join(c.LogDir, "kube-scheduler-certs"))},
		{"kwok", bins.Kwok, kwokArgs(env.Kubeconfig, stages)},
	} {
		p, err := startProcess(c.LogDir, comp.name, nil, comp.bin, comp.args...)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
	}

	for i := range o.Nodes {
		n, err := nodeObject(i, o.NodeCapacity)
		if err != nil {
			return err
		}
		if o.PodIPs.IsValid() {
			cidr := nodeBlockOf(o.PodIPs, i).String()
			n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
		}
		if err := env.Client.Create(ctx, n); err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		c.Nodes = append(c.Nodes, n.Name)
	}

	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	if err := c.waitHealthy(ctx, "kube-controller-manager", kcmPort); err != nil {
		return err
	}
	if err := c.waitHealthy(ctx, "kube-scheduler", schedPort); err != nil {
		return err
	}
	return c.waitNodesReady(ctx)
}

// Stop kills every component (SIGTERM, then SIGKILL), stops the control plane and removes
// the log directory unless KeepLogs is set.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].Stop(10*time.Second))
	}
	c.procs = nil
	if c.Env != nil {
		errs = append(errs, c.Env.Stop())
		c.Env = nil
	}
	if !c.KeepLogs && c.LogDir != "" {
		errs = append(errs, os.RemoveAll(c.LogDir))
	}
	return errors.Join(errs...)
}

// AddUser provisions a user authenticated by a client certificate and writes a kubeconfig
// for it to <LogDir>/<name>.kubeconfig. Groups decide what it may do (RBAC); e.g.
// "system:masters" for everything.
func (c *Cluster) AddUser(name string, groups ...string) (kubeconfig string, cfg *rest.Config, err error) {
	u, err := c.Env.Env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", nil, err
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", nil, err
	}
	kubeconfig = filepath.Join(c.LogDir, name+".kubeconfig")
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return "", nil, err
	}
	return kubeconfig, rest.CopyConfig(u.Config()), nil
}

// Healthy reports the first program that has exited without being stopped, with the end
// of its log.
func (c *Cluster) Healthy() error {
	for _, p := range c.procs {
		if done, err := p.Exited(); done && !p.stopped.Load() {
			return fmt.Errorf("%s exited (%w); last log lines:\n%s", p.name, err, p.LogTail(2000))
		}
	}
	return nil
}

func (c *Cluster) waitHealthy(ctx context.Context, name string, port int) error {
	hc := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed serving cert of a local child process
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	return poll(ctx, func() (bool, error) {
		if err := c.Healthy(); err != nil {
			return false, err
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, name+" healthy")
}

func (c *Cluster) waitNodesReady(ctx context.Context) error {
	return poll(ctx, func() (bool, error) {
		if err := c.Healthy(); err != nil {
			return false, err
		}
		var nodes corev1.NodeList
		if err := c.Client.List(ctx, &nodes, client.MatchingLabels{"type": "kwok"}); err != nil {
			return false, nil
		}
		ready := 0
		for i := range nodes.Items {
			if nodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		return ready == len(c.Nodes), nil
	}, "every node Ready (kwok)")
}

func poll(ctx context.Context, cond func() (bool, error), what string) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PIDs are the process ids of the components Start launched (each leads its own process
// group), for checks that nothing outlives Stop.
func (c *Cluster) PIDs() map[string]int {
	m := make(map[string]int, len(c.procs))
	for _, p := range c.procs {
		m[p.name] = p.PID()
	}
	return m
}

// Run starts another program next to the cluster (e.g. the operator under test), logging
// to <LogDir>/<name>.log, in its own process group and killed with the cluster: Stop stops
// the programs in reverse order of start, so one started with Run stops before the
// components it depends on. env entries ("K=V") extend the environment.
func (c *Cluster) Run(name string, env []string, bin string, args ...string) (*Process, error) {
	p, err := startProcess(c.LogDir, name, env, bin, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}
