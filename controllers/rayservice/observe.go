package rayservice

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// observation is what observe read, and, by cluster, the dashboards to send submissions to.
type observation struct {
	*plan.Observed
	targets map[string]dashboard.Target
}

// observe reads, without changing anything, what the plan needs: the RayService's clusters;
// for those that may serve, their pods and what the dashboard pool last heard from their
// heads (asking it to read again when that is old); and the Services, Gateway and routes
// raygate manages for it (from the cache, or the API server for names found taken).
func (r *Reconciler) observe(ctx context.Context, svc *rayv1.RayService, want *plan.Desired) (observation, error) {
	obs := &plan.Observed{GatewayAPI: r.gatewayAPI, GRPCRouteAPI: r.gatewayAPI && r.grpcRouteAPI, NewClusterName: r.newName(svc.Name), Services: map[string]*corev1.Service{}, ForeignRecords: map[string]string{}}
	res := observation{Observed: obs, targets: map[string]dashboard.Target{}}
	var list rayv1.RayClusterList
	if err := r.client.List(ctx, &list, client.InNamespace(svc.Namespace), client.MatchingFields{clusterServiceIndex: svc.Name}); err != nil {
		return res, fmt.Errorf("listing RayClusters: %w", err)
	}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], svc) {
			obs.Clusters = append(obs.Clusters, &plan.ClusterView{Cluster: &list.Items[i]})
		}
	}
	if err := r.observeUncachedNamed(ctx, svc, obs); err != nil {
		return res, err
	}
	sort.Slice(obs.Clusters, func(i, j int) bool { return obs.Clusters[i].Cluster.Name < obs.Clusters[j].Cluster.Name })

	serviceNames := []string{rayspec.ServiceHeadServiceName(svc.Name), plan.ServeServiceName(want.Service)}
	for _, v := range obs.Clusters {
		if !plan.MayServe(v.Cluster, &svc.Status, want) {
			continue
		}
		t, err := r.observeCluster(ctx, svc, v)
		if err != nil {
			return res, err
		}
		if t != nil {
			res.targets[v.Cluster.Name] = *t
		}
		if err := r.observeRecord(ctx, svc, v.Cluster, obs); err != nil {
			return res, err
		}
		serviceNames = append(serviceNames, rayspec.ClusterServeServiceName(v.Cluster.Name))
	}
	objects := r.objects(svc)
	for _, name := range serviceNames {
		s := &corev1.Service{}
		if found, err := objects.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name}, s); err != nil {
			return res, err
		} else if found {
			obs.Services[name] = s
		}
	}
	if !r.gatewayAPI {
		return res, nil
	}
	gw, rt := &gwv1.Gateway{}, &gwv1.HTTPRoute{}
	if found, err := objects.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: rayspec.GatewayName(svc.Name)}, gw); err != nil {
		return res, err
	} else if found {
		obs.Gateway = gw
	}
	if found, err := objects.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: rayspec.HTTPRouteName(svc.Name)}, rt); err != nil {
		return res, err
	} else if found {
		obs.Route = rt
	}
	if obs.GRPCRouteAPI {
		g := &gwv1.GRPCRoute{}
		if found, err := objects.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: rayspec.GRPCRouteName(svc.Name)}, g); err != nil {
			return res, err
		} else if found {
			obs.GRPCRoute = g
		}
	}
	return res, nil
}

// observeUncachedNamed reads from the API server each cluster the status names that the
// cache lacks. Right after raygate creates a cluster and records its name, the cache may not
// have it yet (its watch event lags on a loaded API server); taken as gone, it would be
// forgotten, a second cluster created and the first retired. A cluster deleted by hand costs
// one read in the pass that forgets it.
func (r *Reconciler) observeUncachedNamed(ctx context.Context, svc *rayv1.RayService, obs *plan.Observed) error {
	if r.apiReader == nil {
		return nil
	}
	listed := func(name string) bool {
		for _, v := range obs.Clusters {
			if v.Cluster.Name == name {
				return true
			}
		}
		return false
	}
	for _, name := range []string{svc.Status.ActiveServiceStatus.RayClusterName, svc.Status.PendingServiceStatus.RayClusterName} {
		if name == "" || listed(name) {
			continue
		}
		rc := &rayv1.RayCluster{}
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name}, rc)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading RayCluster %s, named in the status but not cached yet: %w", name, err)
		}
		if metav1.IsControlledBy(rc, svc) {
			obs.Clusters = append(obs.Clusters, &plan.ClusterView{Cluster: rc})
		}
	}
	return nil
}

// observeCluster reads the pods a cluster controls and, once its head pod is ready, what
// the dashboard pool last heard from it; it returns the head's dashboard (nil: none to
// call). A dashboard that does not answer is a fact for the plan, not an error.
func (r *Reconciler) observeCluster(ctx context.Context, svc *rayv1.RayService, v *plan.ClusterView) (*dashboard.Target, error) {
	rc := v.Cluster
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(rc.Namespace), client.MatchingFields{podClusterIndex: rc.Name}); err != nil {
		return nil, fmt.Errorf("listing pods of RayCluster %s: %w", rc.Name, err)
	}
	// Pods with the cluster's labels that the cluster does not control are someone else's:
	// they are neither called nor labelled.
	for i := range pods.Items {
		if metav1.IsControlledBy(&pods.Items[i], rc) {
			v.Pods = append(v.Pods, pods.Items[i])
		}
	}
	if !plan.HeadReady(v.Pods) {
		return nil, nil
	}
	t, err := r.targetOf(ctx, svc, rc, v.Pods)
	if err != nil {
		v.Serve.Err = err.Error()
		return nil, nil
	}
	snap := r.dashboards.Snapshot(t)
	v.Serve = serveViewOf(snap)
	if needsRefresh(snap, r.Now(), r.DeployingPoll, readResync(r.AppStatusResync, t.ProxyURL != "")) {
		r.dashboards.Refresh(t)
	}
	return &t, nil
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
