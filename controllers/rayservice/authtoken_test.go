package rayservice

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/headaccess"
	"github.com/raygate/raygate/test/builders"
)

func TestDashboardToken(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rc := builders.RayCluster("svc-abcde", "ns").Obj()
	rc.UID = "rc-uid"
	secret := func(name, token string, owned bool) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string][]byte{"auth_token": []byte(token)}}
		if owned {
			s.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))}
		}
		if token == "" {
			s.Data = nil
		}
		return s
	}
	cases := map[string]struct {
		auth    *rayv1.AuthOptions
		objects []client.Object
		want    dashboard.BearerToken
		wantErr string
	}{
		"no auth":                      {},
		"mode disabled":                {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}, objects: []client.Object{secret("svc-abcde", "t", true)}},
		"the generated Secret":         {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, objects: []client.Object{secret("svc-abcde", "generated", true)}, want: "generated"},
		"a generated name not ours":    {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, objects: []client.Object{secret("svc-abcde", "foreign", false)}, wantErr: "not controlled by RayCluster svc-abcde"},
		"the named Secret":             {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("team")}, objects: []client.Object{secret("team", "named", false)}, want: "named"},
		"the named Secret is missing":  {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("team")}, wantErr: "reading the token Secret team"},
		"the Secret has no auth_token": {auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("team")}, objects: []client.Object{secret("team", "", false)}, wantErr: `has no "auth_token" key`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()
			r := &Reconciler{Config: Config{Now: time.Now, TokenAuthentication: true}, apiReader: c}
			cluster := rc.DeepCopy()
			cluster.Spec.AuthOptions = tc.auth
			got, err := r.dashboardToken(context.Background(), cluster)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "foreign") {
					t.Errorf("the error shows the token: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", string(got), err, string(tc.want))
			}
		})
	}
}

func TestDashboardTokenIsKeptBriefly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rc := builders.RayCluster("c", "ns").Obj()
	rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("team")}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "ns"}, Data: map[string][]byte{"auth_token": []byte("one")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s).Build()
	now := time.Unix(1000, 0)
	r := &Reconciler{Config: Config{Now: func() time.Time { return now }, TokenAuthentication: true}, apiReader: c}
	ctx := context.Background()
	token := func() string {
		t.Helper()
		got, err := r.dashboardToken(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	if got := token(); got != "one" {
		t.Fatalf("got %q", got)
	}
	s.Data["auth_token"] = []byte("two")
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	now = now.Add(headaccess.TokenTTL - time.Second)
	if got := token(); got != "one" {
		t.Errorf("within the TTL: got %q, want the kept token", got)
	}
	now = now.Add(2 * time.Second)
	if got := token(); got != "two" {
		t.Errorf("after the TTL: got %q, want the new token", got)
	}
}

// TestDashboardTokenWithoutTokenAuthentication: without --token-authentication raygate has
// no right to read Secrets, so it sends no token and does not try.
func TestDashboardTokenWithoutTokenAuthentication(t *testing.T) {
	rc := builders.RayCluster("c", "ns").Obj()
	rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("team")}
	reads := 0
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	r := &Reconciler{Config: Config{Now: time.Now}, apiReader: c}
	got, err := r.dashboardToken(context.Background(), rc)
	if err != nil || got != "" || reads != 0 {
		t.Fatalf("got %q, %v after %d reads; want no token, no error, no read", string(got), err, reads)
	}
}
