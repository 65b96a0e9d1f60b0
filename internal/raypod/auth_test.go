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
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := builders.RayCluster("demo", "team-a").Obj()
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.AuthOptions = tc.auth
			// A user's inline value never survives: raygate's replaces it.
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = append(rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env,
				corev1.EnvVar{Name: "RAY_AUTH_TOKEN", Value: "inline"})
			head := HeadPod(rc, "h")
			worker := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil)
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
		if e.Name == "RAY_AUTH_MODE" || e.Name == "RAY_AUTH_TOKEN" {
			out = append(out, e)
		}
	}
	return out
}
