package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// proxyServer is a head whose dashboard answers and whose Serve proxy is healthy while
// healthy is true; hang makes the proxy never answer.
func proxyServer(t *testing.T, healthy, hang *atomic.Bool) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ProxyHealthPath {
			_, _ = w.Write([]byte(`{"applications":{}}`))
			return
		}
		switch {
		case hang.Load():
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case healthy.Load():
			_, _ = w.Write([]byte("success"))
		default:
			http.Error(w, "This node is being drained.\x1b[31m", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

func TestPoolChecksTheServeProxyWithEveryRead(t *testing.T) {
	var healthy, hang atomic.Bool
	healthy.Store(true)
	srv := proxyServer(t, &healthy, &hang)
	p, done := startPool(t, PoolOptions{Timeout: 300 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	tg := target("ns", "c", srv.URL)
	if p.Snapshot(tg).Proxy != nil {
		t.Fatal("a proxy never checked has a health")
	}
	read := func() Snapshot {
		p.Refresh(tg)
		waitFor(t, done, "c", 5*time.Second)
		return p.Snapshot(tg)
	}

	// Without a ProxyURL the proxy is not checked.
	if s := read(); s.Proxy != nil || s.Details == nil {
		t.Fatalf("read without ProxyURL: proxy %+v, details %v", s.Proxy, s.Details)
	}

	tg.ProxyURL = srv.URL
	if s := read(); s.Proxy == nil || !s.Proxy.Healthy || s.Proxy.Err != "" || s.Proxy.At.IsZero() {
		t.Fatalf("healthy proxy: %+v", s.Proxy)
	}
	healthy.Store(false)
	s := read()
	if s.Proxy == nil || s.Proxy.Healthy || !strings.Contains(s.Proxy.Err, "HTTP 503: This node is being drained.") || strings.ContainsRune(s.Proxy.Err, '\x1b') {
		t.Fatalf("unhealthy proxy: %+v", s.Proxy)
	}
	if s.Err != "" || s.Details == nil {
		t.Errorf("an unhealthy proxy is not a failed dashboard read: %q", s.Err)
	}

	// A proxy that never answers holds the read for at most the timeout.
	hang.Store(true)
	p.Refresh(tg)
	if _, took := waitFor(t, done, "c", 5*time.Second); took > time.Second {
		t.Errorf("a read with a hung proxy took %v, want about the 300ms timeout", took)
	}
	if s := p.Snapshot(tg); s.Proxy == nil || s.Proxy.Healthy || !strings.Contains(s.Proxy.Err, ProxyHealthPath+": no answer within 300ms") {
		t.Fatalf("hung proxy: %+v", s.Proxy)
	}

	hang.Store(false)
	healthy.Store(true)
	if s := read(); s.Proxy == nil || !s.Proxy.Healthy {
		t.Fatalf("recovered proxy: %+v", s.Proxy)
	}

	// Another address is another proxy: what the old one said does not carry over.
	tg.ProxyURL = srv.URL + "/elsewhere"
	if s := p.Snapshot(tg); s.Proxy != nil || s.Details == nil {
		t.Errorf("after the proxy address changed: proxy %+v, details kept %v", s.Proxy, s.Details != nil)
	}
}

func TestPodResolverProxyURL(t *testing.T) {
	c := types.NamespacedName{Namespace: "ns", Name: "c"}
	for _, tc := range []struct {
		ip   string
		port int32
		want string
	}{
		{"10.1.2.3", 8000, "http://10.1.2.3:8000"},
		{"fd00::1", 9000, "http://[fd00::1]:9000"},
		{"10.1.2.3", 0, ""},
		{"127.0.0.1", 8000, ""},
		{"169.254.169.254", 80, ""},
		{"", 8000, ""},
	} {
		got, err := PodResolver{}.ProxyURL(context.Background(), Head{Cluster: c, PodIP: tc.ip, Port: 8265, ServePort: tc.port})
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("%s:%d: got %q, %v; want %q", tc.ip, tc.port, got, err, tc.want)
		}
	}
	// Resolvers that do not know the proxy's address send it where the dashboard is.
	got, err := ProxyURL(context.Background(), TemplateResolver("http://127.0.0.1:9/{namespace}/{name}"), Head{Cluster: c})
	if err != nil || got != "http://127.0.0.1:9/ns/c" {
		t.Errorf("template: %q, %v", got, err)
	}
}
