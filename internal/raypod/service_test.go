package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestHeadServiceGoldens(t *testing.T) {
	golden(t, "service-default", HeadService(cluster()))
	golden(t, "service-overrides", HeadService(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadServiceAnnotations = map[string]string{"team": "ml", "shared": "from-headServiceAnnotations"}
		rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "custom-head", Namespace: "elsewhere", Labels: map[string]string{"custom": "yes", rayv1.ClusterLabelKey: "hijack"},
				Annotations: map[string]string{"shared": "from-headService"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "other"}, SessionAffinity: corev1.ServiceAffinityClientIP,
				Ports: []corev1.ServicePort{{Name: "dashboard", Port: 80}}},
		}
	})))
}

func TestOptionalServiceGoldens(t *testing.T) {
	golden(t, "service-headless-workers", HeadlessWorkerService(cluster()))
	golden(t, "service-serve-default", ClusterServeService(cluster()))
	golden(t, "service-serve-nodeport-custom-port", ClusterServeService(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
			{Name: "serve", ContainerPort: 9000}, {Name: "serve-grpc", ContainerPort: 9001}, {Name: "dashboard", ContainerPort: 8265},
		}
	})))
}

func TestNeedsHeadlessWorkerService(t *testing.T) {
	cases := map[string]struct {
		hosts []int32
		want  bool
	}{
		"no worker groups":             {nil, false},
		"single-host groups":           {[]int32{1, 1}, false},
		"one multi-host group":         {[]int32{1, 2}, true},
		"zero hosts (before defaults)": {[]int32{0}, false},
	}
	for name, tc := range cases {
		spec := &rayv1.RayClusterSpec{}
		for _, h := range tc.hosts {
			spec.WorkerGroupSpecs = append(spec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{NumOfHosts: h})
		}
		if got := NeedsHeadlessWorkerService(spec); got != tc.want {
			t.Errorf("%s: NeedsHeadlessWorkerService = %v, want %v", name, got, tc.want)
		}
	}
}

func TestWantsServeService(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "True": false, "false": false, "": false} {
		rc := cluster(func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{rayv1.EnableServeServiceKey: value}
		})
		if got := WantsServeService(rc); got != want {
			t.Errorf("annotation %q: WantsServeService = %v, want %v", value, got, want)
		}
	}
	if WantsServeService(cluster()) {
		t.Error("a cluster without the annotation must not get a serve Service")
	}
}

// A head Service placed under another owner (a RayService's) is the cluster's head Service
// with that name, owner and labels: same selector, ports, type and annotations.
func TestPlacedHeadService(t *testing.T) {
	for name, mutate := range map[string]func(*rayv1.RayCluster){
		"default": func(*rayv1.RayCluster) {},
		"overrides": func(rc *rayv1.RayCluster) {
			rc.Spec.HeadServiceAnnotations = map[string]string{"team": "ml"}
			rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"custom": "yes"}},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Name: "dashboard", Port: 80}}},
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			rc := cluster(mutate)
			own := HeadService(rc)
			owner := metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayService", Name: "svc", UID: "svc-uid", Controller: ptr.To(true)}
			placed := PlacedHeadService(rc, Placement{Name: "svc-head-svc", Labels: map[string]string{"ray.io/originated-from-cr-name": "svc"}, Owner: owner})
			if placed.Name != "svc-head-svc" || placed.Namespace != rc.Namespace || !metav1.IsControlledBy(placed, &metav1.ObjectMeta{UID: "svc-uid"}) {
				t.Errorf("placement: %s/%s %v", placed.Namespace, placed.Name, placed.OwnerReferences)
			}
			if placed.Labels[rayv1.ClusterLabelKey] != "" || placed.Labels["ray.io/originated-from-cr-name"] != "svc" {
				t.Errorf("labels %v: the placement's, not the cluster's", placed.Labels)
			}
			if rc.Spec.HeadGroupSpec.HeadService != nil && placed.Labels["custom"] != "yes" {
				t.Errorf("labels %v: the user's are kept", placed.Labels)
			}
			if d := cmp.Diff(own.Spec, placed.Spec); d != "" {
				t.Errorf("spec differs from the cluster's head Service (-own +placed):\n%s", d)
			}
			if d := cmp.Diff(own.Annotations, placed.Annotations); d != "" {
				t.Errorf("annotations (-own +placed):\n%s", d)
			}
		})
	}
}

