package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestRunCountsStatusesAndClusters(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := n.Add(1)
		if i%5 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		cluster := "ns/a"
		if i%2 == 0 {
			cluster = "ns/b"
		}
		w.Header().Set(ClusterHeader, cluster)
	}))
	defer srv.Close()
	rep, err := Once(context.Background(), Options{Target: URL(srv.URL), Rate: 1000, MaxRequests: 40, MaxDuration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary()
	if s.Sent != 40 || s.Failed != 8 || s.ByStatus[503] != 8 || s.ByStatus[200] != 32 {
		t.Fatalf("summary %s, statuses %v", s, s.ByStatus)
	}
	if s.ByCluster["ns/a"]+s.ByCluster["ns/b"] != 32 || s.Share("ns/a")+s.Share("ns/b") != 1 {
		t.Errorf("split %v", s.ByCluster)
	}
	if s.P50 <= 0 || s.P99 < s.P50 || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "status 503") {
		t.Errorf("p50 %s p99 %s errors %v", s.P50, s.P99, s.Errors)
	}
}

func TestRunStopsAtMaxDuration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	t0 := time.Now()
	rep, err := Once(context.Background(), Options{Target: URL(srv.URL), Rate: 20, MaxDuration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("run took %s, bound was 300ms", d)
	}
	if s := rep.Summary(); s.Sent < 2 || s.Sent > 10 || s.Failed != 0 {
		t.Errorf("at 20/s for 300ms: %s", s)
	}
}

func TestStopReturnsWhatWasSent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	r, err := Start(context.Background(), Options{Target: URL(srv.URL), Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(r.Report().Results) < 5 && time.Now().Before(deadline) {
		<-time.After(10 * time.Millisecond)
	}
	rep := r.Stop()
	if s := rep.Summary(); s.Sent < 5 || s.Failed != 0 {
		t.Errorf("after stop: %s", s)
	}
}

func TestStopDoesNotFailATargetInProgress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	entered := make(chan struct{}, 1)
	// A target that reads the API (a Service's pods) takes a while and honours its context.
	slow := func(ctx context.Context) (string, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
			return srv.URL, nil
		}
	}
	r, err := Start(context.Background(), Options{Target: slow, Rate: 100, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if s := r.Stop().Summary(); s.Sent == 0 || s.Failed != 0 {
		t.Errorf("stopped while the target was read: %s %v", s, s.Errors)
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, u := range []string{"http://10.0.0.1:8000/", "http://192.168.1.1/", "http://[2001:db8::1]:80/"} {
		rep, err := Once(context.Background(), Options{Target: URL(u), MaxRequests: 1, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Summary()
		if s.Failed != 1 || !strings.Contains(s.Errors[0], "not a loopback address") {
			t.Errorf("%s: %s %v", u, s, s.Errors)
		}
	}
}

func TestTargetErrorIsAFailure(t *testing.T) {
	rep, err := Once(context.Background(), Options{Target: func(context.Context) (string, error) { return "", errNoEndpoint }, MaxRequests: 3, Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Summary(); s.Failed != 3 || s.ByStatus[0] != 3 {
		t.Errorf("%s", s)
	}
}

var errNoEndpoint = errors.New("no endpoint")

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tt := range []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0, time.Millisecond},
	} {
		if got := Percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %s, want %s", tt.in, tt.p, got, tt.want)
		}
	}
}

func TestIntervals(t *testing.T) {
	rep := &Report{Results: []Result{
		{At: 100 * time.Millisecond, Status: 200, Cluster: "a"},
		{At: 900 * time.Millisecond, Status: 200, Cluster: "b"},
		{At: 2500 * time.Millisecond, Status: 503, Failed: true, Err: "status 503"},
		{At: 2600 * time.Millisecond, Status: 200, Cluster: "b"},
	}}
	ivs := rep.Intervals(time.Second)
	if len(ivs) != 2 || ivs[0].From != 0 || ivs[1].From != 2*time.Second {
		t.Fatalf("intervals %+v", ivs)
	}
	if ivs[0].Sent != 2 || ivs[0].Share("a") != 0.5 || ivs[1].Failed != 1 || ivs[1].Share("b") != 1 {
		t.Errorf("intervals %+v", ivs)
	}
	if s := rep.Between(time.Second, 3*time.Second); s.Sent != 2 {
		t.Errorf("between: %s", s)
	}
	if tab := rep.Table(time.Second); !strings.Contains(tab, "total") || strings.Count(tab, "\n") != 3 {
		t.Errorf("table:\n%s", tab)
	}
}

func TestReadyAddresses(t *testing.T) {
	slice := func(port string, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: ptr.To(port), Port: ptr.To[int32](8000)}}, Endpoints: eps}
	}
	ep := func(ip string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	got := ReadyAddresses([]discoveryv1.EndpointSlice{
		slice("serve", ep("127.64.0.3", ptr.To(true)), ep("127.64.0.2", nil), ep("127.64.0.9", ptr.To(false))),
		slice("serve", ep("127.64.0.3", ptr.To(true))),
		slice("dashboard", ep("127.64.0.4", ptr.To(true))),
	}, "serve")
	want := []string{"127.64.0.2:8000", "127.64.0.3:8000"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ReadyAddresses = %v, want %v", got, want)
	}
}

func TestPodAddresses(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "serve", Port: 8000, TargetPort: intstr.FromString("serve")},
		{Name: "dashboard", Port: 8265, TargetPort: intstr.FromInt32(8265)},
	}}}
	pod := func(ip string, ready bool, phase corev1.PodPhase, port int32) corev1.Pod {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p := corev1.Pod{
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "ray"}}},
			Status: corev1.PodStatus{Phase: phase, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
		}
		if port != 0 {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "serve", ContainerPort: port}}
		}
		return p
	}
	pods := []corev1.Pod{
		pod("127.64.0.3", true, corev1.PodRunning, 9000),
		pod("127.64.0.2", true, corev1.PodRunning, 8000),
		pod("127.64.0.4", false, corev1.PodRunning, 8000),
		pod("", true, corev1.PodPending, 8000),
		pod("127.64.0.5", true, corev1.PodRunning, 0), // does not declare the named port
	}
	if got, want := PodAddresses(svc, pods, "serve"), []string{"127.64.0.2:8000", "127.64.0.3:9000"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("serve: %v, want %v", got, want)
	}
	if got := PodAddresses(svc, pods, "dashboard"); len(got) != 3 || got[0] != "127.64.0.2:8265" {
		t.Errorf("dashboard: %v", got)
	}
	if got := PodAddresses(svc, pods, "nope"); got != nil {
		t.Errorf("unknown port: %v", got)
	}
}
