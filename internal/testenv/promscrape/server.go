package promscrape

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/raygate/raygate/internal/testenv/load"
)

// Defaults of Options.
const (
	DefaultInterval  = 500 * time.Millisecond
	DefaultRetention = 5 * time.Minute
	scrapeTimeout    = 2 * time.Second
	maxScrapeBytes   = 8 << 20
	maxAnswers       = 4096
)

// Options configure a Server.
type Options struct {
	// Target is the /metrics URL scraped; it must be on loopback.
	Target string
	// Interval between scrapes (default DefaultInterval).
	Interval time.Duration
	// Retention is how long scrapes are kept (default DefaultRetention).
	Retention time.Duration
	// Keep are the metric names kept (a histogram's or summary's family name keeps its
	// _bucket, _sum and _count series); empty keeps every series.
	Keep []string
}

// Func computes a registered query's value at a time from the scraped series; ok false
// answers an empty vector (no data).
type Func func(s *Store, at time.Time) (value float64, ok bool)

// Answer is one query the server answered.
type Answer struct {
	// At is the evaluation time (the query's time parameter, or when it was asked).
	At    time.Time
	Query string
	Value float64
	// OK is false for no data; Err is set for a refused (unregistered) query.
	OK  bool
	Err string
}

// Server scrapes Target and answers /api/v1/query for registered queries.
type Server struct {
	opts   Options
	store  *Store
	client *http.Client
	http   *http.Server
	url    string
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	queries    map[string]Func
	answers    []Answer
	scrapeErrs int
	lastErr    string
}

// Start scrapes opts.Target until Close, and serves the query API on 127.0.0.1. It returns
// once the first scrape succeeded (or fails after a few seconds of errors).
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Target == "" {
		return nil, errors.New("promscrape: no target")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, store: NewStore(opts.Retention), client: load.LoopbackClient(scrapeTimeout),
		queries: map[string]Func{}, url: "http://" + l.Addr().String(), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", s.serveQuery)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.http.Serve(l) }()

	first := time.Now()
	for {
		err := s.scrape(ctx)
		if err == nil {
			break
		}
		if time.Since(first) > 10*time.Second || ctx.Err() != nil {
			_ = s.http.Close()
			return nil, fmt.Errorf("promscrape: first scrape of %s: %w", opts.Target, err)
		}
		time.Sleep(opts.Interval)
	}
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	go s.loop(loopCtx)
	return s, nil
}

// URL is the base URL of the query API (what --prometheus-url takes).
func (s *Server) URL() string { return s.url }

// Store is the scraped data.
func (s *Server) Store() *Store { return s.store }

// Close stops scraping and serving.
func (s *Server) Close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	_ = s.http.Close()
}

// Register makes the server answer query (compared as sent, whitespace included) with f.
func (s *Server) Register(query string, f Func) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries[query] = f
}

// Answers are the queries answered so far (at most the last 4096), oldest first.
func (s *Server) Answers() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers)
}

// ScrapeErrors is how many scrapes failed since the start, and the last error.
func (s *Server) ScrapeErrors() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scrapeErrs, s.lastErr
}

// WaitScrape blocks until a scrape started after the call has been stored (or ctx ends), so
// what a test just caused is in the data.
func (s *Server) WaitScrape(ctx context.Context) error {
	start := time.Now()
	for {
		if at, ok := s.store.latest(); ok && at.After(start) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.opts.Interval / 4):
		}
	}
}

func (s *Server) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.scrape(ctx); err != nil && ctx.Err() == nil {
				s.mu.Lock()
				s.scrapeErrs++
				s.lastErr = err.Error()
				s.mu.Unlock()
			}
		}
	}
}

// scrape fetches and stores one scrape, stamped with the time the request was sent.
func (s *Server) scrape(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.opts.Target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	at := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	samples, err := Parse(io.LimitReader(resp.Body, maxScrapeBytes), s.opts.Keep)
	if err != nil {
		return err
	}
	s.store.Add(at, samples)
	return nil
}

