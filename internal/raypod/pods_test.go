package raypod

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares obj, as YAML, with testdata/<name>.yaml (rewritten with -update).
func golden(t *testing.T, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./controllers/raycluster -run %s -update to create it)", err, t.Name())
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs from the golden file (-want +got); run with -update if intended:\n%s", path, d)
	}
}

func cluster(mutate ...func(*rayv1.RayCluster)) *rayv1.RayCluster {
	rc := builders.RayCluster("demo", "team-a").Obj()
	rc.UID = types.UID("8a3c1e4e-0000-4000-8000-000000000001")
	for _, m := range mutate {
		m(rc)
	}
	return rc
}

func TestPodGoldens(t *testing.T) {
	gpu := func(rc *rayv1.RayCluster) {
		g := &rc.Spec.WorkerGroupSpecs[0]
		g.Resources = map[string]string{"CPU": "2", "accelerator_type:A100": "1"}
		g.Labels = map[string]string{"zone": "us-east-1a", "tier": "gpu"}
		c := &g.Template.Spec.Containers[0]
		c.Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
		c.Resources.Limits["google.com/tpu"] = resource.MustParse("4")
	}
	cases := []struct {
		name string
		pod  func() *corev1.Pod
	}{
		{"head-basic", func() *corev1.Pod { return HeadPod(cluster(), "hash1", Settings{}) }},
		{"worker-basic", func() *corev1.Pod {
			rc := cluster()
			return WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
		}},
		{"head-autoscaler-v2", func() *corev1.Pod {
			rc := cluster(func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{
					Version:         ptr.To(rayv1.AutoscalerVersionV2),
					Image:           ptr.To("rayproject/ray:2.52.0-autoscaler"),
					ImagePullPolicy: ptr.To(corev1.PullAlways),
					Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
					Env: []corev1.EnvVar{{Name: "AUTOSCALER_LOG_LEVEL", Value: "debug"}},
				}
			})
			return HeadPod(rc, "hash1", Settings{})
		}},
		{"worker-autoscaler-v2", func() *corev1.Pod {
			rc := cluster(func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
			})
			return WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
		}},
		{"head-overwrite-cmd", func() *corev1.Pod {
			rc := cluster(func(rc *rayv1.RayCluster) {
				rc.Annotations = map[string]string{rayv1.OverwriteContainerCmdKey: "true"}
				c := &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
				c.Command = []string{"/bin/bash", "-c"}
				c.Args = []string{"echo hello && $KUBERAY_GEN_RAY_START_CMD"}
			})
			return HeadPod(rc, "hash1", Settings{})
		}},
		{"head-user-command-prefix", func() *corev1.Pod {
			rc := cluster(func(rc *rayv1.RayCluster) {
				c := &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
				c.Command = []string{"pip install emoji"}
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0", "dashboard-port": "9000", "log-color": "true"}
			})
			return HeadPod(rc, "hash1", Settings{})
		}},
		{"worker-resources-labels-accelerators", func() *corev1.Pod {
			rc := cluster(gpu)
			return WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
		}},
		{"worker-multihost-indexed", func() *corev1.Pod {
			rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].NumOfHosts = 4 })
			return WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], &ReplicaIndex{Index: 2, Name: "workers-abcde", Host: 3, MultiHost: true}, Settings{})
		}},
		{"worker-rayservice", func() *corev1.Pod {
			rc := cluster(func(rc *rayv1.RayCluster) {
				rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: rayv1.RayServiceKind, rayv1.OriginatedFromCRNameLabelKey: "svc"}
			})
			return WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
		}},
		{"head-ray-2.53-http-probes", func() *corev1.Pod {
			rc := cluster(func(rc *rayv1.RayCluster) {
				rc.Spec.RayVersion = "2.53.0"
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}
			})
			return HeadPod(rc, "hash1", Settings{})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, tc.pod()) })
	}
}

