package raysim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/dashboard"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var cluster = types.NamespacedName{Namespace: "ns", Name: "svc-abcde"}

const twoApps = `{"applications":[
 {"name":"fruit","route_prefix":"/fruit","import_path":"fruit.deployment_graph","deployments":[{"name":"MangoStand","num_replicas":2}]},
 {"name":"math","route_prefix":"/calc","import_path":"conditional_dag:serve_dag"}]}`

func start(t *testing.T, opts Options) (*Server, *dashboard.HTTPClient) {
	t.Helper()
	s, err := NewServer(cluster, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, dashboard.New(s.URL(), nil)
}

func statuses(t *testing.T, c dashboard.Client) map[string]string {
	t.Helper()
	d, err := c.GetServeDetails(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for n, a := range d.Applications {
		out[n] = a.Status
		for dn, dep := range a.Deployments {
			out[n+"/"+dn] = dep.Status
		}
	}
	return out
}

func TestDeployingThenRunning(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s, c := start(t, Options{DeployDelay: 3 * time.Second, Now: clk.Now})
	ctx := context.Background()

	if got := statuses(t, c); len(got) != 0 {
		t.Fatalf("fresh cluster has applications %v", got)
	}
	if err := c.DeployApplications(ctx, []byte(twoApps)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"fruit": "DEPLOYING", "fruit/MangoStand": "UPDATING", "math": "DEPLOYING", "math/serve_dag": "UPDATING"}
	if got := statuses(t, c); !equal(got, want) {
		t.Fatalf("right after deploy: %v, want %v", got, want)
	}
	clk.Add(3 * time.Second)
	want = map[string]string{"fruit": "RUNNING", "fruit/MangoStand": "HEALTHY", "math": "RUNNING", "math/serve_dag": "HEALTHY"}
	if got := statuses(t, c); !equal(got, want) {
		t.Fatalf("after the delay: %v, want %v", got, want)
	}
	if !s.AllRunning() {
		t.Fatal("AllRunning = false")
	}

	// Only target_capacity changes: nothing redeploys.
	withTC := strings.TrimSuffix(twoApps, "}") + `,"target_capacity":40}`
	if err := c.DeployApplications(ctx, []byte(withTC)); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, c); got["fruit"] != "RUNNING" || got["math"] != "RUNNING" {
		t.Fatalf("target_capacity change redeployed: %v", got)
	}
	d, _ := c.GetServeDetails(ctx)
	if d.TargetCapacity == nil || *d.TargetCapacity != 40 {
		t.Fatalf("target_capacity = %v, want 40", d.TargetCapacity)
	}

	// One application changes, one is dropped.
	changed := `{"applications":[{"name":"fruit","route_prefix":"/fruit","import_path":"fruit.deployment_graph","deployments":[{"name":"MangoStand","num_replicas":3}]}]}`
	if err := c.DeployApplications(ctx, []byte(changed)); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, c); !equal(got, map[string]string{"fruit": "DEPLOYING", "fruit/MangoStand": "UPDATING"}) {
		t.Fatalf("after changing fruit and dropping math: %v", got)
	}

	subs := s.Submissions()
	if len(subs) != 3 || subs[1].TargetCapacity == nil || *subs[1].TargetCapacity != 40 || subs[2].TargetCapacity != nil {
		t.Fatalf("submissions = %+v", subs)
	}
	if subs[0].ConfigWithoutTargetCapacity() != subs[1].ConfigWithoutTargetCapacity() {
		t.Error("configs differing only in target_capacity must compare equal")
	}
	if subs[1].ConfigWithoutTargetCapacity() == subs[2].ConfigWithoutTargetCapacity() {
		t.Error("different configs compare equal")
	}
}

