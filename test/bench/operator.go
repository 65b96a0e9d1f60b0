package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/raygate/raygate/internal/testenv/cmdbuild"
	"github.com/raygate/raygate/internal/testenv/kuberay"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// buildOperator builds cmd/raygate into dir, as a user would run it.
func buildOperator(dir string) (string, error) {
	bin := filepath.Join(dir, "raygate")
	return bin, cmdbuild.Build(context.Background(), "raygate", bin, os.Stderr)
}

// operatorOptions are the flags of one operator run.
type operatorOptions struct {
	// KubeRay runs KubeRay's operator (hack/tools.sh path kuberay) instead of raygate, as the
	// same audited user, with its defaults.
	KubeRay     bool
	Concurrency int
	Webhooks    bool
	ExtraArgs   []string
	Env         []string // "K=V"
	// Process names the process and its log (default "raygate" or "kuberay"), so a restarted
	// or second replica keeps its own log.
	Process string
}

func (o operatorOptions) processName(def string) string {
	if o.Process != "" {
		return o.Process
	}
	return def
}

// operator is raygate running as its own process, as its own user.
type operator struct {
	proc        *kwokcluster.Process
	metricsAddr string
	pprofAddr   string
	// RBAC says how the user is authorised: the generated ClusterRole, or system:masters
	// when config/rbac/role.yaml does not exist yet.
	RBAC string
	anon *anonSampler
}

// startOperator provisions the operator's user (RBAC from config/rbac/role.yaml), starts
// the binary and waits for /readyz.
func (b *bench) startOperator(ctx context.Context, c *kwokcluster.Cluster, o operatorOptions) (*operator, error) {
	if o.KubeRay {
		return b.startKubeRay(ctx, c, o)
	}
	bin := b.operatorBin
	o.Env = append(o.Env, b.operatorEnv...)
	rbac, groups, err := operatorRBAC(ctx, c)
	if err != nil {
		return nil, err
	}
	kubeconfig, _, err := c.AddUser(operatorUser, groups...)
	if err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(3)
	if err != nil {
		return nil, err
	}
	probe := addrs[0]
	op := &operator{metricsAddr: addrs[1], pprofAddr: addrs[2], RBAC: rbac}
	args := []string{
		"--leader-elect=false",
		"--metrics-bind-address=" + op.metricsAddr,
		"--metrics-secure=false",
		"--health-probe-bind-address=" + probe,
		"--pprof-bind-address=" + op.pprofAddr,
		"--enable-webhooks=" + strconv.FormatBool(o.Webhooks),
		"--reconcile-concurrency=" + strconv.Itoa(o.Concurrency),
		"--log-format=json",
	}
	args = append(args, o.ExtraArgs...)
	op.proc, err = c.Run(o.processName("raygate"), append([]string{"KUBECONFIG=" + kubeconfig}, o.Env...), bin, args...)
	if err != nil {
		return nil, err
	}
	op.anon = sampleAnon(op.proc.PID())
	return op, waitOperatorReady(ctx, c, op, probe)
}

