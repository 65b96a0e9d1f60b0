package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
)

// A GET /api/serve/applications/ answer as Ray 2.x returns it (trimmed of proxies and
// replica details, which raygate ignores).
const serveDetailsJSON = `{
  "controller_info": {"node_id": "n1", "node_ip": "10.0.0.1", "actor_id": "a", "actor_name": "SERVE_CONTROLLER_ACTOR", "worker_id": "w", "log_file_path": "/serve/controller.log"},
  "proxy_location": "EveryNode",
  "http_options": {"host": "0.0.0.0", "port": 8000, "root_path": "", "request_timeout_s": null, "keep_alive_timeout_s": 5},
  "grpc_options": {"port": 9000, "grpc_servicer_functions": []},
  "proxies": {},
  "deploy_mode": "MULTI_APP",
  "applications": {
    "fruit": {
      "name": "fruit", "route_prefix": "/fruit", "docs_path": null, "status": "RUNNING", "message": "",
      "last_deployed_time_s": 1694042836.19, "source": "declarative", "external_scaler_enabled": false,
      "deployed_app_config": {"name": "fruit", "route_prefix": "/fruit", "import_path": "fruit.deployment_graph"},
      "deployments": {
        "MangoStand": {"name": "MangoStand", "status": "HEALTHY", "status_trigger": "CONFIG_UPDATE_COMPLETED", "message": "", "deployment_config": {}, "target_num_replicas": 2, "required_resources": {"CPU": 1}, "replicas": []}
      }
    },
    "math": {
      "name": "math", "route_prefix": "/calc", "docs_path": null, "status": "DEPLOY_FAILED",
      "message": "Deploying app 'math' failed: ModuleNotFoundError: No module named 'conditional_dag'",
      "last_deployed_time_s": 1694042836.19, "source": "declarative", "deployments": {}
    }
  },
  "target_capacity": 40.0
}`

func TestGetServeDetails(t *testing.T) {
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != ApplicationsPath {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		}
		gotQuery = r.URL.RawQuery
		_, _ = io.WriteString(w, serveDetailsJSON)
	}))
	defer srv.Close()

	d, err := New(srv.URL+"/", nil).GetServeDetails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if gotQuery != "api_type=declarative" {
		t.Errorf("query = %q, want api_type=declarative", gotQuery)
	}
	if len(d.Applications) != 2 {
		t.Fatalf("applications = %d, want 2", len(d.Applications))
	}
	fruit := d.Applications["fruit"]
	if fruit.Status != "RUNNING" || fruit.Deployments["MangoStand"].Status != "HEALTHY" || *fruit.RoutePrefix != "/fruit" {
		t.Errorf("fruit = %+v", fruit)
	}
	if m := d.Applications["math"]; m.Status != "DEPLOY_FAILED" || !strings.Contains(m.Message, "ModuleNotFoundError") {
		t.Errorf("math = %+v", m)
	}
	if d.TargetCapacity == nil || *d.TargetCapacity != 40 {
		t.Errorf("target_capacity = %v, want 40", d.TargetCapacity)
	}
}

func TestGetServeDetailsEmptyInstance(t *testing.T) {
	// Serve not started yet: Ray returns the empty schema with applications {}.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"deploy_mode":"MULTI_APP","applications":{},"target_capacity":null}`)
	}))
	defer srv.Close()
	d, err := New(srv.URL, nil).GetServeDetails(context.Background())
	if err != nil || d.Applications == nil || len(d.Applications) != 0 || d.TargetCapacity != nil {
		t.Fatalf("details = %+v, err = %v", d, err)
	}
}

func TestDeployApplications(t *testing.T) {
	var body, ctype string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || r.URL.Path != ApplicationsPath {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		}
		b, _ := io.ReadAll(r.Body)
		body, ctype = string(b), r.Header.Get("Content-Type")
	}))
	defer srv.Close()
	cfg := `{"applications":[{"name":"a","import_path":"m.app"}],"target_capacity":20}`
	if err := New(srv.URL, nil).DeployApplications(context.Background(), []byte(cfg)); err != nil {
		t.Fatal(err)
	}
	if body != cfg || ctype != "application/json" {
		t.Errorf("body %q content-type %q", body, ctype)
	}
}

