package raycluster

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func headPod(opts ...podOpt) corev1.Pod {
	return mkPod("demo-head-x", append([]podOpt{label(rayv1.NodeTypeLabelKey, "head"), func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.9" }}, opts...)...)
}
func workerPod(name string, opts ...podOpt) corev1.Pod {
	return mkPod(name, append([]podOpt{label(rayv1.NodeTypeLabelKey, "worker"), label(rayv1.NodeGroupLabelKey, "workers")}, opts...)...)
}

// condSummary renders conditions as "Type=Status/Reason".
func condSummary(st rayv1.RayClusterStatus) map[string]string {
	out := map[string]string{}
	for _, c := range st.Conditions {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func TestComputeStatusConditions(t *testing.T) {
	const (
		headReady   = "HeadPodReady"
		provisioned = "RayClusterProvisioned"
		suspending  = "RayClusterSuspending"
		suspended   = "RayClusterSuspended"
		failureC    = "ReplicaFailure"
	)
	normal := map[string]string{suspending: "False/RayClusterSuspending", suspended: "False/RayClusterSuspended"}
	merge := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	cases := []struct {
		name      string
		suspend   bool
		oldConds  map[string]string // Type → Status/Reason of the previous status
		oldState  rayv1.ClusterState
		pods      []corev1.Pod
		err       error
		gateOff   bool
		want      map[string]string
		wantState rayv1.ClusterState
	}{
		{name: "new cluster without pods",
			want: merge(normal, map[string]string{headReady: "False/HeadPodNotFound", provisioned: "False/RayClusterPodsProvisioning"})},
		{name: "every pod ready", pods: []corev1.Pod{headPod(), workerPod("w")},
			want:      merge(normal, map[string]string{headReady: "True/HeadPodRunningAndReady", provisioned: "True/AllPodRunningAndReadyFirstTime"}),
			wantState: rayv1.Ready},
		{name: "pods ready but one worker missing: not provisioned", pods: []corev1.Pod{headPod()},
			want: merge(normal, map[string]string{headReady: "True/HeadPodRunningAndReady", provisioned: "False/RayClusterPodsProvisioning"})},
		{name: "head image cannot be pulled: the container's reason",
			pods: []corev1.Pod{headPod(phase(corev1.PodPending), notReady(), func(p *corev1.Pod) {
				p.Status.Conditions[0].Reason = "ContainersNotReady"
				p.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}
			}), workerPod("w")},
			want: merge(normal, map[string]string{headReady: "False/ImagePullBackOff", provisioned: "False/RayClusterPodsProvisioning"})},
		{name: "provisioned stays true when a pod later fails", oldConds: map[string]string{provisioned: "True/AllPodRunningAndReadyFirstTime"}, oldState: rayv1.Ready,
			pods:      []corev1.Pod{headPod(), workerPod("w", notReady())},
			want:      merge(normal, map[string]string{headReady: "True/HeadPodRunningAndReady", provisioned: "True/AllPodRunningAndReadyFirstTime"}),
			wantState: rayv1.Ready},
		{name: "failed create sets ReplicaFailure", err: failure(rayv1.FailedCreateWorkerPod, "quota exceeded"), pods: []corev1.Pod{headPod()},
			want: merge(normal, map[string]string{headReady: "True/HeadPodRunningAndReady", provisioned: "False/RayClusterPodsProvisioning", failureC: "True/FailedCreateWorkerPod"})},
		{name: "success removes ReplicaFailure", oldConds: map[string]string{failureC: "True/FailedCreateWorkerPod"}, pods: []corev1.Pod{headPod(), workerPod("w")},
			want:      merge(normal, map[string]string{headReady: "True/HeadPodRunningAndReady", provisioned: "True/AllPodRunningAndReadyFirstTime"}),
			wantState: rayv1.Ready},
		{name: "another error leaves ReplicaFailure alone", oldConds: map[string]string{failureC: "True/FailedCreateWorkerPod"}, err: errors.New("cache not synced"),
			pods: []corev1.Pod{headPod(), workerPod("w")},
			want: merge(normal, map[string]string{headReady: "True/HeadPodRunningAndReady", provisioned: "True/AllPodRunningAndReadyFirstTime", failureC: "True/FailedCreateWorkerPod"})},
		{name: "two head pods", pods: []corev1.Pod{headPod(), headPod(func(p *corev1.Pod) { p.Name = "other" }), workerPod("w")},
			err:  failure(rayv1.MultipleHeadPods, "2 head pods"),
			want: merge(normal, map[string]string{headReady: "False/MultipleHeadPods", provisioned: "False/RayClusterPodsProvisioning", failureC: "True/MultipleHeadPods"})},
		{name: "suspend requested: Suspending", suspend: true, oldConds: merge(normal, map[string]string{provisioned: "True/AllPodRunningAndReadyFirstTime"}),
			oldState: rayv1.Ready, pods: []corev1.Pod{headPod(), workerPod("w")},
			want: map[string]string{headReady: "True/HeadPodRunningAndReady", provisioned: "True/AllPodRunningAndReadyFirstTime",
				suspending: "True/RayClusterSuspending", suspended: "False/RayClusterSuspended"},
			wantState: rayv1.Ready},
		{name: "suspending with pods left", suspend: true, oldConds: map[string]string{suspending: "True/RayClusterSuspending", suspended: "False/RayClusterSuspended", provisioned: "True/AllPodRunningAndReadyFirstTime"},
			pods: []corev1.Pod{workerPod("w")},
			want: map[string]string{headReady: "False/HeadPodNotFound", provisioned: "True/AllPodRunningAndReadyFirstTime",
				suspending: "True/RayClusterSuspending", suspended: "False/RayClusterSuspended"}},
		{name: "suspending, pods gone: Suspended, provisioned reset", suspend: true, oldState: rayv1.Ready,
			oldConds: map[string]string{suspending: "True/RayClusterSuspending", suspended: "False/RayClusterSuspended", provisioned: "True/AllPodRunningAndReadyFirstTime"},
			want: map[string]string{headReady: "False/HeadPodNotFound", provisioned: "False/RayClusterPodsProvisioning",
				suspending: "False/RayClusterSuspending", suspended: "True/RayClusterSuspended"},
			wantState: rayv1.Suspended},
		{name: "suspended stays suspended", suspend: true, oldState: rayv1.Suspended,
			oldConds: map[string]string{suspending: "False/RayClusterSuspending", suspended: "True/RayClusterSuspended", provisioned: "False/RayClusterPodsProvisioning"},
			want: map[string]string{headReady: "False/HeadPodNotFound", provisioned: "False/RayClusterPodsProvisioning",
				suspending: "False/RayClusterSuspending", suspended: "True/RayClusterSuspended"},
			wantState: rayv1.Suspended},
		{name: "resumed", oldState: rayv1.Suspended,
			oldConds: map[string]string{suspending: "False/RayClusterSuspending", suspended: "True/RayClusterSuspended", provisioned: "False/RayClusterPodsProvisioning"},
			want: map[string]string{headReady: "False/HeadPodNotFound", provisioned: "False/RayClusterPodsProvisioning",
				suspending: "False/RayClusterSuspending", suspended: "False/RayClusterSuspended"},
			wantState: rayv1.Suspended},
		{name: "gate off: no conditions, state still computed", gateOff: true, pods: []corev1.Pod{headPod(), workerPod("w")},
			want: map[string]string{}, wantState: rayv1.Ready},
		{name: "gate off: suspended state", gateOff: true, suspend: true, want: map[string]string{}, wantState: rayv1.Suspended},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := builders.RayCluster("demo", "ns").Suspend(tc.suspend).Obj()
			rc.Generation = 3
			rc.Status.State = tc.oldState
			for typ, sr := range tc.oldConds {
				s, r, _ := cut(sr)
				rc.Status.Conditions = append(rc.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(s), Reason: r, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))})
			}
			st := computeStatus(statusInput{Cluster: rc, Pods: tc.pods, ReconcileErr: tc.err, Conditions: !tc.gateOff, Now: t0})
			if d := cmp.Diff(tc.want, condSummary(st)); d != "" {
				t.Errorf("conditions (-want +got)\n%s", d)
			}
			if st.State != tc.wantState {
				t.Errorf("state = %q, want %q", st.State, tc.wantState)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, want 3", st.ObservedGeneration)
			}
			if (replicaFailureReason(tc.err) != "") != (st.Reason != "") {
				t.Errorf("reason = %q: want the failure's text exactly when creating or deleting pods failed", st.Reason)
			}
			if p := findCond(st, "RayClusterSuspending"); p != nil && p.Status == metav1.ConditionTrue {
				if q := findCond(st, "RayClusterSuspended"); q != nil && q.Status == metav1.ConditionTrue {
					t.Error("Suspending and Suspended are both true")
				}
			}
		})
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func findCond(st rayv1.RayClusterStatus, t string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// A converged cluster must compute exactly the status it has: that is what makes the steady
// state write nothing.
func TestComputeStatusIsAFixedPoint(t *testing.T) {
	rc := builders.RayCluster("demo", "ns").Obj()
	rc.Generation = 1
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "demo-head-svc"}, Spec: corev1.ServiceSpec{ClusterIP: "None",
		Ports: []corev1.ServicePort{{Name: "gcs-server", Port: 6379, TargetPort: intstr.FromInt32(6379)}}}}
	in := statusInput{Cluster: rc, Pods: []corev1.Pod{headPod(), workerPod("w")}, HeadService: svc, Conditions: true, Now: t0}
	first := computeStatus(in)
	if first.LastUpdateTime == nil || !first.LastUpdateTime.Time.Equal(t0) || first.StateTransitionTimes[rayv1.Ready] == nil {
		t.Fatalf("a changed status needs lastUpdateTime and the ready transition time: %+v", first)
	}
	rc.Status = first
	in.Now = t0.Add(time.Minute)
	second := computeStatus(in)
	if statusChanged(first, second) {
		t.Fatalf("recomputing a converged status changed it:\n%s", cmp.Diff(first, second))
	}
	if !second.LastUpdateTime.Time.Equal(t0) {
		t.Errorf("lastUpdateTime moved to %v without any other change", second.LastUpdateTime)
	}
	rc.Generation = 2
	third := computeStatus(in)
	if !statusChanged(second, third) || third.ObservedGeneration != 2 || !third.LastUpdateTime.Time.Equal(in.Now) {
		t.Errorf("a new generation must be written with a new lastUpdateTime: %+v", third)
	}
	if !third.StateTransitionTimes[rayv1.Ready].Time.Equal(t0) {
		t.Error("the ready transition time moved without a state change")
	}
}

