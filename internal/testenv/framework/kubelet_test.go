package framework

import (
	"net/netip"
	"testing"
)

func TestPodIP(t *testing.T) {
	for _, tt := range []struct {
		n    uint32
		want string
	}{
		{0, "127.64.0.1"},
		{253, "127.64.0.254"},
		{254, "127.64.1.1"},
		{254 * 256, "127.65.0.1"},
		{254*256*64 - 1, "127.127.255.254"},
	} {
		if got := PodIP(tt.n); got != tt.want {
			t.Errorf("PodIP(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
	seen := map[string]bool{}
	for n := range uint32(100_000) {
		ip := netip.MustParseAddr(PodIP(n))
		if !ip.IsLoopback() || seen[ip.String()] {
			t.Fatalf("PodIP(%d) = %s: not loopback or handed out twice", n, ip)
		}
		seen[ip.String()] = true
	}
	if got := podIPIn(netip.MustParsePrefix("10.244.0.0/16"), 300); got != "10.244.1.47" {
		t.Errorf("podIPIn(10.244.0.0/16, 300) = %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("PodIP past the pool must panic, not wrap onto a live pod's address")
		}
	}()
	PodIP(254 * 256 * 64)
}