func TestErrorsNameStatusAndBody(t *testing.T) {
	long := strings.Repeat("x", 2000)
	cases := []struct {
		name       string
		status     int
		body       string
		wantIn     []string
		badRequest bool
	}{
		{name: "validation error", status: 400, body: "ValidationError(model='ServeDeploySchema', errors=[...])", wantIn: []string{"PUT", "HTTP 400", "ValidationError(model='ServeDeploySchema'"}, badRequest: true},
		{name: "gcs down", status: 503, body: "The GCS may be down", wantIn: []string{"HTTP 503", "GCS may be down"}},
		{name: "long body is cut", status: 500, body: long, wantIn: []string{"HTTP 500", strings.Repeat("x", maxErrorExcerpt) + "…"}},
		{name: "control characters and new lines are flattened", status: 500, body: "line1\n\x1b[31mline2\r\n\tend", wantIn: []string{"HTTP 500: line1 [31mline2 end"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, tc.body, tc.status)
			}))
			defer srv.Close()
			err := New(srv.URL, nil).DeployApplications(context.Background(), []byte(`{}`))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if strings.Contains(err.Error(), strings.Repeat("x", maxErrorExcerpt+1)) {
				t.Error("error text not truncated")
			}
			if IsBadRequest(err) != tc.badRequest {
				t.Errorf("IsBadRequest = %v, want %v", IsBadRequest(err), tc.badRequest)
			}
		})
	}
}

func TestBadJSONIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>proxy</html>") }))
	defer srv.Close()
	_, err := New(srv.URL, nil).GetServeDetails(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not a Serve status") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "proxy") {
		t.Errorf("the error quotes the untrusted answer: %v", err)
	}
}

// A redirect from a head pod is never followed, whatever http.Client the caller passes: a
// 307 would re-send the PUT with raygate's Serve config to wherever the tenant points it.
func TestRedirectsAreNeverFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		head := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+ApplicationsPath, code)
		}))
		for _, hc := range []*http.Client{nil, {}, http.DefaultClient} {
			c := New(head.URL, hc)
			err := c.DeployApplications(context.Background(), []byte(`{"applications":[]}`))
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != code {
				t.Errorf("PUT answered %d: err = %v, want an Error with that status", code, err)
			}
			if _, err := c.GetServeDetails(context.Background()); err == nil {
				t.Errorf("GET answered %d: want an error", code)
			}
		}
		head.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests, want 0", n)
	}
}

func TestOversizedAnswersAreRefused(t *testing.T) {
	huge := `{"applications":{"a":{"name":"a","status":"RUNNING","message":"` + strings.Repeat("x", MaxResponseBytes) + `"}}}`
	for _, chunked := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if chunked {
				w.(http.Flusher).Flush() // no Content-Length: the cap must hold while reading
			}
			_, _ = io.WriteString(w, huge)
		}))
		_, err := New(srv.URL, nil).GetServeDetails(context.Background())
		if err == nil || !strings.Contains(err.Error(), "raygate reads") {
			t.Errorf("chunked=%v: err = %v, want a size error", chunked, err)
		}
		srv.Close()
	}
}

func TestAnswersAreBoundedAndSanitized(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"applications":{`)
	for i := range MaxApplications - 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"app%04d":{"name":"app%04d","status":"RUNNING","message":"ok\u001b[2J`+strings.Repeat("m", 600)+`","deployments":{`, i, i)
		for j := range 3 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"d%d":{"name":"d%d","status":"HEALTHY","message":"line\nbreak"}`, j, j)
		}
		b.WriteString(`}}`)
	}
	b.WriteString(`,"bad\u0000name":{"name":"x","status":"RUNNING"}}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, b.String()) }))
	defer srv.Close()
	d, err := New(srv.URL, nil).GetServeDetails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Applications) != MaxApplications-1 {
		t.Fatalf("kept %d applications, want %d (the one with an unprintable name left out)", len(d.Applications), MaxApplications-1)
	}
	for name, app := range d.Applications {
		if strings.ContainsAny(name+app.Message, "\x00\x1b\n") {
			t.Fatalf("unsanitized text kept: %q %q", name, app.Message)
		}
		if n := utf8.RuneCountInString(app.Message); n > maxMessage+1 {
			t.Fatalf("message of %d runes kept", n)
		}
		if got := app.Deployments["d1"].Message; got != "line break" {
			t.Fatalf("deployment message = %q", got)
		}
	}
}