// waitOperatorReady waits up to 60 s for the operator's /readyz at probe.
func waitOperatorReady(ctx context.Context, c *kwokcluster.Cluster, op *operator, probe string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := c.Healthy(); err != nil {
			return err
		}
		resp, err := http.Get("http://" + probe + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("operator not ready after 60s; log %s:\n%s", op.proc.LogPath(), op.proc.LogTail(3000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startKubeRay starts KubeRay's operator (default flags, leader election off) as the
// audited operator user. KubeRay's chart RBAC is not in this repository, so the user is in
// system:masters; KubeRay's own RayJob CRD replaces raygate's first (kuberay.InstallCRDs),
// as in a KubeRay install. o.ExtraArgs and o.Env are added (feature gates, HTTP_PROXY).
func (b *bench) startKubeRay(ctx context.Context, c *kwokcluster.Cluster, o operatorOptions) (*operator, error) {
	bin, err := tools.Path("kuberay")
	if err != nil {
		return nil, err
	}
	if err := kuberay.InstallCRDs(c.Env); err != nil {
		return nil, err
	}
	kubeconfig, _, err := c.AddUser(operatorUser, "system:masters")
	if err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	probe := addrs[0]
	op := &operator{metricsAddr: addrs[1], RBAC: "system:masters (KubeRay)"}
	env := append(append([]string{"KUBECONFIG=" + kubeconfig}, b.operatorEnv...), o.Env...)
	args := append([]string{
		"--enable-leader-election=false",
		"--metrics-addr=" + op.metricsAddr,
		"--health-probe-bind-address=" + probe,
		"--log-stdout-encoder=json",
	}, o.ExtraArgs...)
	op.proc, err = c.Run(o.processName("kuberay"), env, bin, args...)
	if err != nil {
		return nil, err
	}
	op.anon = sampleAnon(op.proc.PID())
	return op, waitOperatorReady(ctx, c, op, probe)
}

// operatorRBAC applies the generated ClusterRole(s) and binds them to the operator's user,
// so the benchmark also proves the generated RBAC suffices. Without a generated role the
// user gets system:masters and the result says so.
func operatorRBAC(ctx context.Context, c *kwokcluster.Cluster) (string, []string, error) {
	path := filepath.Join(tools.RepoRoot(), "config", "rbac", "role.yaml")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "system:masters (config/rbac/role.yaml not generated yet)", []string{"system:masters"}, nil
	}
	if err != nil {
		return "", nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var names []string
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", nil, fmt.Errorf("%s: %w", path, err)
		}
		if role.Kind != "ClusterRole" {
			continue
		}
		role.ResourceVersion = ""
		// Already there when the operator is restarted with other flags.
		if err := c.Client.Create(ctx, &role); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", nil, err
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "bench-" + role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operatorUser}},
		}
		if err := c.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", nil, err
		}
		names = append(names, role.Name)
	}
	if len(names) == 0 {
		return "system:masters (no ClusterRole in config/rbac/role.yaml)", []string{"system:masters"}, nil
	}
	return "ClusterRole " + strings.Join(names, ", ") + " (config/rbac/role.yaml)", nil, nil
}

// processUsage is what the kernel accounted to the operator process.
type processUsage struct {
	PeakRSSMB  float64 `json:"peakRSSMB"`  // VmHWM
	CPUSeconds float64 `json:"cpuSeconds"` // utime + stime
	// PeakAnonMB is the largest RssAnon sampled (anonSampler); 0 in results from before it.
	PeakAnonMB float64 `json:"peakAnonMB,omitempty"`
}

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat; 100 on every Linux
// architecture Go supports.
const clockTicks = 100

func (o *operator) usage() (processUsage, error) {
	pid := o.proc.PID()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return processUsage{}, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return processUsage{}, err
	}
	u, err := parseUsage(string(status), string(stat))
	if err == nil && o.anon != nil {
		u.PeakAnonMB = o.anon.peakMB()
	}
	return u, err
}

// parseUsage reads VmHWM from /proc/<pid>/status and utime+stime from /proc/<pid>/stat.
func parseUsage(status, stat string) (processUsage, error) {
	var u processUsage
	found := false
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				return u, fmt.Errorf("unexpected VmHWM line %q", line)
			}
			kb, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return u, err
			}
			u.PeakRSSMB = kb / 1024
			found = true
		}
	}
	if !found {
		return u, errors.New("no VmHWM in /proc/<pid>/status")
	}
	// The command name (field 2) is in parentheses and may hold spaces; count from the
	// last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return u, errors.New("malformed /proc/<pid>/stat")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return u, errors.New("short /proc/<pid>/stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, err
	}
	u.CPUSeconds = (utime + stime) / clockTicks
	return u, nil
}

// currentRSS is the operator's resident memory now (VmRSS), in MB.
func (o *operator) currentRSS() (float64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.proc.PID()))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseFloat(f[0], 64)
				return kb / 1024, err
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

