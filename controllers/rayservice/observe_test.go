package rayservice

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// A cluster the status names that the cache has not seen yet (raygate just created it; its
// watch event lags) is read from the API server, not taken as gone: taken as gone, the plan
// would create a second cluster and retire the first 60 s later, as the restart benchmark saw
// on a loaded machine. What the API server does not have, or a cluster someone else controls,
// stays out.
func TestObserveReadsNamedClustersTheCacheLacks(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	svc := builders.RayService("svc", "ns").Obj()
	svc.UID = "svc-uid"
	owned := func(name string, owner *rayv1.RayService) *rayv1.RayCluster {
		rc := builders.RayCluster(name, "ns").Obj()
		rc.Labels = map[string]string{rayv1.OriginatedFromCRNameLabelKey: "svc", rayv1.OriginatedFromCRDLabelKey: plan.RayServiceKind}
		rc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, rayv1.GroupVersion.WithKind(rayv1.RayServiceKind))}
		return rc
	}
	other := svc.DeepCopy()
	other.UID = "someone-else"
	for name, tc := range map[string]struct {
		pending, active string
		api             []client.Object // what the API server has besides the service; the cache has only the service
		want            []string
	}{
		"pending created, not cached yet":    {pending: "svc-new", api: []client.Object{owned("svc-new", svc)}, want: []string{"svc-new"}},
		"active not cached yet":              {active: "svc-old", api: []client.Object{owned("svc-old", svc)}, want: []string{"svc-old"}},
		"deleted by hand: gone for the plan": {pending: "svc-new", want: nil},
		"someone else's cluster":             {pending: "svc-new", api: []client.Object{owned("svc-new", other)}, want: nil},
		"nothing named":                      {api: []client.Object{owned("svc-new", svc)}, want: nil},
	} {
		t.Run(name, func(t *testing.T) {
			s := svc.DeepCopy()
			s.Status.PendingServiceStatus.RayClusterName = tc.pending
			s.Status.ActiveServiceStatus.RayClusterName = tc.active
			cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s.DeepCopy()).
				WithIndex(&rayv1.RayCluster{}, clusterServiceIndex, serviceOfCluster).WithIndex(&corev1.Pod{}, podClusterIndex, raycluster.ClusterOfPod).Build()
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append([]client.Object{s.DeepCopy()}, tc.api...)...).Build()
			r := &Reconciler{Config: Config{Gates: features.Default()}, Metrics: NewMetrics(), client: cache, apiReader: api,
				newName: func(service string) string { return service + "-next" }}
			want := plan.Admit(plan.WithUpgradeDefault(s, true), r.Gates, validation.Limits{}, "test")
			obs, err := r.observe(ctx, s, want)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range obs.Clusters {
				got = append(got, v.Cluster.Name)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("observed clusters %v, want %v", got, tc.want)
			}
		})
	}
}
