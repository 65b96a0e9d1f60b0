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

func TestFirstIP(t *testing.T) {
	pool := SimulatedPodIPs
	starts := map[uint32]bool{}
	for range 200 {
		n := firstIP(netip.Prefix{})
		if n%254 != 0 {
			t.Fatalf("firstIP = %d: not the start of a /24 block", n)
		}
		// The first half of the pool: half of it is left for the kubelet's pods.
		if last := netip.MustParseAddr(podIPIn(pool, n)); !pool.Contains(last) || n >= 254*(1<<(24-pool.Bits()))/2 {
			t.Fatalf("firstIP = %d (%s) is past the first half of %s", n, last, pool)
		}
		starts[n] = true
	}
	if len(starts) < 150 {
		t.Errorf("200 kubelets started at only %d different blocks: processes would share pod IPs", len(starts))
	}
	if got := firstIP(netip.MustParsePrefix("10.0.0.0/24")); got != 0 {
		t.Errorf("a /24 pool starts at %d, want 0", got)
	}
}
