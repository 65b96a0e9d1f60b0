package framework

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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
		{At: at.Add(time.Second), Verb: "delete", Group: "gateway.networking.k8s.io", Resource: "gateways", Namespace: "rs-2", Name: "svc", Message: "forbidden"},
		{At: at, Verb: "create", Resource: "pods", Namespace: "rc-1", Message: "forbidden"},
		{At: at, Verb: "get", Path: "/metrics", Message: "forbidden"},
	}
	got := RefusalReport("the manager (system:serviceaccount:raygate-system:raygate)", rs)
	for _, want := range []string{
		"the API server refused 5 request(s) of the manager (system:serviceaccount:raygate-system:raygate)",
		"03:04:05.000 delete gateway.networking.k8s.io/gateways svc in namespace rs-1: forbidden\n",
		"03:04:05.000 delete gateway.networking.k8s.io/gateways svc in namespace rs-2: forbidden (2 times)\n",
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

func TestStatusMessageReadsProtobuf(t *testing.T) {
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: `pods "p" is forbidden: User "system:serviceaccount:a:b" cannot create resource "pods" in API group "" in the namespace "n"`}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme).Encode(st, &buf); err != nil {
		t.Fatal(err)
	}
	if got := statusMessage(buf.Bytes()); got != st.Message {
		t.Errorf("statusMessage(protobuf) = %q, want %q", got, st.Message)
	}
}

func TestByAuthorizer(t *testing.T) {
	cases := map[string]bool{
		`pods "p" is forbidden: User "system:serviceaccount:a:b" cannot create resource "pods" in API group "" in the namespace "n"`: true,
		`forbidden: User "system:serviceaccount:a:b" cannot get path "/metrics"`:                                                     true,
		`pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged`:                                                  false,
		`pods "p" is forbidden: exceeded quota: two-pods, requested: pods=1, used: pods=2, limited: pods=2`:                          false,
		`admission webhook "deny.policy.example.com" denied the request: pods need a cost-center label`:                              false,
	}
	for msg, want := range cases {
		if got := byAuthorizer(msg); got != want {
			t.Errorf("byAuthorizer(%q) = %v, want %v", msg, got, want)
		}
	}
}
