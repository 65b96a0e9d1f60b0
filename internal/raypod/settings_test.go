package raypod

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func autoscaling(rc *rayv1.RayCluster) { rc.Spec.EnableInTreeAutoscaling = ptr.To(true) }

func names(cs []corev1.Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// Each of KubeRay's environment switches changes the pods as KubeRay's does, and nothing
// else: undoing the expected change gives the pod built without the switch.
func TestEnvironmentSwitches(t *testing.T) {
	bash := []string{"/bin/bash", "-c", "--"}
	for _, tc := range []struct {
		name     string
		s        Settings
		mutate   func(*rayv1.RayCluster)
		head     bool
		expected func(t *testing.T, pod *corev1.Pod) // checks the change and undoes it
	}{{
		name: "ENABLE_INIT_CONTAINER_INJECTION=false: no wait-gcs-ready in workers",
		s:    Settings{NoWaitGCSInitContainer: true},
		expected: func(t *testing.T, pod *corev1.Pod) {
			if container(pod.Spec.InitContainers, WaitGCSInitContainer) != nil {
				t.Errorf("init containers %v still wait for the GCS", names(pod.Spec.InitContainers))
			}
			// Undo: the builder appends it after the template's init containers.
			rc := cluster()
			base := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, *container(base.Spec.InitContainers, WaitGCSInitContainer))
		},
	}, {
		name: "ENABLE_INIT_CONTAINER_INJECTION=false leaves the head alone",
		s:    Settings{NoWaitGCSInitContainer: true}, head: true,
		expected: func(*testing.T, *corev1.Pod) {},
	}, {
		name: "ENABLE_PROBES_INJECTION=false: no probes on the head's Ray container",
		s:    Settings{NoProbes: true}, head: true,
		expected: func(t *testing.T, pod *corev1.Pod) {
			ray := &pod.Spec.Containers[rayv1.RayContainerIndex]
			if ray.LivenessProbe != nil || ray.ReadinessProbe != nil {
				t.Errorf("probes injected: %v %v", ray.LivenessProbe, ray.ReadinessProbe)
			}
			rc := cluster()
			base := HeadPod(rc, "h", Settings{}).Spec.Containers[rayv1.RayContainerIndex]
			ray.LivenessProbe, ray.ReadinessProbe = base.LivenessProbe, base.ReadinessProbe
		},
	}, {
		name: "ENABLE_PROBES_INJECTION=false: a RayService worker gets no Serve readiness check either",
		s:    Settings{NoProbes: true},
		mutate: func(rc *rayv1.RayCluster) {
			rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: rayv1.RayServiceKind}
		},
		expected: func(t *testing.T, pod *corev1.Pod) {
			ray := &pod.Spec.Containers[rayv1.RayContainerIndex]
			if ray.LivenessProbe != nil || ray.ReadinessProbe != nil {
				t.Errorf("probes injected: %v %v", ray.LivenessProbe, ray.ReadinessProbe)
			}
			rc := cluster(func(rc *rayv1.RayCluster) {
				rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: rayv1.RayServiceKind}
			})
			base := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{}).Spec.Containers[rayv1.RayContainerIndex]
			ray.LivenessProbe, ray.ReadinessProbe = base.LivenessProbe, base.ReadinessProbe
		},
	}, {
		name: "ENABLE_PROBES_INJECTION=false keeps the template's own probes",
		s:    Settings{NoProbes: true},
		mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 7}
		},
		expected: func(t *testing.T, pod *corev1.Pod) {
			ray := &pod.Spec.Containers[rayv1.RayContainerIndex]
			if ray.ReadinessProbe == nil || ray.ReadinessProbe.PeriodSeconds != 7 || ray.LivenessProbe != nil {
				t.Errorf("probes %v %v, want the template's readiness probe only", ray.LivenessProbe, ray.ReadinessProbe)
			}
			rc := cluster()
			ray.LivenessProbe = WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{}).Spec.Containers[rayv1.RayContainerIndex].LivenessProbe
		},
	}, {
		name: "ENABLE_LOGIN_SHELL=true: bash -l for the head's Ray container and autoscaler",
		s:    Settings{LoginShell: true}, head: true, mutate: autoscaling,
		expected: func(t *testing.T, pod *corev1.Pod) {
			for _, c := range []*corev1.Container{&pod.Spec.Containers[rayv1.RayContainerIndex], container(pod.Spec.Containers, AutoscalerContainer)} {
				if want := []string{"/bin/bash", "-cl", "--"}; !slices.Equal(c.Command, want) {
					t.Errorf("%s runs %v, want %v", c.Name, c.Command, want)
				}
				c.Command = bash
			}
		},
	}, {
		name: "ENABLE_LOGIN_SHELL=true: the worker's wait-gcs-ready too",
		s:    Settings{LoginShell: true},
		expected: func(t *testing.T, pod *corev1.Pod) {
			for _, c := range []*corev1.Container{&pod.Spec.Containers[rayv1.RayContainerIndex], container(pod.Spec.InitContainers, WaitGCSInitContainer)} {
				if want := []string{"/bin/bash", "-cl", "--"}; !slices.Equal(c.Command, want) {
					t.Errorf("%s runs %v, want %v", c.Name, c.Command, want)
				}
				c.Command = bash
			}
		},
	}, {
		name: "ENABLE_LOGIN_SHELL=true leaves a command that starts Ray itself alone",
		s:    Settings{LoginShell: true}, head: true,
		mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Command = []string{"sh", "-c", "ray start --head --block"}
		},
		expected: func(t *testing.T, pod *corev1.Pod) {
			if got := pod.Spec.Containers[0].Command; got[0] != "sh" {
				t.Errorf("the template's own command was replaced: %v", got)
			}
		},
	}, {
		name: "ENABLE_DETERMINISTIC_HEAD_POD_NAME=true: the head is <cluster>-head",
		s:    Settings{DeterministicHeadPodName: true}, head: true,
		expected: func(t *testing.T, pod *corev1.Pod) {
			if pod.Name != "demo-head" || pod.GenerateName != "" {
				t.Errorf("name %q, generateName %q, want demo-head and none", pod.Name, pod.GenerateName)
			}
			pod.Name, pod.GenerateName = "", "demo-head-"
		},
	}, {
		name: "ENABLE_DETERMINISTIC_HEAD_POD_NAME=true leaves worker names generated",
		s:    Settings{DeterministicHeadPodName: true},
		expected: func(t *testing.T, pod *corev1.Pod) {
			if pod.Name != "" || pod.GenerateName != "demo-workers-worker-" {
				t.Errorf("name %q, generateName %q", pod.Name, pod.GenerateName)
			}
		},
	}, {
		name: "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true does not change pods",
		s:    Settings{HeadClusterIPService: true}, head: true,
		expected: func(*testing.T, *corev1.Pod) {},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var mutate []func(*rayv1.RayCluster)
			if tc.mutate != nil {
				mutate = append(mutate, tc.mutate)
			}
			build := func(s Settings) *corev1.Pod {
				rc := cluster(mutate...)
				if tc.head {
					return HeadPod(rc, "h", s)
				}
				return WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, s)
			}
			got, want := build(tc.s), build(Settings{})
			tc.expected(t, got)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("the switch changed more than expected (-without +with, expected change undone):\n%s", d)
			}
		})
	}
}

