package raycluster

import (
	"testing"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
)

func TestTokenAuthRefused(t *testing.T) {
	cases := map[string]struct {
		auth    *rayv1.AuthOptions
		enabled bool
		refused bool
	}{
		"no auth, option off":        {},
		"mode disabled, option off":  {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}},
		"mode token, option on":      {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, enabled: true},
		"mode token, option off":     {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, refused: true},
		"a named Secret, option off": {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("team")}, refused: true},
		"a named Secret, option on":  {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("team")}, enabled: true},
		// No Secret is read in the delegated mode, so the option does not matter.
		"Kubernetes-delegated, option off": {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &rayv1.RayClusterSpec{AuthOptions: tc.auth}
			got := tokenAuthRefused(spec, tc.enabled)
			if !tc.refused {
				if len(got) != 0 {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			want := "spec.authOptions.mode: Forbidden: " + validation.TokenAuthenticationOffMessage
			if len(got) != 1 || got[0].Error() != want {
				t.Fatalf("got %v, want %q", got, want)
			}
		})
	}
}
