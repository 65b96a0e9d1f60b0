package raycluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// A stored cluster with authOptions.mode token on a raygate without --token-authentication
// (which holds no rights on Secrets) is reported through the validation-failed path: no
// Secret is read or created, no pod or Service either. With the option the Secret is made.
func TestTokenClusterWithoutTokenAuthentication(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		ctx := context.Background()
		rc := builders.RayCluster("tok", "ns").Obj()
		rc.Spec.RayVersion = "2.52.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		secretReads := 0
		counted := interceptor.NewClient(newStore(rc).(client.WithWatch), interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					secretReads++
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		store := framework.NewCountingClient(counted)
		req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "tok"}}
		rec := &statusAtEvent{store: store, key: req.NamespacedName}
		r := &raycluster.Reconciler{Client: store,
			Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
			Config: raycluster.Config{Recorder: rec, Gates: features.Static{}, Now: time.Now, TokenAuthentication: enabled},
		}
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		w := store.Writes.Snapshot()
		got := &rayv1.RayCluster{}
		if err := store.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		if enabled {
			if w["create Secret"] != 1 || w["create Pod"] == 0 {
				t.Errorf("on: writes = %v; want the token Secret and the pods", w)
			}
			continue
		}
		want := rayv1.ValidationFailed + ": spec.authOptions.mode: Forbidden: " + validation.TokenAuthenticationOffMessage
		if got.Status.Reason != want {
			t.Errorf("off: status.reason = %q, want %q", got.Status.Reason, want)
		}
		if secretReads != 0 || w["patch RayCluster/status"] != 1 || len(w) != 1 {
			t.Errorf("off: %d Secret reads, writes = %v; want no Secret touched and only the status written", secretReads, w)
		}
		if len(rec.events) != 1 || !strings.HasPrefix(rec.events[0], "Warning ValidationFailed") {
			t.Errorf("off: events = %q; want one ValidationFailed warning", rec.events)
		}
	}
}
