package webhooks

import "testing"

func TestRawHas(t *testing.T) {
	raw := []byte(`{"metadata": {"name":"a", "labels":{"ray.io/x":"1","q\"k":"2"}},
	  "spec": {"groups": [ {"name":"w","n":[1,{"x":"}]"}]}, {"name":"v"} ], "s":"a,b}", "z": null}}`)
	for _, tt := range []struct {
		pointer          string
		exists, parentOK bool
	}{
		{"/metadata/name", true, true},
		{"/metadata/namespace", false, true},
		{"/metadata/labels/ray.io~1x", true, true},
		{`/metadata/labels/q"k`, true, true},
		{"/spec/groups/1/name", true, true},
		{"/spec/groups/1/replicas", false, true},
		{"/spec/groups/0/n/1/x", true, true},
		{"/spec/groups/2/name", false, false},
		{"/spec/z", true, true},
		{"/spec/z/a", false, false},
		{"/spec/missing/a", false, false},
		{"/spec/s/a", false, false},
		{"/spec/groups/x/name", false, false},
	} {
		exists, parentOK := rawHas(raw, tt.pointer)
		if exists != tt.exists || parentOK != tt.parentOK {
			t.Errorf("rawHas(%s) = %v, %v; want %v, %v", tt.pointer, exists, parentOK, tt.exists, tt.parentOK)
		}
	}
}
