package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func withCollector(o rayv1.CollectorOptions) func(*rayv1.RayCluster) {
	return func(rc *rayv1.RayCluster) {
		rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &o}
	}
}

func TestHistoryCollectorGoldens(t *testing.T) {
	full := rayv1.CollectorOptions{
		Image:           ptr.To("quay.io/kuberay/collector:v1.6.0"),
		ImagePullPolicy: ptr.To(corev1.PullAlways),
		Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		Env: []corev1.EnvVar{{Name: "STORAGE_BACKEND", Value: "s3"}, {Name: "S3_BUCKET", Value: "ray-history"}},
	}
	t.Run("head-history-collector", func(t *testing.T) {
		// With the autoscaler, which shares the same /tmp/ray volume.
		rc := cluster(withCollector(full), func(rc *rayv1.RayCluster) { rc.Spec.EnableInTreeAutoscaling = ptr.To(true) })
		golden(t, "head-history-collector", HeadPod(rc, "hash1", Settings{}))
	})
	t.Run("worker-history-collector-defaults", func(t *testing.T) {
		rc := cluster(withCollector(rayv1.CollectorOptions{}))
		golden(t, "worker-history-collector-defaults", WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{}))
	})
}

func TestHistoryCollector(t *testing.T) {
	collector := func(pod *corev1.Pod) *corev1.Container {
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == CollectorContainer {
				return &pod.Spec.Containers[i]
			}
		}
		return nil
	}
	env := func(c *corev1.Container, name string) *corev1.EnvVar {
		for i := range c.Env {
			if c.Env[i].Name == name {
				return &c.Env[i]
			}
		}
		return nil
	}

	t.Run("no historyServerOptions or no collectorOptions: no sidecar", func(t *testing.T) {
		for _, rc := range []*rayv1.RayCluster{cluster(), cluster(func(rc *rayv1.RayCluster) {
			rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{}
		})} {
			if c := collector(HeadPod(rc, "h", Settings{})); c != nil {
				t.Errorf("collector added: %+v", c)
			}
			if c := collector(WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})); c != nil {
				t.Errorf("collector added to a worker: %+v", c)
			}
		}
	})

	t.Run("the template's own /tmp/ray volume and postStart hook are used, the user's Ray env wins", func(t *testing.T) {
		hook := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"echo", "mine"}}}
		rc := cluster(withCollector(rayv1.CollectorOptions{}), func(rc *rayv1.RayCluster) {
			spec := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "session", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			ray := &spec.Containers[0]
			ray.VolumeMounts = append(ray.VolumeMounts, corev1.VolumeMount{Name: "session", MountPath: "/tmp/ray"})
			ray.Lifecycle = &corev1.Lifecycle{PostStart: hook}
			ray.Env = append(ray.Env, corev1.EnvVar{Name: EnvRayEnableEvents, Value: "false"})
		})
		before := rc.DeepCopy()
		pod := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
		if d := cmp.Diff(before, rc); d != "" {
			t.Fatalf("building the pod changed the cluster:\n%s", d)
		}
		c := collector(pod)
		if c == nil {
			t.Fatal("no collector")
		}
		if d := cmp.Diff([]corev1.VolumeMount{{Name: "session", MountPath: "/tmp/ray"}}, c.VolumeMounts); d != "" {
			t.Errorf("collector mounts (-want +got):\n%s", d)
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == RayLogsVolumeName {
				t.Errorf("a second /tmp/ray volume %q was added", v.Name)
			}
		}
		ray := &pod.Spec.Containers[0]
		if d := cmp.Diff(hook, ray.Lifecycle.PostStart); d != "" {
			t.Errorf("the template's postStart hook was replaced:\n%s", d)
		}
		if e := env(ray, EnvRayEnableEvents); e == nil || e.Value != "false" {
			t.Errorf("%s = %+v, want the user's false", EnvRayEnableEvents, e)
		}
		if e := env(ray, EnvRayEventsExportAddress); e == nil || e.Value != "http://localhost:8084/v1/events" {
			t.Errorf("%s = %+v", EnvRayEventsExportAddress, e)
		}
		if e := env(c, EnvCollectorPodIP); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
			t.Errorf("%s = %+v", EnvCollectorPodIP, e)
		}
	})
}
