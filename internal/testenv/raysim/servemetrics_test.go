package raysim

import (
	"context"
	"io"
	"maps"
	"math"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// node is one simulated node's Serve proxy and metrics port.
type node struct{ proxy, metrics string }

func startNode(t *testing.T, s *Server, name string) node {
	t.Helper()
	return node{
		proxy:   newTestServer(t, &http.Server{Handler: s.NodeProxyHandler(name), ReadHeaderTimeout: time.Second}),
		metrics: newTestServer(t, &http.Server{Handler: s.MetricsHandler(name), ReadHeaderTimeout: time.Second}),
	}
}

func send(t *testing.T, method, url string, n int) {
	t.Helper()
	for range n {
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// scrape reads a metrics port as Prometheus would.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample is the value of the family's series with exactly these labels besides SessionName
// (a histogram's count, a counter's value); false when there is none.
func sample(fams map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, bool) {
	f := fams[family]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			if l.GetName() != sessionLabel {
				got[l.GetName()] = l.GetValue()
			}
		}
		if !maps.Equal(got, labels) {
			continue
		}
		if h := m.GetHistogram(); h != nil {
			return float64(h.GetSampleCount()), true
		}
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

func TestServeMetricsCountWhatTheProxyAnswers(t *testing.T) {
	s, c := start(t, Options{})
	if err := c.DeployApplications(context.Background(), []byte(twoApps)); err != nil {
		t.Fatal(err)
	}
	a, b := startNode(t, s, "svc-abcde-head-x1"), startNode(t, s, "svc-abcde-worker-y2")
	s.SetUserErrorRatio(0.25)
	send(t, http.MethodGet, a.proxy+"/fruit/mango", 8)
	send(t, http.MethodPost, a.proxy+"/calc", 1) // the 9th request: floor(9·0.25) = 2, no new failure
	send(t, http.MethodGet, a.proxy+"/nothing", 1)
	send(t, http.MethodGet, a.proxy+"/-/healthz", 1)
	send(t, http.MethodGet, b.proxy+"/calc/add", 3) // the 12th fails

	replica := replicaID(cluster, "fruit", "MangoStand")
	fams := scrape(t, a.metrics)
	for _, tt := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{metricHTTPRequests, map[string]string{"route": "/fruit", "method": "GET", "application": "fruit", "status_code": "200"}, 6},
		{metricHTTPRequests, map[string]string{"route": "/fruit", "method": "GET", "application": "fruit", "status_code": "500"}, 2},
		{metricHTTPRequests, map[string]string{"route": "/calc", "method": "POST", "application": "math", "status_code": "200"}, 1},
		{metricHTTPRequests, map[string]string{"route": "", "method": "GET", "application": "", "status_code": "404"}, 1},
		{metricHTTPRequests, map[string]string{"route": "/-/healthz", "method": "GET", "application": "", "status_code": "200"}, 1},
		{metricHTTPErrors, map[string]string{"route": "/fruit", "error_code": "500", "method": "GET", "application": "fruit"}, 2},
		{metricHTTPErrors, map[string]string{"route": "", "error_code": "404", "method": "GET", "application": ""}, 1},
		{metricDeploymentHTTPErrors, map[string]string{"deployment": "MangoStand", "error_code": "500", "method": "GET", "route": "/fruit", "application": "fruit"}, 2},
		{metricHTTPLatency, map[string]string{"method": "GET", "route": "/fruit", "application": "fruit", "status_code": "200"}, 6},
		{metricDeploymentRequests, map[string]string{"deployment": "MangoStand", "replica": replica, "route": "/fruit", "application": "fruit"}, 8},
		{metricDeploymentErrors, map[string]string{"deployment": "MangoStand", "replica": replica, "route": "/fruit", "application": "fruit"}, 2},
		{metricDeploymentLatency, map[string]string{"deployment": "MangoStand", "replica": replica, "route": "/fruit", "application": "fruit"}, 8},
		// The application without a deployments list: its ingress is named after the bound object.
		{metricDeploymentRequests, map[string]string{"deployment": "serve_dag", "replica": replicaID(cluster, "math", "serve_dag"), "route": "/calc", "application": "math"}, 1},
	} {
		if got, ok := sample(fams, tt.family, tt.labels); !ok || got != tt.want {
			t.Errorf("%s%v = %v (found: %v), want %v", tt.family, tt.labels, got, ok, tt.want)
		}
	}
	if _, ok := sample(fams, metricDeploymentErrors, map[string]string{"deployment": "serve_dag", "replica": replicaID(cluster, "math", "serve_dag"), "route": "/calc", "application": "math"}); ok {
		t.Errorf("node a counts an error of math it never failed")
	}
	if got := fams[metricHTTPRequests].GetMetric()[0].GetLabel(); got[0].GetName() != sessionLabel || got[0].GetValue() != s.session {
		t.Errorf("first label %v, want %s=%s", got[0], sessionLabel, s.session)
	}

	// Node b counts only what it answered.
	fams = scrape(t, b.metrics)
	if got, _ := sample(fams, metricHTTPRequests, map[string]string{"route": "/calc", "method": "GET", "application": "math", "status_code": "200"}); got != 2 {
		t.Errorf("node b: %v answers 200 on /calc, want 2", got)
	}
	if got, _ := sample(fams, metricHTTPErrors, map[string]string{"route": "/calc", "error_code": "500", "method": "GET", "application": "math"}); got != 1 {
		t.Errorf("node b: %v errors on /calc, want 1", got)
	}
	if _, ok := sample(fams, metricHTTPRequests, map[string]string{"route": "/fruit", "method": "GET", "application": "fruit", "status_code": "200"}); ok {
		t.Errorf("node b has node a's /fruit requests")
	}

	// A new pod of the same name starts from zero.
	s.RestartNode("svc-abcde-worker-y2")
	if fams := scrape(t, b.metrics); len(fams) != 0 {
		t.Errorf("after RestartNode node b still has %d families", len(fams))
	}
}

func TestServeMetricsUnavailableApplication(t *testing.T) {
	s, c := start(t, Options{DeployDelay: time.Hour})
	if err := c.DeployApplications(context.Background(), []byte(twoApps)); err != nil {
		t.Fatal(err)
	}
	a := startNode(t, s, "pod")
	send(t, http.MethodGet, a.proxy+"/fruit", 2)
	fams := scrape(t, a.metrics)
	if got, _ := sample(fams, metricHTTPErrors, map[string]string{"route": "/fruit", "error_code": "503", "method": "GET", "application": "fruit"}); got != 2 {
		t.Errorf("%v 503 errors while DEPLOYING, want 2", got)
	}
	if f := fams[metricDeploymentRequests]; f != nil {
		t.Errorf("no replica runs yet, but the replicas counted %v", f.GetMetric())
	}
}

func TestServeMetricsLatency(t *testing.T) {
	s, c := start(t, Options{})
	if err := c.DeployApplications(context.Background(), []byte(twoApps)); err != nil {
		t.Fatal(err)
	}
	a := startNode(t, s, "pod")
	s.SetUserLatency(30 * time.Millisecond)
	send(t, http.MethodGet, a.proxy+"/fruit", 3)
	send(t, http.MethodGet, a.proxy+"/-/healthz", 1) // not delayed
	fams := scrape(t, a.metrics)
	buckets := func(family string, labels map[string]string) map[float64]uint64 {
		out := map[float64]uint64{}
		for _, m := range fams[family].GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				if l.GetName() != sessionLabel {
					got[l.GetName()] = l.GetValue()
				}
			}
			if maps.Equal(got, labels) {
				for _, b := range m.GetHistogram().GetBucket() {
					out[b.GetUpperBound()] = b.GetCumulativeCount()
				}
			}
		}
		return out
	}
	for _, tt := range []struct {
		family string
		labels map[string]string
	}{
		{metricHTTPLatency, map[string]string{"method": "GET", "route": "/fruit", "application": "fruit", "status_code": "200"}},
		{metricDeploymentLatency, map[string]string{"deployment": "MangoStand", "replica": replicaID(cluster, "fruit", "MangoStand"), "route": "/fruit", "application": "fruit"}},
	} {
		// No request can take less than the 30 ms injected (a loaded machine may take longer).
		b := buckets(tt.family, tt.labels)
		if b[20] != 0 || b[math.Inf(1)] != 3 {
			t.Errorf("%s: %d of %d requests under 20 ms, want 0 of 3 (buckets %v)", tt.family, b[20], b[math.Inf(1)], b)
		}
	}
	if b := buckets(metricHTTPLatency, map[string]string{"method": "GET", "route": "/-/healthz", "application": "", "status_code": "200"}); b[500] != 1 {
		t.Errorf("the health check took over 500 ms: %v", b)
	}
}

func TestIngressDeployment(t *testing.T) {
	for _, tt := range []struct {
		name string
		app  appConfig
		want string
	}{
		{"no deployments listed: the bound object", appConfig{ImportPath: "fruit.deployment_graph"}, "deployment_graph"},
		{"colon import path", appConfig{ImportPath: "conditional_dag:serve_dag"}, "serve_dag"},
		{"listed and bound", appConfig{ImportPath: "m:Ingress", Deployments: []string{"Model", "Ingress"}}, "Ingress"},
		{"listed, bound one not among them: the first", appConfig{ImportPath: "m:app", Deployments: []string{"Router", "Model"}}, "Router"},
	} {
		if got := ingressDeployment(tt.app); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestIsErrorStatus(t *testing.T) {
	for code, want := range map[int]bool{200: false, 204: false, 302: false, 404: true, 499: true, 500: true, 503: true} {
		if got := isErrorStatus(code); got != want {
			t.Errorf("isErrorStatus(%d) = %v, want %v", code, got, want)
		}
	}
}