// An invalid spec keeps the last observation (nothing was acted on) and says why, through the
// same computation: observedGeneration, reason and lastUpdateTime, written once.
func TestComputeStatusOfAnInvalidSpec(t *testing.T) {
	rc := builders.RayCluster("demo", "ns").Obj()
	rc.Generation = 1
	rc.Status = computeStatus(statusInput{Cluster: rc, Pods: []corev1.Pod{headPod(), workerPod("w")}, Conditions: true, Now: t0})
	rc.Generation = 2
	invalid := field.ErrorList{field.Invalid(field.NewPath("spec", "workerGroupSpecs").Index(0).Child("maxReplicas"), 2, "must be at least minReplicas")}
	in := statusInput{Cluster: rc, Invalid: invalid, Pods: nil, ReconcileErr: errors.New("ignored"), Conditions: true, Now: t0.Add(time.Minute)}
	got := computeStatus(in)

	want := *rc.Status.DeepCopy()
	want.ObservedGeneration = 2
	want.Reason = rayv1.ValidationFailed + ": spec.workerGroupSpecs[0].maxReplicas: Invalid value: 2: must be at least minReplicas"
	want.LastUpdateTime = &metav1.Time{Time: t0.Add(time.Minute)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	rc.Status = got
	in.Now = t0.Add(time.Hour)
	if again := computeStatus(in); statusChanged(got, again) || !again.LastUpdateTime.Equal(got.LastUpdateTime) {
		t.Errorf("an unchanged invalid spec must compute the status it has:\n%s", cmp.Diff(got, again))
	}
}

func TestWorkerCountsAndResources(t *testing.T) {
	gpuGroup := builders.WorkerGroup("gpu", 2)
	gpuGroup.NumOfHosts = 2
	gpuGroup.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
	gpuGroup.Template.Spec.Containers[0].Resources.Limits["google.com/tpu"] = resource.MustParse("4")
	gpuGroup.Template.Spec.Containers = append(gpuGroup.Template.Spec.Containers, corev1.Container{Name: "side",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("500m")}}})
	suspended := builders.WorkerGroup("off", 3)
	suspended.Suspend = ptr.To(true)
	clamped := builders.WorkerGroup("clamped", 50) // max 10
	spec := builders.RayCluster("demo", "ns").WorkerGroups(gpuGroup, suspended, clamped).Obj().Spec

	desired, lo, hi := workerCounts(&spec)
	if desired != 14 || lo != 0 || hi != 30 {
		t.Errorf("desired, min, max = %d, %d, %d; want 14 (2×2 + 0 + 10), 0, 30 (10×2 + 10, suspended group excluded)", desired, lo, hi)
	}
	res := desiredResources(&spec)
	want := map[corev1.ResourceName]string{"cpu": "17", "memory": "16Gi", "nvidia.com/gpu": "4", "google.com/tpu": "16"}
	for n, q := range want {
		got := res[n]
		if got.Cmp(resource.MustParse(q)) != 0 {
			t.Errorf("%s = %s, want %s", n, got.String(), q)
		}
	}
	if g := sumGPUs(res); g.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("GPUs = %s, want 4", g.String())
	}
}

