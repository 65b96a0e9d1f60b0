package framework

import (
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// Dashboards are simulated Ray dashboards, one per RayCluster, created when the manager
// first asks for a cluster's dashboard.
type Dashboards struct {
	*raysim.Registry
}

// StartDashboardsWith starts a registry with full simulator options (e.g. an Outcome that
// fails some applications).
func StartDashboardsWith(opts raysim.Options) *Dashboards {
	return &Dashboards{raysim.NewRegistry(opts)}
}

// Wire makes a manager reach these dashboards.
func (d *Dashboards) Wire(o app.Options) app.Options {
	o.DashboardResolver = d.Registry
	return o
}
