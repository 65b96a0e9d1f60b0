package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// stored is obj as the API server keeps it: a UID, a resourceVersion, a cluster IP for a
// Service that asked for none.
func stored[T Object](obj T) T {
	out := obj.DeepCopyObject().(T)
	out.SetUID("stored-" + metav1.Object(out).GetUID())
	out.SetResourceVersion("5")
	if s, ok := any(out).(*corev1.Service); ok && s.Spec.ClusterIP == "" {
		s.Spec.ClusterIP = "10.96.0.7"
	}
	return out
}

// ensure writes only what raygate owns, creates what is missing, and reports (never
// writes) an object its owner does not control, in ownerref's words.
func TestEnsure(t *testing.T) {
	svc := testService()
	rc := newRayCluster(svc, "svc-aaaaa", mustGoal(t, svc.Spec.RayClusterSpec), "v1", true)
	rc.UID = "rc-uid"
	head, serve, backend := headService(svc, rc), serveService(svc, rc), clusterServeService(svc, rc)
	foreign := func(s *corev1.Service) *corev1.Service {
		out := stored(s)
		out.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "gitops", UID: "d", Controller: ptr.To(true)}}
		return out
	}
	moved := func(s *corev1.Service) *corev1.Service {
		out := stored(s)
		out.Spec.Selector = map[string]string{rayv1.ClusterLabelKey: "svc-old"}
		return out
	}
	withIP := func(s *corev1.Service) *corev1.Service {
		out := moved(s)
		out.Spec.ClusterIP, out.Spec.PublishNotReadyAddresses = "10.96.0.9", false
		return out
	}
	unlabelled := func(s *corev1.Service) *corev1.Service {
		out := stored(s)
		delete(out.Labels, rayv1.KubernetesCreatedByLabelKey)
		return out
	}
	for _, tc := range []struct {
		name     string
		want     *corev1.Service
		cur      *corev1.Service
		action   string // "": none
		ok       bool
		conflict string
		check    func(t *testing.T, written *corev1.Service)
	}{
		{name: "missing: created", want: serve, action: "create Service svc-serve-svc", ok: true},
		{name: "as wanted: nothing", want: serve, cur: stored(serve), ok: true},
		{name: "as wanted, headless head: nothing", want: head, cur: stored(head), ok: true},
		{name: "pointed elsewhere: updated", want: serve, cur: moved(serve), action: "update Service svc-serve-svc", ok: true,
			check: func(t *testing.T, w *corev1.Service) {
				if w.Spec.Selector[rayv1.ClusterLabelKey] != "svc-aaaaa" || w.Spec.ClusterIP != "10.96.0.7" || w.ResourceVersion != "5" {
					t.Errorf("update %+v", w.Spec)
				}
			}},
		{name: "a head Service an older raygate made with a cluster IP keeps it (never recreated)", want: head, cur: withIP(head), action: "update Service svc-head-svc", ok: true,
			check: func(t *testing.T, w *corev1.Service) {
				if w.Spec.ClusterIP != "10.96.0.9" || !w.Spec.PublishNotReadyAddresses {
					t.Errorf("update %+v", w.Spec)
				}
			}},
		{name: "the RayService's, made without the cache's label: relabelled", want: serve, cur: unlabelled(serve), action: "update Service svc-serve-svc", ok: true,
			check: func(t *testing.T, w *corev1.Service) {
				if w.Labels[rayv1.KubernetesCreatedByLabelKey] != rayv1.ComponentName {
					t.Errorf("labels %v", w.Labels)
				}
			}},
		{name: "someone else's: reported", want: serve, cur: foreign(serve),
			conflict: "Service svc-serve-svc exists and is not controlled by this RayService (it is controlled by Deployment gitops)"},
		{name: "someone else's, under a cluster's name: reported with the cluster", want: backend, cur: foreign(backend),
			conflict: "Service svc-aaaaa-serve-svc exists and is not controlled by RayCluster svc-aaaaa (it is controlled by Deployment gitops)"},
		{name: "one that could send traffic outside the cluster: never created", want: func() *corev1.Service {
			s := serve.DeepCopy()
			s.Spec.ExternalIPs = []string{"203.0.113.9"}
			return s
		}(), conflict: "Service svc-serve-svc would be given externalIPs; raygate does not create it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputs{obs: &Observed{Services: map[string]*corev1.Service{}}}
			if tc.cur != nil {
				in.obs.Services[tc.cur.Name] = tc.cur
			}
			var act Effects
			var out Outcome
			changed, ok := ensureService(in, tc.want, &act, &out)
			var actions []string
			for _, a := range act.Actions {
				actions = append(actions, a.String())
			}
			switch {
			case tc.action == "" && (changed || len(actions) > 0):
				t.Errorf("actions %q, want none", actions)
			case tc.action != "" && (!changed || len(actions) != 1 || actions[0] != tc.action):
				t.Errorf("actions %q, want %q", actions, tc.action)
			}
			if ok != tc.ok {
				t.Errorf("ok %v, want %v", ok, tc.ok)
			}
			switch {
			case tc.conflict == "" && len(out.Conflicts) > 0:
				t.Errorf("conflicts %q", out.Conflicts)
			case tc.conflict != "" && (len(out.Conflicts) != 1 || out.Conflicts[0] != tc.conflict):
				t.Errorf("conflicts %q, want %q", out.Conflicts, tc.conflict)
			}
			if tc.check != nil && len(act.Actions) == 1 {
				if u, isUpdate := act.Actions[0].(UpdateObject); isUpdate {
					tc.check(t, u.Object.(*corev1.Service))
				}
			}
			if tc.cur != nil && tc.cur.ResourceVersion != "5" {
				t.Error("the observed object was changed")
			}
		})
	}
}

