package framework

import "testing"

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
