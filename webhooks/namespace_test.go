package webhooks

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestNamespaceFacts(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "team-a"}}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns, quota).Build()
	empty := fake.NewClientBuilder().WithScheme(scheme).Build()
	failing := interceptor.NewClient(empty, interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("forbidden")
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("forbidden")
		},
	})
	ctx := context.Background()

	got := namespaceLookup{reader: cached, timeout: time.Second}.facts(ctx, "team-a")
	if !got.LabelsKnown || got.Labels["pod-security.kubernetes.io/enforce"] != "restricted" || len(got.Quotas) != 1 {
		t.Errorf("from the cache: %+v", got)
	}
	// A namespace created a moment ago, not in the cache yet: read live.
	got = namespaceLookup{reader: empty, live: cached, timeout: time.Second}.facts(ctx, "team-a")
	if !got.LabelsKnown || got.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("read live: %+v", got)
	}
	// A failed read skips the checks instead of failing admission.
	got = namespaceLookup{reader: failing, timeout: time.Second}.facts(ctx, "team-a")
	if got.LabelsKnown || got.Quotas != nil {
		t.Errorf("failed reads: %+v", got)
	}
	if got := (namespaceLookup{}).facts(ctx, "team-a"); got != nil {
		t.Errorf("no reader: %+v", got)
	}
}
