package promscrape

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

const exposition = `# HELP traefik_service_requests_total How many HTTP requests processed on a service, partitioned by status code, protocol, and method.
# TYPE traefik_service_requests_total counter
traefik_service_requests_total{code="200",method="GET",protocol="http",service="ns-green-serve-svc-http-8000@kubernetesgateway"} %d
traefik_service_requests_total{code="500",method="GET",protocol="http",service="ns-green-serve-svc-http-8000@kubernetesgateway"} %d
traefik_service_requests_total{code="200",method="GET",protocol="http",service="ns-blue-serve-svc-http-8000@kubernetesgateway"} 1000
# HELP traefik_service_request_duration_seconds How long it took to process the request on a service, partitioned by status code, protocol, and method.
# TYPE traefik_service_request_duration_seconds histogram
traefik_service_request_duration_seconds_bucket{code="200",method="GET",protocol="http",service="x",le="0.1"} 3
traefik_service_request_duration_seconds_bucket{code="200",method="GET",protocol="http",service="x",le="+Inf"} 4
traefik_service_request_duration_seconds_sum{code="200",method="GET",protocol="http",service="x"} 0.5
traefik_service_request_duration_seconds_count{code="200",method="GET",protocol="http",service="x"} 4
# TYPE process_open_fds gauge
process_open_fds 12
`

func TestParse(t *testing.T) {
	text := strings.NewReplacer("%d", "7").Replace(exposition)
	all, err := Parse(strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3+4+1 {
		t.Errorf("parsed %d series, want 8: %v", len(all), all)
	}
	found := false
	for _, s := range all {
		if s.Labels["__name__"] == "traefik_service_request_duration_seconds_bucket" && s.Labels["le"] == "0.1" && s.Value == 3 {
			found = true
		}
	}
	if !found {
		t.Errorf("no _bucket{le=\"0.1\"} series: %v", all)
	}
	kept, err := Parse(strings.NewReader(text), []string{"traefik_service_requests_total"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3 {
		t.Errorf("Keep: %d series, want 3", len(kept))
	}
	if _, err := Parse(strings.NewReader("not { a metric"), nil); err == nil {
		t.Error("garbage parsed without error")
	}
}

// fakeTraefik serves the exposition with green's 200 and 500 counters set by the test.
type fakeTraefik struct {
	mu       sync.Mutex
	ok, fail int
}

func (f *fakeTraefik) set(ok, fail int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ok, f.fail = ok, fail
}

func (f *fakeTraefik) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	text := strings.Replace(exposition, "%d", strconv.Itoa(f.ok), 1)
	text = strings.Replace(text, "%d", strconv.Itoa(f.fail), 1)
	_, _ = w.Write([]byte(text))
}

func loopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

const greenRatio = `green 5xx ratio`

func TestServerAnswersTheOfficialClient(t *testing.T) {
	ctx := context.Background()
	tr := &fakeTraefik{}
	tr.set(0, 0)
	target := loopbackServer(t, tr) + "/metrics"
	s, err := Start(ctx, Options{Target: target, Interval: 50 * time.Millisecond, Keep: []string{"traefik_service_requests_total"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	svc := "ns-green-serve-svc-http-8000@kubernetesgateway"
	s.Register(greenRatio, func(st *Store, at time.Time) (float64, bool) {
		fails, ok := st.Increase(Match(Labels{"service": svc, "code": "500"}), at, 10*time.Second)
		if !ok {
			return 0, false
		}
		all, _ := st.Increase(Match(Labels{"service": svc}), at, 10*time.Second)
		return Ratio(fails, all)
	})
	c, err := promapi.NewClient(promapi.Config{Address: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	api := promv1.NewAPI(c)
	query := func(q string) (model.Value, error) {
		t.Helper()
		v, _, err := api.Query(ctx, q, time.Now())
		return v, err
	}

	// No requests yet: an empty vector.
	v, err := query(greenRatio)
	if err != nil {
		t.Fatal(err)
	}
	if vec, ok := v.(model.Vector); !ok || len(vec) != 0 {
		t.Errorf("no requests: %v (%T), want an empty vector", v, v)
	}

	tr.set(70, 30)
	if err := s.WaitScrape(ctx); err != nil {
		t.Fatal(err)
	}
	v, err = query(greenRatio)
	if err != nil {
		t.Fatal(err)
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 || float64(vec[0].Value) != 0.3 {
		t.Fatalf("answer %v (%T), want one sample 0.3", v, v)
	}
	if d := time.Since(vec[0].Timestamp.Time()); d < 0 || d > 5*time.Second {
		t.Errorf("sample time %v is not the evaluation time", vec[0].Timestamp.Time())
	}

	if _, err := query(`sum(rate(traefik_service_requests_total[1m]))`); err == nil || !strings.Contains(err.Error(), "registered queries only") {
		t.Errorf("unregistered query: %v, want a bad_data error", err)
	}
	answers := s.Answers()
	if len(answers) != 3 || answers[1].Value != 0.3 || !answers[1].OK || answers[0].OK || answers[2].Err == "" {
		t.Errorf("answers log %+v", answers)
	}
}

func TestVectorJSON(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	if got, want := string(VectorJSON(at, 0.25, true)), `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000.123,"0.25"]}]}}`; got != want {
		t.Errorf("VectorJSON = %s\nwant %s", got, want)
	}
	if got, want := string(VectorJSON(at, 0, false)), `{"status":"success","data":{"resultType":"vector","result":[]}}`; got != want {
		t.Errorf("empty VectorJSON = %s\nwant %s", got, want)
	}
	if got, want := string(ErrorJSON("bad_data", "no")), `{"status":"error","errorType":"bad_data","error":"no"}`; got != want {
		t.Errorf("ErrorJSON = %s", got)
	}
}

func TestEvalTime(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	for _, tt := range []struct {
		param string
		want  time.Time
		err   bool
	}{
		{"", now, false},
		{"1700000000.5", time.Unix(1_700_000_000, 500_000_000), false},
		{"2023-11-14T22:13:20Z", time.Unix(1_700_000_000, 0), false},
		{"1800000000", now, false}, // the future is now
		{"yesterday", time.Time{}, true},
	} {
		got, err := evalTime(tt.param, now)
		if (err != nil) != tt.err || (!tt.err && !got.Equal(tt.want)) {
			t.Errorf("evalTime(%q) = %v, %v; want %v (error %v)", tt.param, got, err, tt.want, tt.err)
		}
	}
}

func TestStartNeedsATarget(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); err == nil {
		t.Error("Start without a target succeeded")
	}
}
