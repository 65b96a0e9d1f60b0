package localmode

import (
	"slices"
	"testing"
)

func TestRoutePrefixes(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{name: "in order", config: "applications:\n- name: a\n  route_prefix: /summarize\n- name: b\n  route_prefix: /fruit\n", want: []string{"/summarize", "/fruit"}},
		{name: "missing means /", config: "applications:\n- name: a\n", want: []string{"/"}},
		{name: "no applications", config: "http_options: {}\n", want: []string{}},
		{name: "not YAML", config: "applications: [", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RoutePrefixes(tc.config); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("RoutePrefixes = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestAllLoopback(t *testing.T) {
	for _, tc := range []struct {
		addrs []string
		want  bool
	}{
		{addrs: []string{"127.64.0.3", "127.65.1.9"}, want: true},
		{addrs: nil, want: false},
		{addrs: []string{"127.64.0.3", "10.128.0.4"}, want: false},
		{addrs: []string{"192.168.1.2"}, want: false},
		{addrs: []string{"::1"}, want: false},
		{addrs: []string{"not-an-ip"}, want: false},
	} {
		if got := AllLoopback(tc.addrs); got != tc.want {
			t.Errorf("AllLoopback(%v) = %v, want %v", tc.addrs, got, tc.want)
		}
	}
}
