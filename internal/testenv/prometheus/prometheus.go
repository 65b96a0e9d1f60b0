// Package prometheus runs the real Prometheus (built by `make tools` from
// hack/tools/prometheus) for the tests and the local mode: it scrapes loopback targets with
// the labels Kubernetes service discovery would have given them, evaluates rule files, and
// answers PromQL with its own engine, so a query raygate documents is checked by the program
// users run it on.
package prometheus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/testenv/proc"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// Defaults of Options.
const (
	DefaultScrapeInterval     = time.Second
	DefaultEvaluationInterval = time.Second
	readyTimeout              = 60 * time.Second
	stopGracePeriod           = 10 * time.Second
)

// Target is one endpoint Prometheus scrapes.
type Target struct {
	// Job is the job label; targets of one job share its scrape settings.
	Job string
	// URL is the metrics URL, e.g. http://127.0.0.1:9100/metrics; its host must be a
	// loopback address (tests send traffic only to 127.0.0.0/8).
	URL string
	// Labels are added to every series of the target, as relabelling of a ServiceMonitor or
	// PodMonitor would (namespace, pod, service...).
	Labels map[string]string
	// HonorLabels keeps a scraped series' own labels where they clash with Labels (the
	// chart's ServiceMonitor sets honorLabels, so a RayService's series keep its
	// namespace); without it Prometheus renames them exported_<label>. Per job.
	HonorLabels bool
}

// Options configure a Prometheus.
type Options struct {
	Targets []Target
	// ScrapeInterval and EvaluationInterval default to one second: tests wait on rates.
	ScrapeInterval     time.Duration
	EvaluationInterval time.Duration
	// RuleFiles are recording/alerting rule files (Prometheus's format) it evaluates.
	RuleFiles []string
	// Dir holds its configuration and TSDB (default: a temporary directory removed by Stop).
	Dir string
	// Log receives its output (default: discarded).
	Log io.Writer
	// QueryLog makes it log every query it evaluates, for LoggedQueries: what a client
	// (raygate's metric gates) asked, for which time.
	QueryLog bool

	queryLogFile string // set by Start when QueryLog
}

// Prometheus is a running Prometheus server on 127.0.0.1.
type Prometheus struct {
	proc    *proc.Process
	opts    Options
	dir     string
	ownsDir bool
	// Port is its HTTP port on 127.0.0.1.
	Port   int
	api    promv1.API
	bin    string
	paused bool
}

// Start writes the configuration for opts, starts Prometheus and returns once /-/ready
// answers. Stop (or Kill) it when done.
func Start(ctx context.Context, opts Options) (*Prometheus, error) {
	bin, err := tools.Path("prometheus")
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	p := &Prometheus{opts: opts, dir: opts.Dir, bin: bin}
	if p.dir == "" {
		if p.dir, err = os.MkdirTemp("", "raygate-prometheus-"); err != nil {
			return nil, err
		}
		p.ownsDir = true
	}
	if opts.QueryLog {
		p.opts.queryLogFile = filepath.Join(p.dir, "queries.log")
	}
	cfg, err := Config(p.opts)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.configPath(), cfg, 0o600); err != nil {
		return nil, err
	}
	if p.Port, err = proc.FreePort(); err != nil {
		return nil, err
	}
	if err := p.launch(ctx); err != nil {
		return nil, err
	}
	c, err := promapi.NewClient(promapi.Config{Address: p.URL()})
	if err != nil {
		_ = p.Stop()
		return nil, err
	}
	p.api = promv1.NewAPI(c)
	return p, nil
}

// launch starts the process on p.Port and waits until it is ready.
func (p *Prometheus) launch(ctx context.Context) error {
	cmd := exec.Command(p.bin, Args(p.configPath(), filepath.Join(p.dir, "data"), p.Port)...)
	cmd.Stdout, cmd.Stderr = p.opts.Log, p.opts.Log
	var err error
	if p.proc, err = proc.Start("prometheus", cmd); err != nil {
		return err
	}
	if err := p.proc.WaitReady(ctx, p.URL()+"/-/ready", readyTimeout); err != nil {
		_ = p.Stop()
		return err
	}
	return nil
}

