package raysim

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

func TestRouteRequest(t *testing.T) {
	running, deploying := "RUNNING", "DEPLOYING"
	apps := []proxyApp{{name: "root", prefix: "/", status: running}, {name: "fruit", prefix: "/fruit", status: running}, {name: "calc", prefix: "/calc/", status: deploying}}
	for _, tt := range []struct {
		name     string
		apps     []proxyApp
		capacity *float64
		path     string
		status   int
		app      string
	}{
		{"longest prefix wins", apps, nil, "/fruit/mango", http.StatusOK, "fruit"},
		{"exact prefix", apps, nil, "/fruit", http.StatusOK, "fruit"},
		{"prefix is a path segment, not a string prefix", apps, nil, "/fruitcake", http.StatusOK, "root"},
		{"not RUNNING is 503", apps, nil, "/calc/add", http.StatusServiceUnavailable, "calc"},
		{"capacity 0 is 503", apps, ptr.To(0.0), "/fruit", http.StatusServiceUnavailable, "fruit"},
		{"capacity above 0 serves", apps, ptr.To(20.0), "/fruit", http.StatusOK, "fruit"},
		{"no route is 404", apps[1:], nil, "/other", http.StatusNotFound, ""},
		{"no applications is 404", nil, nil, "/", http.StatusNotFound, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := routeRequest(tt.apps, tt.capacity, tt.path)
			if got.status != tt.status || got.app != tt.app {
				t.Errorf("routeRequest(%s) = %d %q, want %d %q", tt.path, got.status, got.app, tt.status, tt.app)
			}
		})
	}
}

func TestProxyHandler(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s, c := start(t, Options{DeployDelay: time.Second, Now: clock.Now})
	proxy := newTestServer(t, &http.Server{Handler: s.ProxyHandler(), ReadHeaderTimeout: time.Second})
	get := func(path string) (int, string, string) {
		t.Helper()
		resp, err := http.Get(proxy + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(ClusterHeader), string(body)
	}
	if code, who, _ := get("/fruit"); code != http.StatusNotFound || who != cluster.String() {
		t.Errorf("before any config: %d from %q, want 404 from %s", code, who, cluster)
	}
	if err := c.DeployApplications(context.Background(), []byte(twoApps)); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get("/fruit/mango"); code != http.StatusServiceUnavailable || !strings.Contains(body, "DEPLOYING") {
		t.Errorf("while DEPLOYING: %d %q, want 503", code, body)
	}
	clock.Add(2 * time.Second)
	if code, who, body := get("/fruit/mango"); code != http.StatusOK || who != cluster.String() || body != cluster.String()+" fruit\n" {
		t.Errorf("RUNNING: %d from %q: %q", code, who, body)
	}
	if code, _, body := get("/calc"); code != http.StatusOK || !strings.Contains(body, "math") {
		t.Errorf("second application: %d %q", code, body)
	}
	if code, _, body := get("/-/healthz"); code != http.StatusOK || body != "success" {
		t.Errorf("health: %d %q", code, body)
	}
	zero := strings.Replace(twoApps, `{"applications"`, `{"target_capacity":0,"applications"`, 1)
	if err := c.DeployApplications(context.Background(), []byte(zero)); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get("/fruit"); code != http.StatusServiceUnavailable {
		t.Errorf("target_capacity 0: %d, want 503", code)
	}
}
