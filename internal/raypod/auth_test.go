package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestTokenAuthEnv(t *testing.T) {
	ref := func(secret string) []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: "RAY_AUTH_MODE", Value: "token"},
			{Name: "RAY_AUTH_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "auth_token"}}},
		}
	}
	cases := map[string]struct {
		auth *rayv1.AuthOptions
		want []corev1.EnvVar // nil: no auth variables at all
	}{
		"no authOptions":                  {},
		"mode disabled":                   {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}},
		"no mode (KubeRay: off)":          {auth: &rayv1.AuthOptions{}},
		"token from the generated Secret": {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, want: ref("demo")},
		"token from a named Secret":       {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("ray-token")}, want: ref("ray-token")},
		"enableK8sTokenAuth false":        {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(false)}, want: ref("demo")},
		// The user's inline token is dropped too: Ray would use it instead of the pod's.
		"Kubernetes-delegated": {
			auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)},
			want: []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}, {Name: "RAY_ENABLE_K8S_TOKEN_AUTH", Value: "true"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := builders.RayCluster("demo", "team-a").Obj()
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.AuthOptions = tc.auth
			// A user's inline value never survives: raygate's replaces it.
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = append(rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env,
				corev1.EnvVar{Name: "RAY_AUTH_TOKEN", Value: "inline"})
			head := HeadPod(rc, "h", Settings{})
			worker := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
			containers := map[string]*corev1.Container{
				"head ray":       &head.Spec.Containers[0],
				"autoscaler":     container(head.Spec.Containers, AutoscalerContainer),
				"worker ray":     &worker.Spec.Containers[0],
				"wait-gcs-ready": container(worker.Spec.InitContainers, WaitGCSInitContainer),
			}
			for what, c := range containers {
				if c == nil {
					t.Fatalf("%s: no such container", what)
				}
				got := authVars(c.Env)
				want := tc.want
				if want == nil && what == "head ray" {
					want = []corev1.EnvVar{{Name: "RAY_AUTH_TOKEN", Value: "inline"}}
				}
				byName := cmpopts.SortSlices(func(a, b corev1.EnvVar) bool { return a.Name < b.Name })
				if diff := cmp.Diff(want, got, byName); diff != "" {
					t.Errorf("%s (-want +got):\n%s", what, diff)
				}
			}
		})
	}
}

func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func authVars(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if e.Name == "RAY_AUTH_MODE" || e.Name == "RAY_AUTH_TOKEN" || e.Name == "RAY_ENABLE_K8S_TOKEN_AUTH" {
			out = append(out, e)
		}
	}
	return out
}

// TestK8sTokenAuthVolume: in the delegated mode every Ray process mounts the pod's projected
// ServiceAccount token, exactly as KubeRay does; a volume or mount of the user's in its place
// (admission refuses them; a stored object may have one) is replaced, other containers are
// left alone, and the Secret-based modes add nothing.
func TestK8sTokenAuthVolume(t *testing.T) {
	wantVolume := corev1.Volume{Name: "ray-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
	}}}
	wantMount := corev1.VolumeMount{Name: "ray-token", MountPath: "/var/run/secrets/ray.io/serviceaccount", ReadOnly: true}
	cases := map[string]struct {
		auth *rayv1.AuthOptions
		k8s  bool
	}{
		"Kubernetes-delegated":     {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}, k8s: true},
		"token from a Secret":      {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}},
		"delegated but mode unset": {auth: &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := builders.RayCluster("demo", "team-a").Obj()
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.AuthOptions = tc.auth
			head := &rc.Spec.HeadGroupSpec.Template.Spec
			head.Volumes = append(head.Volumes, corev1.Volume{Name: "ray-token"})
			head.Containers[0].VolumeMounts = append(head.Containers[0].VolumeMounts,
				corev1.VolumeMount{Name: "other", MountPath: "/var/run/secrets/ray.io/serviceaccount"})
			head.Containers = append(head.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
			pods := map[string]*corev1.Pod{"head": HeadPod(rc, "h", Settings{}), "worker": WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})}
			for kind, pod := range pods {
				var gotVolumes []corev1.Volume
				for _, v := range pod.Spec.Volumes {
					if v.Name == "ray-token" {
						gotVolumes = append(gotVolumes, v)
					}
				}
				var wantVolumes []corev1.Volume
				switch {
				case tc.k8s:
					wantVolumes = []corev1.Volume{wantVolume}
				case kind == "head":
					wantVolumes = []corev1.Volume{{Name: "ray-token"}}
				}
				if diff := cmp.Diff(wantVolumes, gotVolumes); diff != "" {
					t.Errorf("%s volumes (-want +got):\n%s", kind, diff)
				}
				all := append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
				for _, c := range all {
					var got []corev1.VolumeMount
					for _, m := range c.VolumeMounts {
						if m.Name == "ray-token" || m.MountPath == wantMount.MountPath {
							got = append(got, m)
						}
					}
					rayProcess := c.Name == pod.Spec.Containers[0].Name || c.Name == AutoscalerContainer || c.Name == WaitGCSInitContainer
					var want []corev1.VolumeMount
					switch {
					case tc.k8s && rayProcess:
						want = []corev1.VolumeMount{wantMount}
					case kind == "head" && c.Name == pod.Spec.Containers[0].Name:
						want = []corev1.VolumeMount{{Name: "other", MountPath: wantMount.MountPath}}
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s container %s mounts (-want +got):\n%s", kind, c.Name, diff)
					}
				}
				if tc.k8s && container(pod.Spec.InitContainers, WaitGCSInitContainer) == nil && kind == "worker" {
					t.Errorf("worker has no %s init container", WaitGCSInitContainer)
				}
			}
		})
	}
}