func TestHeadPodName(t *testing.T) {
	long := strings.Repeat("a", 60)
	for in, want := range map[string]string{"demo": "demo-head", long: strings.Repeat("a", 50) + "-head"} {
		if got := HeadPodName(in); got != want {
			t.Errorf("HeadPodName(%q) = %q, want %q", in, got, want)
		}
	}
}

// ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE gives the head Service a cluster IP, as KubeRay's:
// only where the Service would otherwise be headless.
func TestHeadClusterIPService(t *testing.T) {
	on := Settings{HeadClusterIPService: true}
	for _, tc := range []struct {
		name       string
		mutate     func(*rayv1.RayCluster)
		s          Settings
		headless   bool
		notReadyOK bool
	}{
		{name: "default: headless, publishing the head before it is ready", headless: true, notReadyOK: true},
		{name: "switch on: a cluster IP, endpoints once ready", s: on},
		{name: "switch on, NodePort: unchanged", s: on, mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort }},
		{name: "switch on, the user's headService: unchanged", s: on, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
		}, headless: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mutate []func(*rayv1.RayCluster)
			if tc.mutate != nil {
				mutate = append(mutate, tc.mutate)
			}
			rc := cluster(mutate...)
			svc := tc.s.HeadService(rc)
			if got := svc.Spec.ClusterIP == corev1.ClusterIPNone; got != tc.headless {
				t.Errorf("headless = %v, want %v (clusterIP %q)", got, tc.headless, svc.Spec.ClusterIP)
			}
			if svc.Spec.PublishNotReadyAddresses != tc.notReadyOK {
				t.Errorf("publishNotReadyAddresses = %v, want %v", svc.Spec.PublishNotReadyAddresses, tc.notReadyOK)
			}
			want := HeadService(rc)
			want.Spec.ClusterIP, want.Spec.PublishNotReadyAddresses = svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses
			if d := cmp.Diff(want, svc); d != "" {
				t.Errorf("more changed than the cluster IP:\n%s", d)
			}
		})
	}
}

