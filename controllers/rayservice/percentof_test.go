package rayservice

import (
	"testing"

	"k8s.io/utils/ptr"
)

// A head pod's reported target_capacity is untrusted: it is clamped to 0..100 and rounded.
func TestPercentOf(t *testing.T) {
	tests := []struct {
		in   *float64
		want *int32
	}{
		{nil, nil},
		{ptr.To(0.0), ptr.To[int32](0)},
		{ptr.To(49.6), ptr.To[int32](50)},
		{ptr.To(100.0), ptr.To[int32](100)},
		{ptr.To(-5.0), ptr.To[int32](0)},
		{ptr.To(1e300), ptr.To[int32](100)},
	}
	for _, tt := range tests {
		got := percentOf(tt.in)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("percentOf(%v) = %v, want %v", ptr.Deref(tt.in, -1), ptr.Deref(got, -1), ptr.Deref(tt.want, -1))
		}
	}
}