func (o *operator) metrics() (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + o.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// reconciles scrapes controller-runtime's reconcile counters from the operator's metrics
// endpoint: controller → result → count.
func (o *operator) reconciles() (map[string]map[string]float64, error) {
	families, err := o.metrics()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	if mf, ok := families["controller_runtime_reconcile_total"]; ok {
		for _, m := range mf.GetMetric() {
			var ctrl, result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "controller":
					ctrl = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			if out[ctrl] == nil {
				out[ctrl] = map[string]float64{}
			}
			out[ctrl][result] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// cpuProfile saves a CPU profile of the operator covering the next d.
func (o *operator) cpuProfile(ctx context.Context, d time.Duration, path string) error {
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	return o.savePprof(ctx, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), path)
}

// heapProfile saves the operator's heap profile (in-use and allocated) now.
func (o *operator) heapProfile(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return o.savePprof(ctx, "heap", path)
}

// savePprof downloads /debug/pprof/<profile> from the operator into path.
func (o *operator) savePprof(ctx context.Context, profile, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.pprofAddr+"/debug/pprof/"+profile, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof %s: %s", profile, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// freeAddrs returns n free loopback addresses.
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, n)
	for i := range addrs {
		var err error
		if addrs[i], err = freeAddr(); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// handlerLatency is the webhook server's own view of one webhook: controller-runtime's
// controller_runtime_webhook_latency_seconds histogram (decade buckets, so the p99 is an
// upper bound), from the request arriving to the response written — no network, no API server.
type handlerLatency struct {
	Count  float64 `json:"count"`
	MeanMs float64 `json:"meanMs"`
	// P99AtMostMs is the smallest bucket bound at or above the 99th percentile.
	P99AtMostMs float64 `json:"p99AtMostMs"`
}

func (o *operator) webhookLatency() (map[string]handlerLatency, error) {
	families, err := o.metrics()
	if err != nil {
		return nil, err
	}
	return webhookLatencyFrom(families), nil
}

func webhookLatencyFrom(families map[string]*dto.MetricFamily) map[string]handlerLatency {
	out := map[string]handlerLatency{}
	mf, ok := families["controller_runtime_webhook_latency_seconds"]
	if !ok {
		return out
	}
	for _, m := range mf.GetMetric() {
		var path string
		for _, l := range m.GetLabel() {
			if l.GetName() == "webhook" {
				path = l.GetValue()
			}
		}
		h := m.GetHistogram()
		if h.GetSampleCount() == 0 {
			continue
		}
		l := handlerLatency{Count: float64(h.GetSampleCount()), MeanMs: 1000 * h.GetSampleSum() / float64(h.GetSampleCount())}
		for _, b := range h.GetBucket() { // cumulative, ascending
			if float64(b.GetCumulativeCount()) >= 0.99*float64(h.GetSampleCount()) {
				l.P99AtMostMs = 1000 * b.GetUpperBound()
				break
			}
		}
		out[path] = l
	}
	return out
}

// forbidden returns the first authorisation error in the operator's log: the generated
// RBAC lacks a rule, and the operator will wait forever for a cache that cannot sync.
func (o *operator) forbidden() error {
	b, err := os.ReadFile(o.proc.LogPath())
	if err != nil {
		return nil
	}
	return forbiddenIn(b)
}

func forbiddenIn(log []byte) error {
	i := bytes.Index(log, []byte(`is forbidden: User \"`+operatorUser+`\"`))
	if i < 0 {
		return nil
	}
	start := bytes.LastIndexByte(log[:i], '\n') + 1
	end := bytes.IndexByte(log[i:], '\n')
	if end < 0 {
		end = len(log) - i
	}
	line := string(log[start : i+end])
	var entry struct{ Error string }
	if json.Unmarshal([]byte(line), &entry) == nil && entry.Error != "" {
		line = entry.Error
	}
	return fmt.Errorf("the generated RBAC (config/rbac/role.yaml) does not allow what the operator does: %s", line)
}
