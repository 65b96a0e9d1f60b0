package traefik

import (
	"net/netip"
	"slices"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	inRange := netip.MustParsePrefix("127.200.0.0/16")
	podNet := netip.MustParsePrefix("127.64.0.0/10")
	for _, n := range []uint32{0, 1, 254, 255, 256, 65533, 65534, 65535, 1 << 31, ^uint32(0)} {
		h := loopbackHost(n)
		ip := netip.MustParseAddr(h)
		if !inRange.Contains(ip) || podNet.Contains(ip) {
			t.Errorf("loopbackHost(%d) = %s: want an address of %s outside %s", n, h, inRange, podNet)
		}
		if h == "127.200.0.0" || h == "127.200.255.255" {
			t.Errorf("loopbackHost(%d) = %s: network or broadcast address", n, h)
		}
	}
}

func TestArgs(t *testing.T) {
	args := Args("127.200.1.2", 80, 41234)
	for _, want := range []string{
		"--entryPoints.web.address=127.200.1.2:80",
		"--entryPoints.traefik.address=127.0.0.1:41234",
		"--ping.entryPoint=traefik",
		"--providers.kubernetesgateway=true",
		"--providers.kubernetesgateway.statusAddress.ip=127.200.1.2",
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("Args lacks %q: %v", want, args)
		}
	}
}

func TestWithoutInCluster(t *testing.T) {
	got := withoutInCluster([]string{"PATH=/bin", "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBECONFIG=/x", "HOME=/root"})
	if want := []string{"PATH=/bin", "HOME=/root"}; !slices.Equal(got, want) {
		t.Errorf("withoutInCluster = %v, want %v", got, want)
	}
}