func TestShell(t *testing.T) {
	if got := (Settings{}).Shell(); !slices.Equal(got, []string{"/bin/bash", "-c", "--"}) {
		t.Errorf("default shell %v", got)
	}
	if got := (Settings{LoginShell: true}).Shell(); !slices.Equal(got, []string{"/bin/bash", "-cl", "--"}) {
		t.Errorf("login shell %v", got)
	}
}

func sidecar(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "fluent/fluent-bit:3.0", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}
}

// The admin's sidecars go to the pods of their kind, after every container raygate adds,
// as copies.
func TestDefaultSidecars(t *testing.T) {
	s := Settings{Defaults: PodDefaults{
		HeadSidecars:   []corev1.Container{sidecar("log-shipper")},
		WorkerSidecars: []corev1.Container{sidecar("log-shipper"), sidecar("profiler")},
	}}
	rc := cluster(autoscaling, withCollector(rayv1.CollectorOptions{}))
	head := HeadPod(rc, "h", s)
	if got, want := names(head.Spec.Containers), []string{"ray-head", AutoscalerContainer, CollectorContainer, "log-shipper"}; !slices.Equal(got, want) {
		t.Errorf("head containers %v, want %v", got, want)
	}
	worker := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, s)
	if got, want := names(worker.Spec.Containers), []string{"ray-worker", CollectorContainer, "log-shipper", "profiler"}; !slices.Equal(got, want) {
		t.Errorf("worker containers %v, want %v", got, want)
	}
	// Copies: the pod's sidecar is its own, and raygate adds nothing to it.
	head.Spec.Containers[3].Env = append(head.Spec.Containers[3].Env, corev1.EnvVar{Name: "X"})
	if len(s.Defaults.HeadSidecars[0].Env) != 0 {
		t.Error("the pod shares its sidecar with the settings")
	}
	if d := cmp.Diff(sidecar("profiler"), worker.Spec.Containers[3]); d != "" {
		t.Errorf("raygate changed the admin's sidecar:\n%s", d)
	}
}

