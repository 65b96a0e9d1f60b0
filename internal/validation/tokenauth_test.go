package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// TestTokenAuthenticationOff: without --token-authentication raygate holds no rights on
// Secrets, so admission refuses mode token, except an unchanged stored value.
func TestTokenAuthenticationOff(t *testing.T) {
	off := Validator{Gates: gateOff, Policy: Policy{TokenAuthenticationOff: true}}
	on := Validator{Gates: gateOff}
	token := func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.52.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	}
	tokenService := func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.RayVersion = "2.52.0"
		s.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	}
	const detail = "token authentication is off on this raygate; a cluster admin enables it with the Helm value " +
		"tokenAuthentication.enabled=true (the manager's --token-authentication), which lets raygate get and create Secrets"
	cases := map[string]struct {
		validate func() field.ErrorList
		want     field.ErrorList
	}{
		"off: a RayCluster with mode token is refused": {
			validate: func() field.ErrorList { errs, _ := off.RayCluster(cluster(token)); return errs },
			want:     field.ErrorList{field.Forbidden(p("spec.authOptions.mode"), detail)},
		},
		"off: with a named Secret too": {
			validate: func() field.ErrorList {
				errs, _ := off.RayCluster(cluster(func(rc *rayv1.RayCluster) { token(rc); rc.Spec.AuthOptions.SecretName = ptr.To("team") }))
				return errs
			},
			want: field.ErrorList{field.Forbidden(p("spec.authOptions.mode"), detail)},
		},
		"off: a RayService with mode token is refused": {
			validate: func() field.ErrorList { errs, _ := off.RayService(service(tokenService)); return errs },
			want:     field.ErrorList{field.Forbidden(p("spec.rayClusterConfig.authOptions.mode"), detail)},
		},
		"off: Kubernetes-delegated token auth needs no Secret, so it is admitted": {
			validate: func() field.ErrorList {
				errs, _ := off.RayCluster(cluster(func(rc *rayv1.RayCluster) {
					token(rc)
					rc.Spec.RayVersion = "2.55.0"
					rc.Spec.AuthOptions.EnableK8sTokenAuth = ptr.To(true)
				}))
				return errs
			},
		},
		"off: mode disabled is admitted": {
			validate: func() field.ErrorList {
				errs, _ := off.RayCluster(cluster(func(rc *rayv1.RayCluster) { rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled} }))
				return errs
			},
		},
		"off: turning mode token on is refused": {
			validate: func() field.ErrorList { errs, _ := off.RayClusterUpdate(cluster(nil), cluster(token)); return errs },
			want:     field.ErrorList{field.Forbidden(p("spec.authOptions.mode"), detail)},
		},
		"off: a stored cluster with mode token can still be changed elsewhere": {
			validate: func() field.ErrorList {
				errs, _ := off.RayClusterUpdate(cluster(token), cluster(func(rc *rayv1.RayCluster) {
					token(rc)
					rc.Labels = map[string]string{"team": "a"}
					rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
				}))
				return errs
			},
		},
		"off: a stored RayService with mode token can still be changed elsewhere": {
			validate: func() field.ErrorList {
				errs, _ := off.RayServiceUpdate(service(tokenService), service(func(s *rayv1.RayService) {
					tokenService(s)
					s.Labels = map[string]string{"team": "a"}
				}))
				return errs
			},
		},
		"off: the controllers' stored check does not apply the policy": {
			validate: func() field.ErrorList { return off.StoredRayCluster(cluster(token)) },
		},
		"on: a RayCluster with mode token is admitted": {
			validate: func() field.ErrorList { errs, _ := on.RayCluster(cluster(token)); return errs },
		},
		"on: a RayService with mode token is admitted": {
			validate: func() field.ErrorList { errs, _ := on.RayService(service(tokenService)); return errs },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.validate()
			diffErrors(t, tc.want, got)
			for i := range tc.want {
				if i < len(got) && got[i].Detail != tc.want[i].Detail {
					t.Errorf("detail %q, want %q", got[i].Detail, tc.want[i].Detail)
				}
			}
		})
	}
}
