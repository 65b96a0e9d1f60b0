package expectations

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func pod(name string, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if terminating {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		p.Finalizers = []string{"test/keep"} // the fake client refuses a deletionTimestamp without finalizers
	}
	return p
}

func TestIsSatisfied(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	cases := []struct {
		name   string
		cache  []client.Object
		action Action
		age    time.Duration
		want   bool
	}{
		{name: "create not yet in cache", action: Create, want: false},
		{name: "create visible in cache", cache: []client.Object{pod("p", false)}, action: Create, want: true},
		{name: "delete still in cache", cache: []client.Object{pod("p", false)}, action: Delete, want: false},
		{name: "delete shows terminating", cache: []client.Object{pod("p", true)}, action: Delete, want: true},
		{name: "delete gone from cache", action: Delete, want: true},
		{name: "create never seen but expired", action: Create, age: 3 * time.Minute, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			s := NewWithClock(DefaultTimeout, func() time.Time { return now })
			s.Expect("ns", "c", "g", "p", tc.action)
			now = now.Add(tc.age)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.cache...).Build()
			got, err := s.IsSatisfied(context.Background(), c, "ns", "c", "g")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("IsSatisfied = %v, want %v", got, tc.want)
			}
			wantPending := 1
			if tc.want {
				wantPending = 0
			}
			if n := s.Pending("ns", "c", "g"); n != wantPending {
				t.Errorf("pending = %d, want %d (satisfied expectations are dropped)", n, wantPending)
			}
		})
	}
}

func TestGroupsAndClustersAreIndependent(t *testing.T) {
	s := New(DefaultTimeout)
	c := fake.NewClientBuilder().Build()
	ctx := context.Background()
	s.Expect("ns", "c", "a", "p1", Create)
	if ok, _ := s.IsSatisfied(ctx, c, "ns", "c", "b"); !ok {
		t.Error("group b has no expectations and must be satisfied")
	}
	if ok, _ := s.IsSatisfied(ctx, c, "ns", "other", "a"); !ok {
		t.Error("another cluster's group a must be satisfied")
	}
	if ok, _ := s.IsClusterSatisfied(ctx, c, "ns", "c"); ok {
		t.Error("the cluster has an unsatisfied group")
	}
	s.Forget("ns", "c")
	if ok, _ := s.IsClusterSatisfied(ctx, c, "ns", "c"); !ok {
		t.Error("Forget must drop the cluster's expectations")
	}
}