// The RayService's head Service is its serving cluster's head Service, placed under the
// RayService, as KubeRay builds it: the same selector, ports and type; headless when new.
func TestHeadServiceIsTheServingClustersPlaced(t *testing.T) {
	svc := testService()
	rc := newRayCluster(svc, "svc-aaaaa", mustGoal(t, svc.Spec.RayClusterSpec), "v1", false)
	s, own := headService(svc, rc), raypod.HeadService(rc)
	if s.Name != "svc-head-svc" || s.Labels[rayv1.OriginatedFromCRNameLabelKey] != "svc" || s.Labels[rayv1.KubernetesCreatedByLabelKey] != rayv1.ComponentName ||
		s.Labels[rayv1.ClusterLabelKey] != "" || metav1.GetControllerOf(s).Kind != rayv1.RayServiceKind {
		t.Errorf("placement %s %v %v", s.Name, s.Labels, s.OwnerReferences)
	}
	if len(s.Spec.Selector) != len(own.Spec.Selector) || s.Spec.Selector[rayv1.IdentifierLabelKey] != rc.Name+"-head" || s.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("spec %+v, want the cluster's head Service's", s.Spec)
	}
}

// The Gateway and the routes are written only where raygate's fields or labels differ.
func TestEnsureGatewayAndRoute(t *testing.T) {
	svc := testService()
	gw := gateway(svc, "istio")
	other := stored(gw)
	other.Spec.GatewayClassName = "other"
	in := inputs{obs: &Observed{Gateway: stored(gw)}}
	var act Effects
	var out Outcome
	if changed, ok := ensureGateway(in, gw, &act, &out); changed || !ok {
		t.Errorf("as wanted: changed %v ok %v", changed, ok)
	}
	in.obs.Gateway = other
	if changed, ok := ensureGateway(in, gw, &act, &out); !changed || !ok || len(act.Actions) != 1 ||
		act.Actions[0].(UpdateObject).Object.(*gwv1.Gateway).Spec.GatewayClassName != "istio" {
		t.Errorf("another class: changed %v ok %v %v", changed, ok, act.Actions)
	}

	rt := httpRoute(svc, []backend{{Cluster: "svc-a", Port: 8000, Weight: 70}, {Cluster: "svc-b", Port: 8000, Weight: 30}})
	was := stored(httpRoute(svc, []backend{{Cluster: "svc-a", Port: 8000, Weight: 100}}))
	in.obs.Route = was
	act = Effects{}
	changed, before, ok := ensureRoute(in, rt, &act, &out)
	if !changed || !ok || before["svc-a"] != 100 || len(act.Actions) != 1 {
		t.Errorf("a new backend: changed %v before %v ok %v", changed, before, ok)
	}
	if len(out.Conflicts) != 0 {
		t.Errorf("conflicts %q", out.Conflicts)
	}
}
