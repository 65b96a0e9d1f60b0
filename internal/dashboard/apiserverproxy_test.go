package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// The API server's pods/proxy refuses pods whose IP is not a global unicast address, and
// Endpoints may not hold loopback addresses, so a real API server cannot proxy to the
// loopback listeners tests may use: these tests stand in for the API server with a local
// server that checks what the operator sends it.

var proxyHead = Head{Cluster: types.NamespacedName{Namespace: "team-a", Name: "demo"}, PodName: "demo-head-x7k2p", Port: 8265, ServePort: 8000}

// fakeAPIServer records the requests it gets and answers with handle.
type fakeAPIServer struct {
	*httptest.Server
	hits atomic.Int32
}

func newFakeAPIServer(t *testing.T, handle http.HandlerFunc) *fakeAPIServer {
	f := &fakeAPIServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		handle(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func proxyFor(t *testing.T, host string) (*APIServerProxy, *http.Client) {
	t.Helper()
	p, c, err := NewAPIServerProxy(&rest.Config{Host: host, BearerToken: "operator-sa-token"})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func TestAPIServerProxyURLs(t *testing.T) {
	p, _ := proxyFor(t, "https://10.0.0.1:6443")
	ctx := context.Background()
	if got, _ := p.DashboardURL(ctx, proxyHead); got != "https://10.0.0.1:6443/api/v1/namespaces/team-a/pods/demo-head-x7k2p:8265/proxy" {
		t.Errorf("dashboard URL %s", got)
	}
	if got, _ := ProxyURL(ctx, p, proxyHead); got != "https://10.0.0.1:6443/api/v1/namespaces/team-a/pods/demo-head-x7k2p:8000/proxy" {
		t.Errorf("Serve proxy URL %s", got)
	}
	// A path prefix of the API server's address (a proxy in front of it) is kept.
	p, _ = proxyFor(t, "https://rancher.example.com/k8s/clusters/c-1")
	if got, _ := p.DashboardURL(ctx, proxyHead); got != "https://rancher.example.com/k8s/clusters/c-1/api/v1/namespaces/team-a/pods/demo-head-x7k2p:8265/proxy" {
		t.Errorf("dashboard URL behind a prefix %s", got)
	}
	for _, h := range []Head{{Cluster: proxyHead.Cluster, Port: 8265}, {Cluster: proxyHead.Cluster, PodName: "p", Port: 0}, {Cluster: proxyHead.Cluster, PodName: "p", Port: 70000}} {
		if got, err := p.DashboardURL(ctx, h); err == nil {
			t.Errorf("%+v: %s, want an error", h, got)
		}
	}
}

// Through the API server, the operator's credentials authenticate it there and the Ray
// token travels in X-Ray-Authorization; the answer is read as from a pod.
func TestAPIServerProxyRequest(t *testing.T) {
	api := newFakeAPIServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer operator-sa-token":
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case r.Header.Get("X-Ray-Authorization") != "Bearer ray-token":
			http.Error(w, "no Ray token", http.StatusForbidden)
		case r.URL.Path == "/api/v1/namespaces/team-a/pods/demo-head-x7k2p:8265/proxy/api/serve/applications/" && r.URL.RawQuery == "api_type=declarative":
			_, _ = w.Write([]byte(`{"applications":{"fruit":{"name":"fruit","status":"RUNNING"}}}`))
		case r.URL.Path == "/api/v1/namespaces/team-a/pods/demo-head-x7k2p:8000/proxy/-/healthz":
			_, _ = w.Write([]byte("success"))
		default:
			http.Error(w, "unexpected "+r.URL.String(), http.StatusNotFound)
		}
	})
	p, client := proxyFor(t, api.URL)
	ctx := context.Background()
	base, _ := p.DashboardURL(ctx, proxyHead)
	d, err := (&HTTPClient{BaseURL: base, HTTP: client, Token: "ray-token"}).GetServeDetails(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Applications["fruit"].Status != "RUNNING" {
		t.Errorf("answer %+v", d)
	}
	serve, _ := p.ProxyURL(ctx, proxyHead)
	if err := (&HTTPClient{BaseURL: serve, HTTP: client, Token: "ray-token"}).CheckProxyHealth(ctx); err != nil {
		t.Errorf("Serve proxy health: %v", err)
	}
}

// The same untrusted-answer rules as on the direct path: no redirect followed, a capped
// answer, a timeout; the API server's refusals (no RBAC on pods/proxy) are errors.
func TestAPIServerProxyUntrustedAnswers(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	api := newFakeAPIServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "redirect"):
			http.Redirect(w, r, other.URL+"/api/serve/applications/", http.StatusFound)
		case strings.Contains(r.URL.Path, "huge"):
			_, _ = w.Write([]byte(`{"applications":{"a":{"message":"` + strings.Repeat("x", MaxResponseBytes) + `"}}}`))
		case strings.Contains(r.URL.Path, "slow"):
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case strings.Contains(r.URL.Path, "forbidden"):
			http.Error(w, `pods "x" is forbidden: User "system:serviceaccount:raygate-system:raygate" cannot get resource "pods/proxy"`, http.StatusForbidden)
		}
	})
	p, client := proxyFor(t, api.URL)
	ctx := context.Background()
	for _, tc := range []struct {
		pod, want string
		status    int
	}{
		{pod: "redirect", status: http.StatusFound},
		{pod: "huge", want: "1048576 bytes raygate reads"},
		{pod: "slow", want: "context deadline exceeded"},
		{pod: "forbidden", status: http.StatusForbidden, want: `cannot get resource "pods/proxy"`},
	} {
		h := proxyHead
		h.PodName = tc.pod
		base, _ := p.DashboardURL(ctx, h)
		start := time.Now()
		_, err := (&HTTPClient{BaseURL: base, HTTP: client, Timeout: 300 * time.Millisecond}).GetServeDetails(ctx)
		var de *Error
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.pod)
		case tc.status != 0 && (!errors.As(err, &de) || de.StatusCode != tc.status):
			t.Errorf("%s: %v, want HTTP %d", tc.pod, err, tc.status)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want %q", tc.pod, err, tc.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %s", tc.pod, d)
		}
	}
	if elsewhere.Load() != 0 {
		t.Error("a redirect was followed")
	}
}

// The client carrying the operator's credentials talks to its API server only.
func TestAPIServerProxyClientSendsCredentialsNowhereElse(t *testing.T) {
	var sawToken atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		sawToken.Store(r.Header.Get("Authorization") != "")
	}))
	t.Cleanup(other.Close)
	api := newFakeAPIServer(t, func(http.ResponseWriter, *http.Request) {})
	_, client := proxyFor(t, api.URL)
	_, err := (&HTTPClient{BaseURL: other.URL, HTTP: client}).GetServeDetails(context.Background())
	if err == nil || !strings.Contains(err.Error(), "raygate sends its API server credentials only to "+api.URL) {
		t.Errorf("error %v", err)
	}
	if sawToken.Load() || api.hits.Load() != 0 {
		t.Error("a request left with the operator's credentials")
	}
}