func TestInvalidConfigsGetRaysError(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		want       []string
	}{
		{name: "not JSON", body: `applications: []`, status: 500, want: []string{"JSONDecodeError"}},
		{name: "no applications", body: `{}`, status: 400, want: []string{"ValidationError(model='ServeDeploySchema'", "{'loc': ('applications',), 'msg': 'field required', 'type': 'value_error.missing'}"}},
		{name: "missing import_path", body: `{"applications":[{"name":"a"}]}`, status: 400, want: []string{"'loc': ('applications', 0, 'import_path'), 'msg': 'field required'"}},
		{name: "bad import path", body: `{"applications":[{"name":"a","import_path":"nodots"}]}`, status: 400, want: []string{`Got invalid import path "nodots"`}},
		{name: "route prefix without slash", body: `{"applications":[{"name":"a","import_path":"m.a","route_prefix":"api"}]}`, status: 400, want: []string{"('applications', 0, 'route_prefix')", "must start with a forward slash"}},
		{name: "duplicate names", body: `{"applications":[{"name":"a","import_path":"m.a","route_prefix":"/a"},{"name":"a","import_path":"m.b","route_prefix":"/b"}]}`, status: 400, want: []string{`Found multiple configs for application "a". Please remove all duplicates.`}},
		{name: "duplicate routes", body: `{"applications":[{"name":"a","import_path":"m.a"},{"name":"b","import_path":"m.b"}]}`, status: 400, want: []string{`Found duplicate applications for route prefix "/"`}},
		{name: "target capacity above 100", body: `{"applications":[],"target_capacity":101}`, status: 400, want: []string{"('target_capacity',)", "less than or equal to 100"}},
		{name: "several errors at once", body: `{"applications":[{"name":"a"},{"name":"b","import_path":"x"}],"target_capacity":-1}`, status: 400, want: []string{"('target_capacity',)", "('applications', 0, 'import_path')", "('applications', 1, 'import_path')"}},
		{name: "host inside an application", body: `{"applications":[{"name":"a","import_path":"m.a","host":"1.2.3.4"}]}`, status: 400, want: []string{"Please remove it and set host in the top level deploy config only"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c := start(t, Options{})
			// The raw answer: raygate's client keeps only a short excerpt of error bodies.
			req, err := http.NewRequest(http.MethodPut, c.BaseURL+dashboard.ApplicationsPath, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(raw), w) {
					t.Errorf("body %q does not contain %q", raw, w)
				}
			}
			err = c.DeployApplications(context.Background(), []byte(tc.body))
			var de *dashboard.Error
			if !errors.As(err, &de) || de.StatusCode != tc.status {
				t.Fatalf("err = %v, want HTTP %d", err, tc.status)
			}
			if len(s.Submissions()) != 0 {
				t.Error("a rejected config was recorded")
			}
		})
	}
}

func TestFailureInjection(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	outcome := func(_ types.NamespacedName, app App) (string, string) {
		if app.ImportPath == "broken.app" {
			return "DEPLOY_FAILED", "ModuleNotFoundError: No module named 'broken'"
		}
		return "", ""
	}
	s, c := start(t, Options{DeployDelay: time.Second, Now: clk.Now, Outcome: outcome})
	ctx := context.Background()
	cfg := `{"applications":[{"name":"ok","import_path":"good.app","route_prefix":"/ok"},{"name":"bad","import_path":"broken.app","route_prefix":"/bad"}]}`
	if err := c.DeployApplications(ctx, []byte(cfg)); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	d, _ := c.GetServeDetails(ctx)
	if d.Applications["ok"].Status != "RUNNING" || d.Applications["bad"].Status != "DEPLOY_FAILED" || !strings.Contains(d.Applications["bad"].Message, "ModuleNotFoundError") {
		t.Fatalf("outcome not applied: %+v", d.Applications)
	}
	if s.AllRunning() {
		t.Fatal("AllRunning with a failed app")
	}

	if err := s.SetApplicationStatus("ok", "UNHEALTHY", "replica crashed"); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, c); got["ok"] != "UNHEALTHY" || got["ok/app"] != "UNHEALTHY" {
		t.Fatalf("forced status: %v", got)
	}
	if err := s.SetApplicationStatus("nope", "UNHEALTHY", ""); err == nil {
		t.Fatal("forcing an unknown app must fail")
	}
	s.ClearApplicationStatus("ok")
	if got := statuses(t, c); got["ok"] != "RUNNING" {
		t.Fatalf("after clear: %v", got)
	}

	s.SetUnavailable(true)
	if _, err := c.GetServeDetails(ctx); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("unavailable: err = %v", err)
	}
	s.SetUnavailable(false)

	s.Restart()
	if got := statuses(t, c); len(got) != 0 {
		t.Fatalf("after head restart: %v", got)
	}
	if len(s.Submissions()) != 1 {
		t.Fatal("restart must keep the submission history")
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry(Options{})
	defer r.Close()
	var mu sync.Mutex
	var seen []string
	r.OnSubmit(func(c types.NamespacedName, s Submission) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c.String()+":"+strings.Join(s.Applications, ","))
	})
	ctx := context.Background()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	if r.Server(a) != nil {
		t.Fatal("simulator exists before use")
	}
	urlA, err := r.DashboardURL(ctx, dashboard.Head{Cluster: a, Pod: "head-a", PodIP: "10.244.0.5", Port: 8265})
	if err != nil {
		t.Fatal(err)
	}
	urlA2, _ := r.DashboardURL(ctx, dashboard.Head{Cluster: a})
	urlB, _ := r.DashboardURL(ctx, dashboard.Head{Cluster: b})
	if urlA != urlA2 || urlA == urlB {
		t.Fatalf("urls a=%s a'=%s b=%s", urlA, urlA2, urlB)
	}
	if h, ok := r.LastHead(b); !ok || h.Cluster != b {
		t.Fatalf("last head of b: %+v %v", h, ok)
	}
	if err := dashboard.New(urlA, nil).DeployApplications(ctx, []byte(`{"applications":[{"name":"x","import_path":"m.x"}]}`)); err != nil {
		t.Fatal(err)
	}
	if !equal(statusesOf(r.Server(a)), map[string]string{"x": "RUNNING"}) || len(statusesOf(r.Server(b))) != 0 {
		t.Fatal("submission reached the wrong simulator")
	}

	// The front handler routes /<ns>/<name>/... and creates simulators on demand.
	front := &http.Server{Handler: r.Handler()}
	srv := newTestServer(t, front)
	tmpl := dashboard.TemplateResolver(srv + "/{namespace}/{name}")
	c := types.NamespacedName{Namespace: "other", Name: "c"}
	u, _ := tmpl.DashboardURL(ctx, dashboard.Head{Cluster: c})
	if err := dashboard.New(u, nil).DeployApplications(ctx, []byte(`{"applications":[{"name":"y","import_path":"m.y"}]}`)); err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.New(u, nil).GetServeDetails(ctx)
	if err != nil || d.Applications["y"].Status != "RUNNING" || r.Server(c) == nil {
		t.Fatalf("front handler: %+v %v", d, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"ns/a:x", "other/c:y"}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("OnSubmit saw %v, want %v", seen, want)
	}
}