// Args are Prometheus's flags: its configuration, a TSDB under dataDir, the HTTP API on
// 127.0.0.1:port only, and /-/reload for SetTargets.
func Args(configFile, dataDir string, port int) []string {
	return []string{
		"--config.file=" + configFile,
		"--storage.tsdb.path=" + dataDir,
		"--storage.tsdb.retention.time=2h",
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(port),
		"--web.enable-lifecycle",
		"--log.level=warn",
	}
}

// URL is its base URL (what an UpgradePolicy's prometheus address or a Grafana data source
// would name).
func (p *Prometheus) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.Port) }

// API is the Prometheus HTTP API client for it.
func (p *Prometheus) API() promv1.API { return p.api }

// Query evaluates expr at the current time with Prometheus's engine.
func (p *Prometheus) Query(ctx context.Context, expr string) (model.Value, error) {
	v, _, err := p.api.Query(ctx, expr, time.Now())
	return v, err
}

// Vector evaluates expr and returns its instant vector (an error names any other type).
func (p *Prometheus) Vector(ctx context.Context, expr string) (model.Vector, error) {
	v, err := p.Query(ctx, expr)
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %q returned %s, not a vector", expr, v.Type())
	}
	return vec, nil
}

// SetTargets replaces the scrape targets and reloads the configuration.
func (p *Prometheus) SetTargets(ctx context.Context, targets []Target) error {
	opts := p.opts
	opts.Targets = targets
	cfg, err := Config(opts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.configPath(), cfg, 0o600); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("reloading prometheus: %s: %s", resp.Status, body)
	}
	p.opts = opts
	return nil
}

// Stop stops it (SIGTERM, then SIGKILL) and removes a temporary directory.
func (p *Prometheus) Stop() error {
	if p == nil {
		return nil
	}
	if p.paused { // a stopped process would not see the SIGTERM
		_ = p.Resume()
	}
	err := p.proc.Stop(stopGracePeriod)
	if p.ownsDir {
		err = errors.Join(err, os.RemoveAll(p.dir))
	}
	return err
}

// Kill SIGKILLs it (a crashed Prometheus for the fault specs); Restart brings it back, and
// Stop still cleans up.
func (p *Prometheus) Kill() error {
	p.paused = false
	return p.proc.Kill()
}

// Restart starts it again after Kill, on the same port with the same configuration and
// TSDB (what survived the crash), as a restarted Prometheus pod behind its Service: clients
// configured with URL reach it again.
func (p *Prometheus) Restart(ctx context.Context) error { return p.launch(ctx) }

// Pause stalls it with SIGSTOP: the kernel still accepts connections on its port, but no
// request is answered, as with a Prometheus hung by overload; Resume continues it.
func (p *Prometheus) Pause() error {
	if err := p.proc.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.paused = true
	return waitStopped(p.proc.Pid(), 5*time.Second)
}

// waitStopped waits until every thread of the process is stopped: the kernel stops a busy
// multi-threaded process thread by thread, and a query sent meanwhile could be answered.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := allThreadsStopped(pid)
		if err != nil || stopped {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus (pid %d) not stopped within %s of SIGSTOP", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// allThreadsStopped reads the state of each thread in /proc (T: stopped by a signal).
func allThreadsStopped(pid int) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err != nil {
			return false, err
		}
		// The state follows the command name, which is in parentheses and may hold spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
			return false, nil
		}
	}
	return true, nil
}

// Resume continues it after Pause.
func (p *Prometheus) Resume() error {
	if err := p.proc.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	p.paused = false
	return nil
}

// LoggedQuery is one query it evaluated (Options.QueryLog).
type LoggedQuery struct {
	Query string
	// At is the evaluation time (an instant query's time, a range query's start).
	At time.Time
	// Err is the evaluation's error, if any.
	Err string
}