func TestEndpointsAndHeadInfo(t *testing.T) {
	head := []corev1.Pod{headPod()}
	svc := func(typ corev1.ServiceType, ip string, mutate ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "demo-head-svc"}, Spec: corev1.ServiceSpec{Type: typ, ClusterIP: ip,
			Ports: []corev1.ServicePort{{Name: "dashboard", Port: 8265, TargetPort: intstr.FromInt32(8265)},
				{Name: "named", Port: 1, TargetPort: intstr.FromString("web")},
				{Name: "np", Port: 2, TargetPort: intstr.FromInt32(2), NodePort: 30002}}}}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	if d := cmp.Diff(map[string]string{"dashboard": "8265", "named": "web", "np": "30002"}, endpoints(svc(corev1.ServiceTypeClusterIP, "None"))); d != "" {
		t.Errorf("endpoints (-want +got)\n%s", d)
	}
	cases := []struct {
		name string
		svc  *corev1.Service
		want rayv1.HeadInfo
	}{
		{"no service yet", nil, rayv1.HeadInfo{PodName: "demo-head-x", PodIP: "10.0.0.9"}},
		{"headless: the pod IP", svc(corev1.ServiceTypeClusterIP, "None"), rayv1.HeadInfo{PodName: "demo-head-x", PodIP: "10.0.0.9", ServiceName: "demo-head-svc", ServiceIP: "10.0.0.9"}},
		{"cluster IP", svc(corev1.ServiceTypeClusterIP, "10.96.0.5"), rayv1.HeadInfo{PodName: "demo-head-x", PodIP: "10.0.0.9", ServiceName: "demo-head-svc", ServiceIP: "10.96.0.5"}},
		{"load balancer", svc(corev1.ServiceTypeLoadBalancer, "10.96.0.5", func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}
		}), rayv1.HeadInfo{PodName: "demo-head-x", PodIP: "10.0.0.9", ServiceName: "demo-head-svc", ServiceIP: "lb.example.com"}},
	}
	for _, tc := range cases {
		if d := cmp.Diff(tc.want, headInfo(head, tc.svc)); d != "" {
			t.Errorf("%s (-want +got)\n%s", tc.name, d)
		}
	}
}

func TestConditionReason(t *testing.T) {
	for in, want := range map[string]string{"ImagePullBackOff": "ImagePullBackOff", "": "Unknown", "Err Image-Pull!": "ErrImagePull", "1abc": "abc", "OOMKilled:": "OOMKilled"} {
		if got := conditionReason(in); got != want {
			t.Errorf("conditionReason(%q) = %q, want %q", in, got, want)
		}
	}
}
