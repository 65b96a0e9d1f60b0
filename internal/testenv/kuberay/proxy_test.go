package kuberay

import (
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestServiceHost(t *testing.T) {
	for _, tc := range []struct {
		host, name, namespace string
		ok                    bool
	}{
		{"rc-head-svc.team-a.svc.cluster.local", "rc-head-svc", "team-a", true},
		{"RC-Head-Svc.Team-A.svc.cluster.local.", "rc-head-svc", "team-a", true},
		{"rc-head-svc.team-a.svc", "", "", false},
		{"rc-head-svc.svc.cluster.local", "", "", false},
		{"a.b.c.svc.cluster.local", "", "", false},
		{"example.com", "", "", false},
		{".team-a.svc.cluster.local", "", "", false},
	} {
		name, ns, ok := serviceHost(tc.host)
		if name != tc.name || ns != tc.namespace || ok != tc.ok {
			t.Errorf("serviceHost(%q) = %q, %q, %v; want %q, %q, %v", tc.host, name, ns, ok, tc.name, tc.namespace, tc.ok)
		}
	}
}

func TestProxyRoutesAndRefuses(t *testing.T) {
	answer := func(what string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, what+" "+r.Method+" "+r.URL.RequestURI()+" host="+r.URL.Host) //nolint:gosec // echoes the test's own request back to it
		})
	}
	p, err := StartProxy(Routes{
		Service: func(namespace, name string, port int) http.Handler {
			if namespace == "ns" && name == "rc-head-svc" && port == 8265 {
				return answer("dashboard")
			}
			return nil
		},
		Pod: func(ip netip.Addr, port int) http.Handler {
			if ip == netip.MustParseAddr("10.244.0.7") && port == 8000 {
				return answer("serve-proxy")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	proxyURL, _ := url.Parse(p.URL())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}

	get := func(target string) (int, string) {
		t.Helper()
		resp, err := c.Get(target)
		if err != nil {
			t.Fatalf("GET %s: %v", target, err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	code, body := get("http://rc-head-svc.ns.svc.cluster.local:8265/api/serve/applications/?x=1")
	if code != 200 || body != "dashboard GET /api/serve/applications/?x=1 host=" {
		t.Errorf("dashboard: %d %q", code, body)
	}
	code, body = get("http://10.244.0.7:8000/-/healthz")
	if code != 200 || body != "serve-proxy GET /-/healthz host=" {
		t.Errorf("serve proxy: %d %q", code, body)
	}
	for _, target := range []string{
		"http://rc-head-svc.ns.svc.cluster.local:52365/",   // a port with no route
		"http://other-svc.ns.svc.cluster.local:8265/",      // a Service with no route
		"http://10.244.0.8:8000/-/healthz",                 // an unknown pod
		"http://example.com/",                              // the outside world
		"http://169.254.169.254:80/latest/meta-data/",      // cloud metadata
		"http://rc-head-svc.ns.svc.cluster.local.evil:80/", // a look-alike name
	} {
		if code, body := get(target); code != http.StatusForbidden || !strings.HasPrefix(body, "test proxy refuses") {
			t.Errorf("%s: %d %q, want 403 from the proxy", target, code, body)
		}
	}
	if got := len(p.Refused()); got != 6 {
		t.Errorf("refused %d requests, want 6: %v", got, p.Refused())
	}

	// HTTPS through the proxy needs a CONNECT tunnel, which the proxy never opens.
	resp, err := c.Get("https://example.com/")
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("https through the proxy succeeded with %d", resp.StatusCode)
	}
	if got := p.Refused(); len(got) != 7 || !strings.HasPrefix(got[6], "CONNECT example.com:443") {
		t.Errorf("CONNECT not refused: %v", got)
	}

	// A direct (non-proxy) request to the proxy is refused too.
	resp, err = http.Get(p.URL() + "/api/serve/applications/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("direct request: %d, want 403", resp.StatusCode)
	}
}

// Env sends a process's plain-HTTP requests, and only those, through the proxy.
func TestProxyEnv(t *testing.T) {
	p, err := StartProxy(Routes{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env := strings.Join(p.Env(), " ")
	for _, want := range []string{"HTTP_PROXY=" + p.URL(), "http_proxy=" + p.URL(), "NO_PROXY=", "no_proxy="} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	if strings.Contains(env, "HTTPS_PROXY") {
		t.Errorf("env %q proxies HTTPS too (the API server)", env)
	}
}
