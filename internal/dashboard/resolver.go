package dashboard

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/rayspec"
)

// Resolver gives the base URL of a RayCluster's dashboard.
type Resolver interface {
	DashboardURL(ctx context.Context, cluster types.NamespacedName) (string, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, cluster types.NamespacedName) (string, error)

// DashboardURL implements Resolver.
func (f ResolverFunc) DashboardURL(ctx context.Context, cluster types.NamespacedName) (string, error) {
	return f(ctx, cluster)
}

// ServiceResolver is the production resolver: the cluster's head Service through cluster
// DNS, http://<cluster>-head-svc.<ns>.svc.<domain>:8265.
type ServiceResolver struct {
	// ClusterDomain is the cluster's DNS domain (empty: $CLUSTER_DOMAIN or cluster.local).
	ClusterDomain string
	// Port is the dashboard port (0: 8265).
	Port int
}

// DashboardURL implements Resolver.
func (r ServiceResolver) DashboardURL(_ context.Context, c types.NamespacedName) (string, error) {
	domain := r.ClusterDomain
	if domain == "" {
		domain = os.Getenv("CLUSTER_DOMAIN")
	}
	if domain == "" {
		domain = "cluster.local"
	}
	port := r.Port
	if port == 0 {
		port = rayspec.DefaultDashboardPort
	}
	return fmt.Sprintf("http://%s.%s.svc.%s:%d", rayspec.HeadServiceName(c.Name), c.Namespace, domain, port), nil
}

// TemplateResolver fills {namespace} and {name} in a URL template, e.g.
// "http://127.0.0.1:9000/{namespace}/{name}" for an operator running outside the cluster
// (port-forwarding proxy, or the simulator registry's front server in benchmarks).
type TemplateResolver string

// DashboardURL implements Resolver.
func (t TemplateResolver) DashboardURL(_ context.Context, c types.NamespacedName) (string, error) {
	s := strings.NewReplacer("{namespace}", url.PathEscape(c.Namespace), "{name}", url.PathEscape(c.Name)).Replace(string(t))
	return s, nil
}

// ValidateTemplate checks a --dashboard-url-template value.
func ValidateTemplate(t string) error {
	if !strings.Contains(t, "{name}") {
		return fmt.Errorf("--dashboard-url-template must contain {name}, got %q", t)
	}
	u, err := url.Parse(strings.NewReplacer("{namespace}", "ns", "{name}", "c").Replace(t))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--dashboard-url-template must be an http(s) URL, got %q", t)
	}
	return nil
}
