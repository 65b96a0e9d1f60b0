package framework

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// Dashboards are simulated Ray dashboards, one per RayCluster. By default the manager reaches
// them in process (the Registry is its resolver) and a simulator is created when the manager
// first asks for a cluster's dashboard. After ListenOnPods, each simulator listens where a
// real Ray would (dashboard and Serve proxy on pod IPs) and the manager uses the production
// resolver: the head pod's IP.
type Dashboards struct {
	*raysim.Registry
	pods       *PodServers
	submitters *Submitters
}

// StartDashboardsWith starts a registry with full simulator options (e.g. an Outcome that
// fails some applications).
func StartDashboardsWith(opts raysim.Options) *Dashboards {
	return &Dashboards{Registry: raysim.NewRegistry(opts)}
}

// ListenOnPods serves the simulators on the IPs of the pods of the control plane at cfg
// (see PodServers) until Close.
func (d *Dashboards) ListenOnPods(cfg *rest.Config) error {
	ps, err := StartPodServers(cfg, d.Registry)
	if err != nil {
		return err
	}
	d.pods = ps
	return nil
}

// Pods are the pod listeners (nil unless ListenOnPods).
func (d *Dashboards) Pods() *PodServers { return d.pods }

// RunSubmitters runs the RayJob submitter pods of the control plane at cfg against these
// simulators (see Submitters) until Close.
func (d *Dashboards) RunSubmitters(cfg *rest.Config, opts SubmitterOptions) (*Submitters, error) {
	s, err := StartSubmitters(cfg, d.Registry, opts)
	if err != nil {
		return nil, err
	}
	d.submitters = s
	return s, nil
}

// Close stops the submitter runs, the pod listeners and every simulator.
func (d *Dashboards) Close() {
	if d.submitters != nil {
		d.submitters.Stop()
	}
	if d.pods != nil {
		d.pods.Stop()
	}
	d.Registry.Close()
}

// Wire makes a manager reach these dashboards: at pod IPs after ListenOnPods, else in process.
func (d *Dashboards) Wire(o app.Options) app.Options {
	if d.pods != nil {
		o.DashboardResolver = rememberingResolver{PodResolver: PodResolver(), reg: d.Registry}
		return o
	}
	o.DashboardResolver = d.Registry
	return o
}

// rememberingResolver is the production resolver that also tells the registry which head
// the controller named (Registry.LastHead), so tests can check which pod it trusted.
type rememberingResolver struct {
	dashboard.PodResolver
	reg *raysim.Registry
}

// DashboardURL implements dashboard.Resolver.
func (r rememberingResolver) DashboardURL(ctx context.Context, h dashboard.Head) (string, error) {
	r.reg.Remember(h)
	return r.PodResolver.DashboardURL(ctx, h)
}