func TestBuildDoesNotModifyTheSpec(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
		rc.Spec.WorkerGroupSpecs[0].Resources = map[string]string{"GPU": "1"}
	})
	before := rc.DeepCopy()
	HeadPod(rc, "h", Settings{})
	WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
	HeadService(rc)
	if d := cmp.Diff(before, rc); d != "" {
		t.Fatalf("building pods changed the cluster:\n%s", d)
	}
}

func TestUserLabelsCannotHijackSelectors(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Labels = map[string]string{
			rayv1.ClusterLabelKey: "other", rayv1.NodeTypeLabelKey: "head", rayv1.NodeGroupLabelKey: "x", "team": "ml"}
	})
	pod := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
	want := map[string]string{rayv1.ClusterLabelKey: "demo", rayv1.NodeTypeLabelKey: "worker", rayv1.NodeGroupLabelKey: "workers", "team": "ml"}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
}

// Workers find the GCS at the head Service's name in the cluster's DNS domain, which the
// operator is given (its CLUSTER_DOMAIN, which the chart sets from clusterDomain).
func TestWorkersUseTheClusterDomain(t *testing.T) {
	rc := builders.RayCluster("demo", "team-a").Obj()
	for _, tc := range []struct{ domain, want string }{
		{"", "demo-head-svc.team-a.svc.cluster.local"},
		{"corp.example", "demo-head-svc.team-a.svc.corp.example"},
	} {
		pod := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{ClusterDomain: tc.domain})
		var found bool
		for _, e := range pod.Spec.Containers[0].Env {
			if e.Name == "FQ_RAY_IP" {
				found = true
				if e.Value != tc.want {
					t.Errorf("domain %q: FQ_RAY_IP = %q, want %q", tc.domain, e.Value, tc.want)
				}
			}
		}
		if !found {
			t.Fatalf("no FQ_RAY_IP in %v", pod.Spec.Containers[0].Env)
		}
		for _, c := range pod.Spec.InitContainers {
			if c.Name == WaitGCSInitContainer && !strings.Contains(strings.Join(c.Args, " "), tc.want+":6379") {
				t.Errorf("domain %q: %s waits elsewhere: %v", tc.domain, c.Name, c.Args)
			}
		}
		if got := HeadDNSNames(rc, tc.domain)[4]; got != tc.want {
			t.Errorf("domain %q: the head certificate names %q, want %q", tc.domain, got, tc.want)
		}
	}
}

// /dev/shm is memory-backed even when the Ray container sets no memory (as in KubeRay):
// the object store lives there. Only its size limit needs the container's memory.
func TestSharedMemoryIsMemoryBackedWithoutAMemorySetting(t *testing.T) {
	rc := builders.RayCluster("demo", "team-a").Obj()
	g := &rc.Spec.WorkerGroupSpecs[0]
	g.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	pod := WorkerPod(rc, g, nil, Settings{})
	for _, v := range pod.Spec.Volumes {
		if v.Name == SharedMemoryVolumeName {
			if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit != nil {
				t.Errorf("shared memory volume %+v, want a memory-backed emptyDir without a size limit", v.VolumeSource)
			}
			return
		}
	}
	t.Fatalf("no %s volume in %v", SharedMemoryVolumeName, pod.Spec.Volumes)
}

// A worker group name with upper-case letters is kept as written in the labels (selectors
// and the autoscaler match on it) and lower-cased in pod names, which must be DNS names.
func TestWorkerPodOfAnUpperCaseGroup(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].GroupName = "GPU-Workers" })
	pod := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
	if want := "demo-gpu-workers-worker-"; pod.GenerateName != want {
		t.Errorf("generateName = %q, want %q", pod.GenerateName, want)
	}
	if got := pod.Labels[rayv1.NodeGroupLabelKey]; got != "GPU-Workers" {
		t.Errorf("label %s = %q, want the group name as written", rayv1.NodeGroupLabelKey, got)
	}
}