func statusesOf(s *Server) map[string]string {
	if s == nil {
		return nil
	}
	return s.ApplicationStatuses()
}

func equal(a, b map[string]string) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// Each fault mode answers as a hostile head would; FaultNone restores Ray's behaviour.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	s, err := NewServer(types.NamespacedName{Namespace: "ns", Name: "c"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	c := dashboard.New(s.URL(), nil)

	s.SetFault(Fault{Mode: FaultRedirect, Location: "http://127.0.0.1:1/elsewhere"})
	if err := c.DeployApplications(ctx, []byte(`{"applications":[]}`)); err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("redirect: %v", err)
	}
	s.SetFault(Fault{Mode: FaultHuge, Bytes: 2 << 20})
	if _, err := c.GetServeDetails(ctx); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("huge: %v", err)
	}
	s.SetFault(Fault{Mode: FaultNoisy})
	if _, err := c.GetServeDetails(ctx); err == nil || strings.ContainsAny(err.Error(), "\x1b\x00\r\n\t") {
		t.Errorf("noisy: %q", err)
	}
	s.SetFault(Fault{Mode: FaultHang})
	short := &dashboard.HTTPClient{BaseURL: s.URL(), Timeout: 200 * time.Millisecond}
	start := time.Now()
	if _, err := short.GetServeDetails(ctx); err == nil || time.Since(start) < 200*time.Millisecond {
		t.Errorf("hang: %v after %v", err, time.Since(start))
	}
	s.SetFault(Fault{})
	if _, err := c.GetServeDetails(ctx); err != nil {
		t.Errorf("no fault: %v", err)
	}
	if s.Requests() != 5 {
		t.Errorf("%d requests counted, want 5", s.Requests())
	}
}

func TestServeProxyHealth(t *testing.T) {
	s, c := start(t, Options{})
	if err := c.CheckProxyHealth(context.Background()); err != nil {
		t.Fatalf("a new head's proxy: %v", err)
	}
	s.SetProxyHealthy(false)
	err := c.CheckProxyHealth(context.Background())
	var he *dashboard.Error
	if !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable || !strings.Contains(he.Body, "drained") {
		t.Fatalf("unhealthy proxy: %v", err)
	}
	if _, err := c.GetServeDetails(context.Background()); err != nil {
		t.Errorf("the dashboard still answers while the proxy is unhealthy: %v", err)
	}
	s.SetProxyHealthy(true)
	if err := c.CheckProxyHealth(context.Background()); err != nil {
		t.Errorf("healthy again: %v", err)
	}
	// A hostile head's faults reach its proxy too.
	s.SetFault(Fault{Mode: FaultNoisy})
	if err := c.CheckProxyHealth(context.Background()); err == nil {
		t.Error("a noisy head's proxy is healthy")
	}
}
