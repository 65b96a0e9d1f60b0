package docgen

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/controllers/rayjob"
	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/internal/app"
	_ "github.com/raygate/raygate/internal/eventrecorder" // registers its metric on the manager's registry at init
)

// metric is one metric family as the registry describes it.
type metric struct {
	name, typ, help string
	labels          []string
	when            string
}

// recorder is a prometheus.Registerer that keeps what is registered on it.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// registrations are the manager's (app.MetricRegistrations), of metrics fresh from their
// constructors; metrics registered at init (internal/eventrecorder) are read from
// controller-runtime's registry. metricsPage fails when a metric declared in the source is in
// neither.
func registrations() []app.MetricRegistration {
	// The RayCluster collector makes its series from a cache at each scrape: one holding a
	// provisioned cluster shows every metric it has.
	cluster := raycluster.NewMetrics()
	cluster.Bind(oneCluster{})
	return app.MetricRegistrations(app.ControllerMetrics{Cluster: cluster, Service: rayservice.NewMetrics(), Job: rayjob.NewMetrics()})
}

func metricsPage(root string) (File, error) {
	var all []metric
	seen := map[string]bool{}
	for _, r := range registrations() {
		rec := &recorder{}
		if err := r.Register(rec); err != nil {
			return File{}, err
		}
		when := "always"
		if r.ObjectMetrics {
			when = "`--object-metrics`"
		}
		for _, c := range rec.collectors {
			ms, err := describe(c)
			if err != nil {
				return File{}, err
			}
			for _, m := range ms {
				m.when = when
				all = append(all, m)
				seen[m.name] = true
			}
		}
	}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return File{}, err
	}
	for _, f := range families {
		if seen[f.GetName()] || !ownMetric(f.GetName()) {
			continue
		}
		m := metric{name: f.GetName(), typ: strings.ToLower(f.GetType().String()), help: f.GetHelp(), when: "always"}
		if len(f.Metric) > 0 {
			for _, l := range f.Metric[0].Label {
				m.labels = append(m.labels, l.GetName())
			}
		}
		all = append(all, m)
		seen[m.name] = true
	}
	declared, err := declaredMetrics(root)
	if err != nil {
		return File{}, err
	}
	for _, d := range declared {
		if !seen[d] {
			return File{}, fmt.Errorf("metric %s is declared in the source but not registered by app.MetricRegistrations: add its registration there", d)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	var rows [][]string
	for _, m := range all {
		rows = append(rows, []string{code(m.name), m.typ, codes(m.labels), m.when, cell(m.help)})
	}
	p := newPage("Metrics", "the collectors the manager registers (controllers/, webhooks/, internal/)")
	p.para("raygate's own metrics, served on the manager's metrics endpoint (`--metrics-bind-address`) next to " +
		"controller-runtime's (`controller_runtime_*`, `workqueue_*`, `rest_client_*`, ...). The `kuberay_*` names, help " +
		"texts and labels are KubeRay's, so dashboards and alerts written for KubeRay keep working. " +
		"*Served* says whether `--object-metrics=false` turns a metric off.")
	p.table([]string{"metric", "type", "labels", "served", "help"}, rows)
	return File{Path: "docs/reference/metrics.md", Content: p.String()}, nil
}

func ownMetric(name string) bool {
	return strings.HasPrefix(name, "raygate_") || strings.HasPrefix(name, "kuberay_")
}

// describe lists a collector's metric families. Vectors hold no series yet, so their type is
// their Go type's; other collectors are collected once (their metrics say their type).
func describe(c prometheus.Collector) ([]metric, error) {
	descs := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(descs); close(descs) }()
	var out []metric
	byDesc := map[*prometheus.Desc]int{}
	for d := range descs {
		m, err := parseDesc(d)
		if err != nil {
			return nil, err
		}
		byDesc[d] = len(out)
		out = append(out, m)
	}
	vecType := ""
	switch c.(type) {
	case *prometheus.GaugeVec:
		vecType = "gauge"
	case *prometheus.CounterVec:
		vecType = "counter"
	case *prometheus.HistogramVec:
		vecType = "histogram"
	case *prometheus.SummaryVec:
		vecType = "summary"
	}
	if vecType != "" {
		for i := range out {
			out[i].typ = vecType
		}
		return out, nil
	}
	ms := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ms); close(ms) }()
	for m := range ms {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			return nil, err
		}
		i, ok := byDesc[m.Desc()]
		if !ok {
			continue
		}
		switch {
		case pb.Gauge != nil:
			out[i].typ = "gauge"
		case pb.Counter != nil:
			out[i].typ = "counter"
		case pb.Histogram != nil:
			out[i].typ = "histogram"
		case pb.Summary != nil:
			out[i].typ = "summary"
		default:
			out[i].typ = "untyped"
		}
	}
	for _, m := range out {
		if m.typ == "" {
			return nil, fmt.Errorf("metric %s: no sample to tell its type", m.name)
		}
	}
	return out, nil
}

