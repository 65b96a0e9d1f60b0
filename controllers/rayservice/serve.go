package rayservice

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// observePods reads the pods of the active and pending clusters: head readiness decides
// when a dashboard can be asked, ready serve pods are the serve endpoints.
func (r *Reconciler) observePods(ctx context.Context, p *pass) error {
	for _, rc := range []*rayv1.RayCluster{p.active, p.pending} {
		if rc == nil {
			continue
		}
		var pods corev1.PodList
		if err := r.client.List(ctx, &pods, client.InNamespace(rc.Namespace), client.MatchingLabels{rayv1.ClusterLabelKey: rc.Name}); err != nil {
			return fmt.Errorf("listing pods of RayCluster %s: %w", rc.Name, err)
		}
		p.pods[rc.Name] = pods.Items
		for i := range pods.Items {
			if pods.Items[i].Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) && rayspec.Serving(&pods.Items[i]) {
				p.headReady[rc.Name] = true
			}
		}
	}
	return nil
}

// wantedServe is the config and target capacity a cluster should run. During an upgrade
// (or rollback) the active cluster keeps exactly the config it was given before: only its
// target capacity changes, by resubmitting that recorded config. The same holds for a
// pending cluster being rolled back.
func (r *Reconciler) wantedServe(p *pass, rc *rayv1.RayCluster) (*serveConfig, *int32, error) {
	st := &p.svc.Status.PendingServiceStatus
	if p.isActive(rc.Name) {
		st = &p.svc.Status.ActiveServiceStatus
	}
	var tc *int32
	if p.incremental() {
		tc = st.TargetCapacity
	}
	// Frozen: the active cluster while another one is prepared, and a pending cluster that
	// is being rolled back (it may still carry traffic; a third spec goes to a fresh cluster).
	frozen := (p.isActive(rc.Name) && p.pending != nil) || (p.isPending(rc.Name) && p.rollingBack)
	if frozen {
		if rec := submittedOn(rc); rec.Config != "" {
			cfg, err := parseSubmittedConfig(rec.Config)
			return cfg, tc, err
		}
	}
	return p.serve, tc, nil
}

// reconcileServe brings each cluster's Serve applications to what it should run and reads
// their statuses. The submitted config's hash, the config and the target capacity are
// recorded on the RayCluster after the dashboard accepted them, so nothing depends on memory.
func (r *Reconciler) reconcileServe(ctx context.Context, p *pass) error {
	for _, rc := range []*rayv1.RayCluster{p.active, p.pending} {
		if rc == nil {
			continue
		}
		if !p.headReady[rc.Name] {
			p.serveNote[rc.Name] = "waiting for the head pod of " + rc.Name + " to be ready"
			continue
		}
		if err := r.serveCluster(ctx, p, rc); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) serveCluster(ctx context.Context, p *pass, rc *rayv1.RayCluster) error {
	log := logFor(ctx, p).WithValues("raycluster", rc.Name)
	want, wantTC, err := r.wantedServe(p, rc)
	if err != nil {
		return err
	}
	url, err := r.Resolver.DashboardURL(ctx, types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name})
	if err != nil {
		return fmt.Errorf("locating the dashboard of %s: %w", rc.Name, err)
	}
	dc := &dashboard.HTTPClient{BaseURL: url, HTTP: r.http, Timeout: r.DashboardTimeout}
	details, err := dc.GetServeDetails(ctx)
	if err != nil {
		// The dashboard starts a little after the head pod is ready; look again soon.
		log.Info("cannot read Serve applications", "error", err.Error())
		p.serveNote[rc.Name] = "cannot read Serve applications of " + rc.Name + ": " + err.Error()
		p.pollEvery = r.DeployingPoll
		return nil
	}
	p.apps[rc.Name] = appStatuses(details)
	d := decideSubmit(submittedOn(rc), want, wantTC, len(details.Applications))
	redeployed := false
	if d.Submit {
		prev := submittedOn(rc)
		if err := dc.DeployApplications(ctx, want.body(wantTC)); err != nil {
			r.warn(p, rc, EventFailedServeConfig, "SubmitServeConfig", "submitting the serve config to %s (%s): %v", rc.Name, d.Reason, err)
			p.serveNote[rc.Name] = "the dashboard of " + rc.Name + " rejected the serve config: " + err.Error()
			p.pollEvery = r.DeployingPoll
			if dashboard.IsBadRequest(err) {
				// The same config fails the same way; wait for a spec change (or the resync).
				p.pollEvery = 0
			}
			return nil
		}
		ann := map[string]string{rayv1.ServeConfigHashKey: want.hash, ServeConfigKey: want.json(), rayv1.ServeConfigTargetCapacityKey: ""}
		if wantTC != nil {
			ann[rayv1.ServeConfigTargetCapacityKey] = strconv.Itoa(int(*wantTC))
		}
		// Record what the dashboard accepted even if the operator is shutting down: the
		// record is what keeps the next operator from resubmitting. (Only a hard crash in
		// this short window resubmits the same config, which Ray treats as a no-op.)
		commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.patchAnnotations(commitCtx, rc, ann); err != nil {
			return err
		}
		redeployed = prev.Hash != want.hash || len(details.Applications) == 0
		if redeployed {
			r.normal(p, rc, EventSubmittedServeConfig, "SubmitServeConfig", "submitted the serve config to %s: %s", rc.Name, d.Reason)
		} else {
			r.normal(p, rc, EventTargetCapacity, "SetTargetCapacity", "set Serve target_capacity of %s to %s", rc.Name, percent(wantTC))
		}
		log.Info("submitted serve config", "reason", d.Reason, "targetCapacity", wantTC)
	}
	switch {
	case want.empty():
		p.appsReady[rc.Name] = true
	case redeployed:
		p.serveNote[rc.Name] = "Serve applications of " + rc.Name + " are deploying"
		p.pollEvery = r.DeployingPoll
	case appsRunning(p.apps[rc.Name], want.apps):
		p.appsReady[rc.Name] = true
	default:
		p.serveNote[rc.Name] = describeApps(rc.Name, p.apps[rc.Name], want.apps)
		if len(unhealthyApps(p.apps[rc.Name])) == 0 {
			p.pollEvery = r.DeployingPoll
		}
	}
	return nil
}

// appStatuses converts the dashboard's answer to the status type.
func appStatuses(d *dashboard.ServeDetails) map[string]rayv1.AppStatus {
	out := make(map[string]rayv1.AppStatus, len(d.Applications))
	for name, a := range d.Applications {
		s := rayv1.AppStatus{Status: a.Status, Message: a.Message}
		if len(a.Deployments) > 0 {
			s.Deployments = make(map[string]rayv1.ServeDeploymentStatus, len(a.Deployments))
			for dn, dep := range a.Deployments {
				s.Deployments[dn] = rayv1.ServeDeploymentStatus{Status: dep.Status, Message: dep.Message}
			}
		}
		out[name] = s
	}
	return out
}

func describeApps(cluster string, apps map[string]rayv1.AppStatus, wanted []string) string {
	var waiting []string
	for _, n := range wanted {
		s := apps[n].Status
		if s == "" {
			s = "missing"
		}
		if s != rayv1.ApplicationStatusRunning {
			waiting = append(waiting, n+" "+s)
		}
	}
	return fmt.Sprintf("Serve applications of %s not RUNNING yet: %v", cluster, waiting)
}

func percent(v *int32) string {
	if v == nil {
		return "unset (100%)"
	}
	return strconv.Itoa(int(*v)) + "%"
}
