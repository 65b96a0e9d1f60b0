package rstest

import (
	"context"
	"encoding/json"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// SetAction sets raygate.ray.io/upgrade-action (and its target) as kubectl raygate does: a
// merge patch of the annotations, which leaves the spec and its generation alone.
func SetAction(ctx context.Context, c client.Client, ns, name, action, target string) {
	ann := map[string]any{rayv1.UpgradeActionKey: action, rayv1.UpgradeTargetKey: nil}
	if target != "" {
		ann[rayv1.UpgradeTargetKey] = target
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	svc := &rayv1.RayService{}
	svc.Namespace, svc.Name = ns, name
	gomega.Expect(c.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch))).To(gomega.Succeed())
}

// PendingTraffic is the pending cluster's share of the traffic in the status (-1: no
// pending cluster), to poll.
func PendingTraffic(ctx context.Context, c client.Client, ns, name string) func() int32 {
	return func() int32 {
		st := Get(ctx, c, ns, name).Status
		if st.PendingServiceStatus.RayClusterName == "" {
			return -1
		}
		return ptr.Deref(st.PendingServiceStatus.TrafficRoutedPercent, 0)
	}
}

// RouteWeight is a cluster's weight on the RayService's HTTPRoute (-1: not a backend), to
// poll.
func RouteWeight(ctx context.Context, c client.Client, ns, name, cluster string) func() int32 {
	return func() int32 {
		rt := &gwv1.HTTPRoute{}
		gomega.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: rayspec.HTTPRouteName(name)}, rt)).To(gomega.Succeed())
		for _, r := range rt.Spec.Rules {
			for _, b := range r.BackendRefs {
				if string(b.Name) == cluster+"-serve-svc" && b.Weight != nil {
					return *b.Weight
				}
			}
		}
		return -1
	}
}

// RouteWeights are the weights of the RayService's HTTPRoute by cluster, to poll.
func RouteWeights(ctx context.Context, c client.Client, ns, name string) func() map[string]int32 {
	return func() map[string]int32 {
		rt := &gwv1.HTTPRoute{}
		gomega.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: rayspec.HTTPRouteName(name)}, rt)).To(gomega.Succeed())
		return rayspec.RouteWeights(rt)
	}
}

// Selector is the cluster a Service selects ("" without the Service or the label).
func Selector(ctx context.Context, c client.Client, ns, svcName string) string {
	s := &corev1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: svcName}, s); err != nil {
		return ""
	}
	return s.Spec.Selector[rayv1.ClusterLabelKey]
}
