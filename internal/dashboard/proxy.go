package dashboard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// ProxyHealthPath is the Serve proxy's health endpoint on the serve port: HTTP 200 while
// the head's proxy actor takes traffic, an error (or no answer) otherwise.
const ProxyHealthPath = "/-/healthz"

// ProxyHealth is what the last check of a head's Serve proxy found.
type ProxyHealth struct {
	// Healthy: the proxy answered HTTP 2xx.
	Healthy bool
	// Err is why it is not healthy, sanitized ("" when healthy).
	Err string
	// At is when the check ended.
	At time.Time
}

// ProxyResolver is a Resolver that knows where a head's Serve proxy listens when that is
// not the dashboard's address (a real head: the same IP, the serve port).
type ProxyResolver interface {
	ProxyURL(ctx context.Context, head Head) (string, error)
}

// ProxyURL is the base URL of the head's Serve proxy: the resolver's answer when it is a
// ProxyResolver, else the dashboard's URL (simulators and a --dashboard-url-template front
// serve both under one address).
func ProxyURL(ctx context.Context, r Resolver, h Head) (string, error) {
	if pr, ok := r.(ProxyResolver); ok {
		return pr.ProxyURL(ctx, h)
	}
	return r.DashboardURL(ctx, h)
}

// ProxyURL implements ProxyResolver: http://<head pod IP>:<serve port>, with the same
// refusals as DashboardURL.
func (r PodResolver) ProxyURL(ctx context.Context, h Head) (string, error) {
	if h.ServePort < 1 || h.ServePort > 65535 {
		return "", fmt.Errorf("the serve port of %s is %d, not a port", h.Cluster.Name, h.ServePort)
	}
	if _, err := r.DashboardURL(ctx, Head{Cluster: h.Cluster, PodIP: h.PodIP, HostNetwork: h.HostNetwork, Port: h.ServePort}); err != nil {
		return "", err
	}
	ip, _ := netip.ParseAddr(h.PodIP)
	return "http://" + net.JoinHostPort(ip.Unmap().String(), strconv.Itoa(int(h.ServePort))), nil
}

// CheckProxyHealth asks the Serve proxy at BaseURL whether it is healthy: nil when it
// answers HTTP 2xx. The answer is read within the same bounds as the dashboard's.
func (c *HTTPClient) CheckProxyHealth(ctx context.Context) error {
	_, err := c.do(ctx, "GET", ProxyHealthPath, nil)
	return err
}
