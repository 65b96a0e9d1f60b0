package rayservice

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestServiceOfCluster(t *testing.T) {
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"a RayService's cluster", map[string]string{rayv1.OriginatedFromCRDLabelKey: "RayService", rayv1.OriginatedFromCRNameLabelKey: "llm"}, []string{"llm"}},
		{"a RayJob's cluster", map[string]string{rayv1.OriginatedFromCRDLabelKey: "RayJob", rayv1.OriginatedFromCRNameLabelKey: "llm"}, nil},
		{"no name", map[string]string{rayv1.OriginatedFromCRDLabelKey: "RayService"}, nil},
		{"no labels", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}}
			if got := serviceOfCluster(rc); !slices.Equal(got, tt.want) {
				t.Errorf("serviceOfCluster = %v, want %v", got, tt.want)
			}
		})
	}
}

// fieldIndexer answers IndexField with the error set for the kind.
type fieldIndexer struct {
	errs       map[string]error
	registered []string
}

func (f *fieldIndexer) IndexField(_ context.Context, obj client.Object, field string, _ client.IndexerFunc) error {
	kind := "RayCluster"
	if _, ok := obj.(*corev1.Pod); ok {
		kind = "Pod"
	}
	if err := f.errs[kind]; err != nil {
		return err
	}
	f.registered = append(f.registered, kind+" "+field)
	return nil
}

// The pod index is the RayCluster controller's: found registered, it is used as it is.
func TestAddIndexes(t *testing.T) {
	ix := &fieldIndexer{}
	if err := addIndexes(context.Background(), ix); err != nil || len(ix.registered) != 2 {
		t.Fatalf("alone: %v, registered %v", err, ix.registered)
	}
	conflict := &fieldIndexer{errs: map[string]error{"Pod": errors.New("indexer conflict: map[field:raygate.ray.io/cluster:{}]")}}
	if err := addIndexes(context.Background(), conflict); err != nil {
		t.Fatalf("after the RayCluster controller: %v", err)
	}
	for _, kind := range []string{"Pod", "RayCluster"} {
		failing := &fieldIndexer{errs: map[string]error{kind: errors.New("informer has already started")}}
		if err := addIndexes(context.Background(), failing); err == nil {
			t.Errorf("%s: an index that cannot be added is an error", kind)
		}
	}
}