func TestServeService(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayService", Name: "svc", UID: "svc-uid", Controller: ptr.To(true)}
	serving := map[string]string{rayv1.ClusterLabelKey: "demo", rayv1.ServeLabelKey: "true"}
	grpc := func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "serve-grpc", ContainerPort: 9000}}
	}
	namedServe := func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "serve", ContainerPort: 8100}}
	}
	nodePort := func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort }
	override := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ignored", Labels: map[string]string{"team": "a", rayv1.ServeLabelKey: "hijack"}, Annotations: map[string]string{"lb": "internal"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "other"}, SessionAffinity: corev1.ServiceAffinityClientIP,
			Ports: []corev1.ServicePort{{Name: "serve", Port: 80, TargetPort: intstr.FromInt32(8000), NodePort: 31000}, {Name: "other", Port: 9}}},
	}
	type port struct {
		name         string
		port, target int32
	}
	for name, tc := range map[string]struct {
		mutate   func(*rayv1.RayCluster)
		opts     ServeOptions
		typ      corev1.ServiceType
		ports    []port
		labels   map[string]string
		affinity corev1.ServiceAffinity
	}{
		"the serve port and the serve-... ports; the head's type": {
			mutate: func(rc *rayv1.RayCluster) { grpc(rc); nodePort(rc) },
			opts:   ServeOptions{Name: "s", Labels: map[string]string{"l": "1"}, Selector: serving, Owner: owner},
			typ:    corev1.ServiceTypeNodePort, ports: []port{{"serve", 8000, 8000}, {"serve-grpc", 9000, 9000}}, labels: map[string]string{"l": "1"},
		},
		"a fixed type": {
			mutate: nodePort, opts: ServeOptions{Name: "s", Selector: serving, Type: corev1.ServiceTypeClusterIP, Owner: owner},
			typ: corev1.ServiceTypeClusterIP, ports: []port{{"serve", 8000, 8000}}, labels: map[string]string{},
		},
		"a user's override: its labels, annotations, type and spec, its serve port's number; the selector is ours": {
			mutate: grpc, opts: ServeOptions{Name: "s", Labels: map[string]string{rayv1.ServeLabelKey: "svc-serve"}, Selector: serving, Override: override, Owner: owner},
			typ: corev1.ServiceTypeLoadBalancer, ports: []port{{"serve", 80, 8000}, {"serve-grpc", 9000, 9000}},
			labels: map[string]string{"team": "a", rayv1.ServeLabelKey: "svc-serve"}, affinity: corev1.ServiceAffinityClientIP,
		},
		"a head that names its serve port keeps it over the override's": {
			mutate: namedServe, opts: ServeOptions{Name: "s", Selector: serving, Override: override, Owner: owner},
			typ: corev1.ServiceTypeLoadBalancer, ports: []port{{"serve", 8100, 8100}}, labels: map[string]string{"team": "a", rayv1.ServeLabelKey: "hijack"}, affinity: corev1.ServiceAffinityClientIP,
		},
	} {
		t.Run(name, func(t *testing.T) {
			rc := cluster(tc.mutate)
			s := ServeService(rc, tc.opts)
			if s.Name != "s" || s.Namespace != rc.Namespace || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "svc-uid" {
				t.Errorf("placement %s/%s %v", s.Namespace, s.Name, s.OwnerReferences)
			}
			if s.Spec.Type != tc.typ || s.Spec.SessionAffinity != tc.affinity {
				t.Errorf("type %s affinity %s, want %s %s", s.Spec.Type, s.Spec.SessionAffinity, tc.typ, tc.affinity)
			}
			if d := cmp.Diff(serving, s.Spec.Selector); d != "" {
				t.Errorf("selector (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.labels, s.Labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			var got []port
			for _, p := range s.Spec.Ports {
				got = append(got, port{p.Name, p.Port, p.TargetPort.IntVal})
			}
			if d := cmp.Diff(tc.ports, got, cmp.AllowUnexported(port{})); d != "" {
				t.Errorf("ports (-want +got):\n%s", d)
			}
			if tc.opts.Override != nil && s.Annotations["lb"] != "internal" {
				t.Errorf("annotations %v", s.Annotations)
			}
		})
	}
	if override.Labels[rayv1.ServeLabelKey] != "hijack" || override.Spec.Selector["app"] != "other" {
		t.Error("the override was changed")
	}
}
