package framework

import (
	"net/http"
	"strings"
	"testing"
)

func TestResourceOf(t *testing.T) {
	cases := map[string]string{
		"/api/v1/namespaces/ns/pods":                                      "pods",
		"/api/v1/namespaces/ns/pods/p1":                                   "pods",
		"/api/v1/namespaces/ns/pods/p1/status":                            "pods/status",
		"/apis/ray.io/v1/namespaces/ns/rayclusters/c/status":              "rayclusters/status",
		"/apis/events.k8s.io/v1/namespaces/ns/events":                     "events",
		"/api/v1/namespaces/ns":                                           "namespaces",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings/x": "rolebindings",
		"/apis/ray.io/v1/rayclusters":                                     "rayclusters",
	}
	for path, want := range cases {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestNamespaceOfPath(t *testing.T) {
	cases := map[string]string{
		"/api/v1/namespaces/ns/pods":                         "ns",
		"/api/v1/namespaces/ns/pods/p1/status":               "ns",
		"/apis/events.k8s.io/v1/namespaces/team-a/events/e1": "team-a",
		"/api/v1/namespaces/ns":                              "",
		"/api/v1/namespaces":                                 "",
		"/apis/ray.io/v1/rayclusters":                        "",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/x":  "",
	}
	for path, want := range cases {
		if got := namespaceOfPath(path); got != want {
			t.Errorf("namespaceOfPath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestWritesSnapshotIn(t *testing.T) {
	var w Writes
	w.add("a", "create pods")
	w.add("a", "create pods")
	w.add("b", "patch events")
	w.add("", "update clusterroles")
	if got := w.SnapshotIn("a"); len(got) != 1 || got["create pods"] != 2 {
		t.Errorf(`SnapshotIn("a") = %v`, got)
	}
	if got := w.SnapshotIn("a", "b"); len(got) != 2 || got["patch events"] != 1 {
		t.Errorf(`SnapshotIn("a", "b") = %v`, got)
	}
	if got := w.SnapshotIn("c"); len(got) != 0 {
		t.Errorf(`SnapshotIn("c") = %v`, got)
	}
	if w.Total() != 4 {
		t.Errorf("Total() = %d, want 4", w.Total())
	}
	w.Reset()
	if got := w.SnapshotIn("a"); len(got) != 0 {
		t.Errorf("after Reset, SnapshotIn = %v", got)
	}
}

func TestDryRunsAreNotWrites(t *testing.T) {
	w := &Writes{}
	tr := &countingTransport{next: roundTripperFunc(func(*http.Request) (*http.Response, error) { return &http.Response{}, nil }), writes: w}
	for _, url := range []string{"https://api/api/v1/namespaces/ns/pods?dryRun=All", "https://api/api/v1/namespaces/ns/pods"} {
		req, err := http.NewRequest(http.MethodPost, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.SnapshotIn("ns"); got["create pods"] != 1 || len(got) != 1 {
		t.Errorf("writes %v; want the one create that is not a dry run", got)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTraceKeepsWritesInOrderWithTheirBodies(t *testing.T) {
	w := &Writes{}
	tr := &countingTransport{next: roundTripperFunc(func(*http.Request) (*http.Response, error) { return &http.Response{}, nil }), writes: w}
	send := func(method, url, body string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	send(http.MethodPost, "https://api/api/v1/namespaces/ns/pods", "{}")
	w.Trace(true)
	send(http.MethodPatch, "https://api/apis/ray.io/v1/namespaces/ns/rayclusters/c", `{"metadata":{}}`)
	send(http.MethodGet, "https://api/api/v1/namespaces/ns/pods", "")
	send(http.MethodPost, "https://api/apis/events.k8s.io/v1/namespaces/other/events", strings.Repeat("x", 2*traceBodyLimit))
	got := w.Traced()
	if len(got) != 2 || got[0].Key != "patch rayclusters" || got[0].Path != "/apis/ray.io/v1/namespaces/ns/rayclusters/c" || got[0].Body != `{"metadata":{}}` {
		t.Fatalf("trace %+v; want the patch, then the event", got)
	}
	if len(got[1].Body) != traceBodyLimit {
		t.Errorf("body kept %d bytes, want %d", len(got[1].Body), traceBodyLimit)
	}
	if in := w.Traced("ns"); len(in) != 1 || in[0].Key != "patch rayclusters" {
		t.Errorf(`Traced("ns") = %+v`, in)
	}
	w.Trace(false)
	if len(w.Traced()) != 0 {
		t.Error("the trace is not emptied when turned off")
	}
}
