package framework

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRefusalOf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	status := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"gateways.gateway.networking.k8s.io \"svc\" is forbidden: no","reason":"Forbidden","code":403}`
	cases := map[string]struct {
		method, url, body string
		want              Refusal
	}{
		"delete one": {
			method: http.MethodDelete, url: "/apis/gateway.networking.k8s.io/v1/namespaces/rs-1/gateways/svc", body: status,
			want: Refusal{Verb: "delete", Group: "gateway.networking.k8s.io", Resource: "gateways", Namespace: "rs-1", Name: "svc",
				Message: `gateways.gateway.networking.k8s.io "svc" is forbidden: no`},
		},
		"delete a collection": {
			method: http.MethodDelete, url: "/api/v1/namespaces/rc-1/pods?labelSelector=a%3Db",
			want: Refusal{Verb: "deletecollection", Resource: "pods", Namespace: "rc-1"},
		},
		"list across namespaces": {
			method: http.MethodGet, url: "/api/v1/secrets?limit=500",
			want: Refusal{Verb: "list", Resource: "secrets"},
		},
		"watch": {
			method: http.MethodGet, url: "/apis/ray.io/v1/namespaces/a/rayclusters?watch=true&resourceVersion=5",
			want: Refusal{Verb: "watch", Group: "ray.io", Resource: "rayclusters", Namespace: "a"},
		},
		"status subresource": {
			method: http.MethodPut, url: "/apis/ray.io/v1/namespaces/a/rayservices/s/status",
			want: Refusal{Verb: "update", Group: "ray.io", Resource: "rayservices/status", Namespace: "a", Name: "s"},
		},
		"a namespace": {
			method: http.MethodGet, url: "/api/v1/namespaces/team-a",
			want: Refusal{Verb: "get", Resource: "namespaces", Namespace: "team-a", Name: "team-a"},
		},
		"create cluster-scoped": {
			method: http.MethodPost, url: "/apis/authentication.k8s.io/v1/tokenreviews", body: "plain text",
			want: Refusal{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews", Message: "plain text"},
		},
		"non-resource URL": {
			method: http.MethodGet, url: "/metrics",
			want: Refusal{Verb: "get", Path: "/metrics"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "https://127.0.0.1:6443"+tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := refusalOf(req, []byte(tc.body), at)
			tc.want.At = at
			if tc.want.Path == "" {
				tc.want.Path = req.URL.Path
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("refusalOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestRefusalReport(t *testing.T) {
	if got := RefusalReport("the manager", nil); got != "" {
		t.Errorf("no refusals: got %q, want nothing", got)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rs := []Refusal{
		{At: at, Verb: "delete", Group: "gateway.networking.k8s.io", Resource: "gateways", Namespace: "rs-1", Name: "svc", Message: "forbidden"},
		{At: at, Verb: "delete", Group: "gateway.networking.k8s.io", Resource: "gateways", Namespace: "rs-2", Name: "svc", Message: "forbidden"},
		{At: at, Verb: "create", Resource: "pods", Namespace: "rc-1", Message: "forbidden"},
		{At: at, Verb: "get", Path: "/metrics", Message: "forbidden"},
	}
	got := RefusalReport("the manager (system:serviceaccount:raygate-system:raygate)", rs)
	for _, want := range []string{
		"the API server refused 4 request(s) of the manager (system:serviceaccount:raygate-system:raygate)",
		"03:04:05.000 delete gateway.networking.k8s.io/gateways svc in namespace rs-1: forbidden\n",
		"03:04:05.000 create pods in namespace rc-1: forbidden\n",
		"03:04:05.000 get /metrics: forbidden\n",
		"  missing: // +kubebuilder:rbac:groups=\"\",resources=pods,verbs=create\n" +
			"  missing: // +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=delete\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "missing:"); n != 2 {
		t.Errorf("report lists %d markers, want 2 (one per rule):\n%s", n, got)
	}
}