// LoggedQueries are the queries it evaluated so far, in order (Options.QueryLog).
func (p *Prometheus) LoggedQueries() ([]LoggedQuery, error) {
	if p.opts.queryLogFile == "" {
		return nil, errors.New("prometheus: started without QueryLog")
	}
	f, err := os.Open(p.opts.queryLogFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // nothing asked yet
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return ParseQueryLog(f)
}

// ParseQueryLog reads Prometheus's query log (one JSON object a line). A last line cut short
// by a write in progress is skipped.
func ParseQueryLog(r io.Reader) ([]LoggedQuery, error) {
	var out []LoggedQuery
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var line struct {
			Params struct {
				Query string `json:"query"`
				Start string `json:"start"`
			} `json:"params"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, line.Params.Start)
		if err != nil {
			return nil, fmt.Errorf("query log: time %q: %w", line.Params.Start, err)
		}
		out = append(out, LoggedQuery{Query: line.Params.Query, At: at, Err: line.Error})
	}
	return out, sc.Err()
}

func (p *Prometheus) configPath() string { return filepath.Join(p.dir, "prometheus.yml") }

// Config is the configuration file for opts: one scrape job per Target.Job, each target
// with its labels.
func Config(opts Options) ([]byte, error) {
	scrape := opts.ScrapeInterval
	if scrape <= 0 {
		scrape = DefaultScrapeInterval
	}
	eval := opts.EvaluationInterval
	if eval <= 0 {
		eval = DefaultEvaluationInterval
	}
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		HonorLabels   bool           `json:"honor_labels,omitempty"`
		MetricsPath   string         `json:"metrics_path"`
		Scheme        string         `json:"scheme"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	jobs := map[string]*scrapeConfig{}
	var order []string
	for i, t := range opts.Targets {
		if t.Job == "" {
			return nil, fmt.Errorf("target %d (%s): Job is required", i, t.URL)
		}
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, fmt.Errorf("target %d: %w", i, err)
		}
		if err := loopback(u); err != nil {
			return nil, fmt.Errorf("target %d: %w", i, err)
		}
		path := u.EscapedPath()
		if path == "" {
			path = "/metrics"
		}
		j, ok := jobs[t.Job]
		if !ok {
			j = &scrapeConfig{JobName: t.Job, MetricsPath: path, Scheme: u.Scheme, HonorLabels: t.HonorLabels}
			jobs[t.Job] = j
			order = append(order, t.Job)
		} else if j.MetricsPath != path || j.Scheme != u.Scheme {
			return nil, fmt.Errorf("target %d: job %q has targets at %s://…%s and %s", i, t.Job, j.Scheme, j.MetricsPath, t.URL)
		} else if j.HonorLabels != t.HonorLabels {
			return nil, fmt.Errorf("target %d: job %q has targets with and without HonorLabels", i, t.Job)
		}
		j.StaticConfigs = append(j.StaticConfigs, staticConfig{Targets: []string{u.Host}, Labels: t.Labels})
	}
	global := map[string]string{
		"scrape_interval":     model.Duration(scrape).String(),
		"scrape_timeout":      model.Duration(scrape).String(),
		"evaluation_interval": model.Duration(eval).String(),
	}
	if opts.queryLogFile != "" {
		global["query_log_file"] = opts.queryLogFile
	}
	cfg := map[string]any{"global": global}
	if len(opts.RuleFiles) > 0 {
		cfg["rule_files"] = slices.Clone(opts.RuleFiles)
	}
	scrapes := make([]*scrapeConfig, 0, len(order))
	for _, name := range order {
		scrapes = append(scrapes, jobs[name])
	}
	cfg["scrape_configs"] = scrapes
	return yaml.Marshal(cfg)
}

func loopback(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: scheme must be http or https", u)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return fmt.Errorf("%s: the host must be an IPv4 loopback address (tests reach only 127.0.0.0/8)", u)
	}
	if u.Port() == "" {
		return fmt.Errorf("%s: a port is required", u)
	}
	return nil
}
