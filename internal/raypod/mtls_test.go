package raypod

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestMTLSPods(t *testing.T) {
	wantEnv := []corev1.EnvVar{
		{Name: "RAY_USE_TLS", Value: "1"},
		{Name: "RAY_TLS_SERVER_CERT", Value: "/etc/ray/tls/tls.crt"},
		{Name: "RAY_TLS_SERVER_KEY", Value: "/etc/ray/tls/tls.key"},
		{Name: "RAY_TLS_CA_CERT", Value: "/etc/ray/tls/ca.crt"},
	}
	cases := map[string]struct {
		tls *rayv1.TLSOptions
		on  bool
	}{
		"no tlsOptions":      {},
		"enabled false":      {tls: &rayv1.TLSOptions{Enabled: ptr.To(false)}},
		"empty tlsOptions":   {tls: &rayv1.TLSOptions{}, on: true},
		"enabled explicitly": {tls: &rayv1.TLSOptions{Enabled: ptr.To(true)}, on: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := builders.RayCluster("demo", "team-a").Obj()
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.TLSOptions = tc.tls
			// A user's value is replaced by raygate's.
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_USE_TLS", Value: "0"}}
			head := HeadPod(rc, "h", Settings{})
			worker := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
			for _, pc := range []struct {
				pod    *corev1.Pod
				secret string
				procs  []*corev1.Container
			}{
				{head, "ray-head-secret-demo", []*corev1.Container{&head.Spec.Containers[0], container(head.Spec.Containers, AutoscalerContainer)}},
				{worker, "ray-worker-secret-demo", []*corev1.Container{&worker.Spec.Containers[0], container(worker.Spec.InitContainers, WaitGCSInitContainer)}},
			} {
				vol := volume(pc.pod, TLSVolumeName)
				wait := container(pc.pod.Spec.InitContainers, WaitTLSInitContainer)
				if !tc.on {
					if vol != nil || wait != nil {
						t.Errorf("%s: TLS off but the pod has the TLS volume or init container", pc.pod.GenerateName)
					}
					for _, c := range pc.procs {
						// Only the user's own RAY_USE_TLS=0 of the worker template may remain.
						if e := tlsVars(c.Env); len(e) > 1 || (len(e) == 1 && e[0].Value != "0") {
							t.Errorf("%s: TLS off but TLS variables %v", c.Name, e)
						}
					}
					continue
				}
				if vol == nil || vol.Secret == nil || vol.Secret.SecretName != pc.secret {
					t.Errorf("%s: volume %+v, want Secret %s", pc.pod.GenerateName, vol, pc.secret)
				}
				if pc.pod.Spec.InitContainers[0].Name != WaitTLSInitContainer {
					t.Errorf("%s: the first init container is %s, want %s", pc.pod.GenerateName, pc.pod.Spec.InitContainers[0].Name, WaitTLSInitContainer)
				}
				if wait.Env[0].Name != "POD_IP" || wait.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" ||
					!strings.Contains(wait.Args[0], `grep -qw "IP Address:$POD_IP"`) || wait.Image != pc.pod.Spec.Containers[0].Image {
					t.Errorf("%s: wait container %+v", pc.pod.GenerateName, wait)
				}
				for _, c := range append(pc.procs, wait) {
					if !hasMount(c, TLSVolumeName, "/etc/ray/tls") {
						t.Errorf("%s: no read-only mount of %s at /etc/ray/tls: %v", c.Name, TLSVolumeName, c.VolumeMounts)
					}
				}
				for _, c := range pc.procs {
					if diff := cmp.Diff(wantEnv, tlsVars(c.Env)); diff != "" {
						t.Errorf("%s (-want +got):\n%s", c.Name, diff)
					}
				}
			}
		})
	}
}

func TestHeadDNSNames(t *testing.T) {
	rc := builders.RayCluster("demo", "team-a").Obj()
	want := []string{"localhost", "demo-head-svc", "demo-head-svc.team-a", "demo-head-svc.team-a.svc", "demo-head-svc.team-a.svc.cluster.local"}
	if diff := cmp.Diff(want, HeadDNSNames(rc, "")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	rc.Spec.HeadGroupSpec.HeadService = &corev1.Service{}
	rc.Spec.HeadGroupSpec.HeadService.Name = "gcs"
	if got := HeadDNSNames(rc, "")[4]; got != "gcs.team-a.svc.cluster.local" {
		t.Errorf("with a head Service name override: %s", got)
	}
}

func volume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

func hasMount(c *corev1.Container, name, path string) bool {
	if c == nil {
		return false
	}
	for _, m := range c.VolumeMounts {
		if m.Name == name && m.MountPath == path && m.ReadOnly {
			return true
		}
	}
	return false
}

func tlsVars(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if strings.HasPrefix(e.Name, "RAY_USE_TLS") || strings.HasPrefix(e.Name, "RAY_TLS_") {
			out = append(out, e)
		}
	}
	return out
}