func TestSanitize(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  string
	}{
		{"plain", 10, "plain"},
		{"  lead and trail  ", 40, "lead and trail"},
		{"a\x00b\x07c", 10, "a b c"},
		{"tab\tnew\nline\r\n", 40, "tab new line"},
		{"\xff\xfe", 10, "??"},
		{"0123456789abc", 10, "0123456789…"},
		{"0123456789   ", 10, "0123456789"},
		{"日本語テキスト", 3, "日本語…"},
		{"\u202eevil", 10, "evil"},
	}
	for _, tc := range cases {
		if got := Sanitize(tc.in, tc.limit); got != tc.want {
			t.Errorf("Sanitize(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestTimeoutAndCancellation(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	c := New(srv.URL, nil)
	c.Timeout = 100 * time.Millisecond
	start := time.Now()
	_, err := c.GetServeDetails(context.Background())
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}

	c.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	err = c.DeployApplications(ctx, []byte(`{}`))
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := New(url, nil).GetServeDetails(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Ray dashboard is unreachable") || !strings.Contains(err.Error(), url) {
		t.Fatalf("err = %v", err)
	}
}

func TestResolvers(t *testing.T) {
	c := types.NamespacedName{Namespace: "team-a", Name: "svc-x7k2p"}
	head := Head{Cluster: c, Pod: "pod-uid", PodIP: "10.244.1.7", Port: 8265}
	got, err := PodResolver{}.DashboardURL(context.Background(), head)
	if want := "http://10.244.1.7:8265"; got != want || err != nil {
		t.Errorf("PodResolver = %q, %v; want %q", got, err, want)
	}
	head.PodIP, head.Port = "fd00::7", 9999
	if got, _ = (PodResolver{}).DashboardURL(context.Background(), head); got != "http://[fd00::7]:9999" {
		t.Errorf("PodResolver IPv6 = %q", got)
	}
	// Addresses a pod cannot legitimately have: the operator's own loopback, cloud metadata
	// (link-local), no address at all, a name instead of an address, a port out of range.
	for _, bad := range []Head{
		{Cluster: c, PodIP: "127.0.0.1", Port: 8265},
		{Cluster: c, PodIP: "::1", Port: 8265},
		{Cluster: c, PodIP: "169.254.169.254", Port: 80},
		{Cluster: c, PodIP: "fe80::1%eth0", Port: 8265},
		{Cluster: c, PodIP: "0.0.0.0", Port: 8265},
		{Cluster: c, PodIP: "255.255.255.255", Port: 8265},
		{Cluster: c, PodIP: "", Port: 8265},
		{Cluster: c, PodIP: "evil.example.com", Port: 8265},
		{Cluster: c, PodIP: "10.0.0.1", Port: 0},
		{Cluster: c, PodIP: "10.0.0.1", Port: 70000},
	} {
		if got, err := (PodResolver{}).DashboardURL(context.Background(), bad); err == nil {
			t.Errorf("PodResolver(%s:%d) = %q, want a refusal", bad.PodIP, bad.Port, got)
		}
	}
	// Simulated pods on loopback: only inside the range given, and never the operator's own
	// 127.0.0.0/16 even when a careless range covers it.
	sim := PodResolver{SimulatedPods: netip.MustParsePrefix("127.64.0.0/10")}
	for ip, ok := range map[string]bool{"127.64.0.5": true, "127.127.255.254": true, "127.0.0.1": false, "127.128.0.1": false, "::1": false, "10.0.0.1": true} {
		got, err := sim.DashboardURL(context.Background(), Head{Cluster: c, PodIP: ip, Port: 8265})
		if (err == nil) != ok {
			t.Errorf("PodResolver{127.64.0.0/10}(%s) = %q, %v; want accepted=%v", ip, got, err, ok)
		}
	}
	for _, careless := range []string{"127.0.0.0/8", "127.0.0.0/16", "10.0.0.0/8"} {
		r := PodResolver{SimulatedPods: netip.MustParsePrefix(careless)}
		if got, err := r.DashboardURL(context.Background(), Head{Cluster: c, PodIP: "127.0.0.1", Port: 8265}); err == nil {
			t.Errorf("PodResolver{%s}(127.0.0.1) = %q, want a refusal", careless, got)
		}
	}
	got, _ = TemplateResolver("http://127.0.0.1:9000/{namespace}/{name}").DashboardURL(context.Background(), head)
	if want := "http://127.0.0.1:9000/team-a/svc-x7k2p"; got != want {
		t.Errorf("TemplateResolver = %q, want %q", got, want)
	}
}

func TestValidateTemplate(t *testing.T) {
	for tmpl, ok := range map[string]bool{
		"http://127.0.0.1:9000/{namespace}/{name}":     true,
		"https://{name}-head-svc.{namespace}.svc:8265": true,
		"http://127.0.0.1:9000/":                       false,
		"ftp://x/{name}":                               false,
		"{name}":                                       false,
	} {
		if err := ValidateTemplate(tmpl); (err == nil) != ok {
			t.Errorf("ValidateTemplate(%q) = %v, want ok=%v", tmpl, err, ok)
		}
	}
}
