package traefik

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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

func TestMetricsArgs(t *testing.T) {
	for _, a := range Args("127.200.1.2", 80, 41234) {
		if strings.HasPrefix(a, "--metrics.") || strings.HasPrefix(a, "--entryPoints.metrics.") {
			t.Errorf("Args enables metrics by default: %q", a)
		}
	}
	args := MetricsArgs(41235)
	for _, want := range []string{
		"--entryPoints.metrics.address=127.0.0.1:41235",
		"--metrics.prometheus=true",
		"--metrics.prometheus.entryPoint=metrics",
		"--metrics.prometheus.addServicesLabels=true",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("MetricsArgs lacks %q: %v", want, args)
		}
	}
	for _, a := range args {
		if strings.HasSuffix(a, "address=") || (strings.Contains(a, "address=") && !strings.Contains(a, "=127.0.0.1:")) {
			t.Errorf("metrics entry point not on 127.0.0.1: %q", a)
		}
	}
	if got := (&Traefik{}).MetricsURL(); got != "" {
		t.Errorf("MetricsURL without metrics = %q, want empty", got)
	}
	if got, want := (&Traefik{MetricsPort: 41235}).MetricsURL(), "http://127.0.0.1:41235/metrics"; got != want {
		t.Errorf("MetricsURL = %q, want %q", got, want)
	}
}

func TestWithoutInCluster(t *testing.T) {
	got := withoutInCluster([]string{"PATH=/bin", "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBECONFIG=/x", "HOME=/root"})
	if want := []string{"PATH=/bin", "HOME=/root"}; !slices.Equal(got, want) {
		t.Errorf("withoutInCluster = %v, want %v", got, want)
	}
}

func TestLoopbackSlice(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "serve", Port: 8000, TargetPort: intstr.FromString("serve")},
			{Name: "metrics", Port: 9000, TargetPort: intstr.FromInt32(9001)},
			{Name: "plain", Port: 7000},
		}},
	}
	pod := func(name, ip string, ready bool, deleting bool) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "serve", ContainerPort: 8123}}}}},
			Status:     corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
		}
		if ready {
			p.Status.Conditions[0].Status = corev1.ConditionTrue
		}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	s := LoopbackSlice(svc, []corev1.Pod{
		pod("a", "127.64.0.1", true, false),
		pod("b", "10.0.0.4", true, false), // not loopback: never published
		pod("c", "127.64.0.2", false, false),
		pod("d", "127.64.0.3", true, true),
		pod("e", "", true, false),
	})
	if s.Name != "s-loopback" || s.Labels[discoveryv1.LabelServiceName] != "s" || s.AddressType != discoveryv1.AddressTypeFQDN {
		t.Fatalf("slice %s labels %v type %s", s.Name, s.Labels, s.AddressType)
	}
	var got []string
	for _, e := range s.Endpoints {
		got = append(got, fmt.Sprintf("%s=%v", e.Addresses[0], *e.Conditions.Ready))
	}
	if want := []string{"127.64.0.1=true", "127.64.0.2=false", "127.64.0.3=false"}; !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
	var ports []string
	for _, p := range s.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
	}
	if want := []string{"serve:8123", "metrics:9001", "plain:7000"}; !slices.Equal(ports, want) {
		t.Errorf("ports %v, want %v", ports, want)
	}
}