// descPattern reads prometheus.Desc's String(), the only way to its name and labels.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

func parseDesc(d *prometheus.Desc) (metric, error) {
	m := descPattern.FindStringSubmatch(d.String())
	if m == nil {
		return metric{}, fmt.Errorf("cannot read metric description %s", d)
	}
	name, err1 := strconv.Unquote(m[1])
	help, err2 := strconv.Unquote(m[2])
	if err1 != nil || err2 != nil {
		return metric{}, fmt.Errorf("cannot read metric description %s", d)
	}
	var labels []string
	if m[3] != "" {
		for _, l := range strings.Split(m[3], ",") {
			labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
		}
	}
	return metric{name: name, help: help, labels: labels}, nil
}

// oneCluster is a cache holding one provisioned RayCluster, so the RayCluster collector
// (which makes its series from the cache at each scrape) shows every metric it has.
type oneCluster struct{}

func (oneCluster) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("not supported")
}

func (oneCluster) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*rayv1.RayClusterList)
	if !ok {
		return fmt.Errorf("unexpected list %T", list)
	}
	created := metav1.Unix(0, 0)
	l.Items = []rayv1.RayCluster{{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", UID: "u", CreationTimestamp: created},
		Status: rayv1.RayClusterStatus{Conditions: []metav1.Condition{{
			Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionTrue, LastTransitionTime: metav1.Unix(1, 0),
		}}},
	}}
	return nil
}

// declaredMetrics are the metric names the operator's source declares: the Name of every
// prometheus.*Opts literal and the first argument of every prometheus.NewDesc, outside tests
// and the harness.
func declaredMetrics(root string) ([]string, error) {
	var names []string
	dirs := map[string]bool{}
	for _, top := range []string{"controllers", "internal", "webhooks"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			switch rel = filepath.ToSlash(rel); {
			case rel == "internal/testenv" || rel == "internal/localmode" || rel == "internal/docgen" || d.Name() == "testdata":
				return filepath.SkipDir
			}
			dirs[rel] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for dir := range dirs {
		_, files, err := parseDir(root, dir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					sel, ok := n.Type.(*ast.SelectorExpr)
					if !ok || !isPkg(sel.X, "prometheus") || !strings.HasSuffix(sel.Sel.Name, "Opts") {
						return true
					}
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
							if s, ok := stringLit(kv.Value); ok {
								names = append(names, s)
							}
						}
					}
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if ok && isPkg(sel.X, "prometheus") && sel.Sel.Name == "NewDesc" && len(n.Args) > 0 {
						if s, ok := stringLit(n.Args[0]); ok {
							names = append(names, s)
						}
					}
				}
				return true
			})
		}
	}
	sort.Strings(names)
	return names, nil
}

func isPkg(e ast.Expr, name string) bool { return isIdent(e, name) }

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