// Default variables reach the Ray container only, after the template's own (which win),
// and before raygate's: raygate's own variables replace a default of the same name, those
// raygate only adds when missing keep the default, as in KubeRay.
func TestDefaultContainerEnv(t *testing.T) {
	s := Settings{Defaults: PodDefaults{Env: []corev1.EnvVar{
		{Name: "RAY_enable_open_telemetry", Value: "1"},
		{Name: "TEAM", Value: "from-default"},
		{Name: EnvRayPort, Value: "7000"},            // raygate sets it only when missing
		{Name: EnvClusterName, Value: "not-the-one"}, // raygate's own
	}}}
	rc := cluster(autoscaling, func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TEAM", Value: "from-template"}}
	})
	worker := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, s)
	env := envOf(worker.Spec.Containers[rayv1.RayContainerIndex])
	for name, want := range map[string]string{"RAY_enable_open_telemetry": "1", "TEAM": "from-template", EnvRayPort: "7000"} {
		if env[name].Value != want {
			t.Errorf("%s = %q, want %q", name, env[name].Value, want)
		}
	}
	if e := env[EnvClusterName]; e.Value != "" || e.ValueFrom == nil {
		t.Errorf("%s = %+v, want raygate's field reference", EnvClusterName, e)
	}
	ray := worker.Spec.Containers[rayv1.RayContainerIndex].Env
	if ray[0].Name != "TEAM" || ray[1].Name != "RAY_enable_open_telemetry" {
		t.Errorf("order %v: the template's first, then the defaults", ray[:2])
	}
	// Only the Ray container: not wait-gcs-ready (it copies the template's env) nor the
	// head's autoscaler.
	if _, ok := envOf(*container(worker.Spec.InitContainers, WaitGCSInitContainer))["RAY_enable_open_telemetry"]; ok {
		t.Error("wait-gcs-ready got the default variable")
	}
	head := HeadPod(rc, "h", s)
	if _, ok := envOf(*container(head.Spec.Containers, AutoscalerContainer))["RAY_enable_open_telemetry"]; ok {
		t.Error("the autoscaler got the default variable")
	}
	if envOf(head.Spec.Containers[rayv1.RayContainerIndex])["RAY_enable_open_telemetry"].Value != "1" {
		t.Error("the head's Ray container lacks the default variable")
	}
}

// Default labels and annotations fill in what a pod has not got: the template's and
// raygate's own keys win.
func TestDefaultLabelsAndAnnotations(t *testing.T) {
	s := Settings{Defaults: PodDefaults{
		Labels:      map[string]string{"cost-center": "ml", "team": "default", "app.kubernetes.io/created-by": "someone"},
		Annotations: map[string]string{"prometheus.io/scrape": "true", "owner": "default", rayv1.HashWithoutReplicasAndWorkersToDeleteKey: "x"},
	}}
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: rayv1.RayServiceKind}
		for _, tmpl := range []*corev1.PodTemplateSpec{&rc.Spec.HeadGroupSpec.Template, &rc.Spec.WorkerGroupSpecs[0].Template} {
			tmpl.Labels = map[string]string{"team": "template"}
			tmpl.Annotations = map[string]string{"owner": "template"}
		}
	})
	for _, pod := range []*corev1.Pod{HeadPod(rc, "hash1", s), WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, s)} {
		for k, want := range map[string]string{"cost-center": "ml", "team": "template", rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName} {
			if got := pod.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", pod.Labels[rayv1.NodeTypeLabelKey], k, got, want)
			}
		}
		if _, ok := pod.Labels[rayv1.ServeLabelKey]; !ok {
			t.Errorf("%s: raygate's serve label missing", pod.Labels[rayv1.NodeTypeLabelKey])
		}
		for k, want := range map[string]string{"prometheus.io/scrape": "true", "owner": "template"} {
			if got := pod.Annotations[k]; got != want {
				t.Errorf("%s: annotation %s = %q, want %q", pod.Labels[rayv1.NodeTypeLabelKey], k, got, want)
			}
		}
	}
	if got := HeadPod(rc, "hash1", s).Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]; got != "hash1" {
		t.Errorf("the head's spec hash %q, want raygate's", got)
	}
}

// Settings never change the cluster the pods are built from.
func TestSettingsDoNotModifyTheSpec(t *testing.T) {
	s := Settings{LoginShell: true, NoProbes: true, NoWaitGCSInitContainer: true, DeterministicHeadPodName: true, Defaults: PodDefaults{
		HeadSidecars: []corev1.Container{sidecar("a")}, WorkerSidecars: []corev1.Container{sidecar("b")},
		Env: []corev1.EnvVar{{Name: "X", Value: "1"}}, Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"},
	}}
	rc := cluster(autoscaling)
	before := rc.DeepCopy()
	HeadPod(rc, "h", s)
	WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, s)
	if d := cmp.Diff(before, rc); d != "" {
		t.Errorf("the builders modified the cluster:\n%s", d)
	}
}