// Parse reads the Prometheus text format into samples by series key, keeping only the
// families named in keep (all when empty). Histograms and summaries become their _bucket
// (le) or quantile, _sum and _count series, as Prometheus stores them.
func Parse(r io.Reader, keep []string) (map[string]Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := map[string]Sample{}
	add := func(name string, labels []*dto.LabelPair, extra map[string]string, v float64) {
		l := Labels{model.MetricNameLabel: name}
		for _, lp := range labels {
			l[lp.GetName()] = lp.GetValue()
		}
		for k, x := range extra {
			l[k] = x
		}
		out[seriesKey(l)] = Sample{Labels: l, Value: v}
	}
	for name, f := range families {
		if len(keep) > 0 && !slices.Contains(keep, name) {
			continue
		}
		for _, m := range f.GetMetric() {
			lp := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, lp, nil, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, lp, nil, m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", lp, map[string]string{"le": formatFloat(b.GetUpperBound())}, float64(b.GetCumulativeCount()))
				}
				add(name+"_bucket", lp, map[string]string{"le": "+Inf"}, float64(h.GetSampleCount()))
				add(name+"_sum", lp, nil, h.GetSampleSum())
				add(name+"_count", lp, nil, float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					add(name, lp, map[string]string{"quantile": formatFloat(q.GetQuantile())}, q.GetValue())
				}
				add(name+"_sum", lp, nil, sm.GetSampleSum())
				add(name+"_count", lp, nil, float64(sm.GetSampleCount()))
			default:
				add(name, lp, nil, m.GetUntyped().GetValue())
			}
		}
	}
	return out, nil
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// apiResponse is Prometheus' envelope of an API answer.
type apiResponse struct {
	Status    string   `json:"status"`
	Data      *apiData `json:"data,omitempty"`
	ErrorType string   `json:"errorType,omitempty"`
	Error     string   `json:"error,omitempty"`
}

type apiData struct {
	ResultType string          `json:"resultType"`
	Result     []vectorElement `json:"result"`
}

// vectorElement is one sample of an instant vector: labels and [unix seconds, "value"].
type vectorElement struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// VectorJSON is the body of a successful instant query: one sample without labels at at
// with value v, or an empty vector when !ok.
func VectorJSON(at time.Time, v float64, ok bool) []byte {
	d := &apiData{ResultType: "vector", Result: []vectorElement{}}
	if ok {
		ts := json.Number(strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
		d.Result = append(d.Result, vectorElement{Metric: map[string]string{}, Value: [2]any{ts, formatFloat(v)}})
	}
	b, _ := json.Marshal(apiResponse{Status: "success", Data: d})
	return b
}

// ErrorJSON is the body of a refused query.
func ErrorJSON(errorType, msg string) []byte {
	b, _ := json.Marshal(apiResponse{Status: "error", ErrorType: errorType, Error: msg})
	return b
}

func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, ErrorJSON("bad_data", "method not allowed"))
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorJSON("bad_data", err.Error()))
		return
	}
	q := r.Form.Get("query")
	at, err := evalTime(r.Form.Get("time"), time.Now())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorJSON("bad_data", err.Error()))
		return
	}
	s.mu.Lock()
	f := s.queries[q]
	s.mu.Unlock()
	ans := Answer{At: at, Query: q}
	if f == nil {
		ans.Err = "promscrape evaluates registered queries only; not registered: " + q
		s.record(ans)
		writeJSON(w, http.StatusBadRequest, ErrorJSON("bad_data", ans.Err))
		return
	}
	ans.Value, ans.OK = f(s.store, at)
	s.record(ans)
	writeJSON(w, http.StatusOK, VectorJSON(at, ans.Value, ans.OK))
}

// writeJSON answers a body made by json.Marshal (which escapes <, > and &) as JSON that no
// browser sniffs as HTML.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body) //nolint:gosec // G705: JSON from json.Marshal, served as application/json with nosniff
}

func (s *Server) record(a Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) >= maxAnswers {
		s.answers = slices.Delete(s.answers, 0, len(s.answers)-maxAnswers+1)
	}
	s.answers = append(s.answers, a)
}

// evalTime is the query's time parameter (unix seconds, fractions allowed, or RFC 3339),
// never later than now (nothing is scraped from the future); empty is now.
func evalTime(param string, now time.Time) (time.Time, error) {
	if param == "" {
		return now, nil
	}
	var at time.Time
	if f, err := strconv.ParseFloat(param, 64); err == nil {
		sec, frac := math.Modf(f)
		at = time.Unix(int64(sec), int64(frac*1e9))
	} else if t, err := time.Parse(time.RFC3339Nano, param); err == nil {
		at = t
	} else {
		return time.Time{}, fmt.Errorf("cannot parse time %q", param)
	}
	if at.After(now) {
		at = now
	}
	return at, nil
}
