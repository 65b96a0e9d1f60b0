package raysim

import (
	"net/http"
	"testing"

	"k8s.io/utils/ptr"
)

func TestRouteRequest(t *testing.T) {
	running, deploying := "RUNNING", "DEPLOYING"
	apps := []proxyApp{{"root", "/", running}, {"fruit", "/fruit", running}, {"calc", "/calc/", deploying}}
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
