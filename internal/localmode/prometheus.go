package localmode

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/prometheus"
)

// Prometheus in the local mode: the real one (internal/testenv/prometheus) on 127.0.0.1,
// scraping raygate's metrics, Traefik's and every Ray pod's metrics port with the labels the
// chart's PodMonitor gives them, and answering raygate's UpgradePolicy gates
// (--prometheus-url). Its URL is kept in the state directory, so make demo attached to make
// run finds it.
const (
	prometheusURLFile = "prometheus-url"
	prometheusDir     = "prometheus"
	// Jobs of the scrape configuration.
	JobRaygate = "raygate"
	JobTraefik = "traefik"
	JobRay     = "ray"
	// rayTargetsEvery is how often the Ray pods are listed to follow them.
	rayTargetsEvery = time.Second
)

// PrometheusURLPath is the file holding the URL of the Prometheus of the environment
// running in dir.
func PrometheusURLPath(dir string) string { return filepath.Join(dir, prometheusURLFile) }

// PrometheusURL is the URL of the Prometheus of the environment running in dir ("": none).
func (s *Session) PrometheusURL() string {
	b, err := os.ReadFile(PrometheusURLPath(s.Dir))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// RayTargets are the scrape targets of the Ray pods as the chart's PodMonitor selects them:
// every pod labelled ray.io/is-ray-node=yes, Running with an IP, on the port named "metrics"
// of its first container that has one, with the namespace, pod and container labels the
// Prometheus Operator adds and the PodMonitor's ray_io_cluster and ray_io_node_type. Pods
// off loopback are left out (the local mode sends traffic to 127.0.0.0/8 only). Sorted by
// namespace and pod, so an unchanged set of pods gives the same list.
func RayTargets(pods []corev1.Pod) []prometheus.Target {
	var out []prometheus.Target
	for i := range pods {
		p := &pods[i]
		if p.Labels[rayv1.IsRayNodeLabelKey] != "yes" || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !ip.Is4() || !ip.IsLoopback() {
			continue
		}
		container, port := metricsPort(p)
		if port == 0 {
			continue
		}
		out = append(out, prometheus.Target{
			Job: JobRay,
			URL: "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(int(port))) + "/metrics",
			Labels: map[string]string{
				"namespace": p.Namespace, "pod": p.Name, "container": container,
				"ray_io_cluster": p.Labels[rayv1.ClusterLabelKey], "ray_io_node_type": p.Labels[rayv1.NodeTypeLabelKey],
			},
		})
	}
	slices.SortFunc(out, func(a, b prometheus.Target) int {
		return strings.Compare(a.Labels["namespace"]+"/"+a.Labels["pod"], b.Labels["namespace"]+"/"+b.Labels["pod"])
	})
	return out
}

// metricsPort is the first container with a port named "metrics" and that port (0: none).
func metricsPort(p *corev1.Pod) (string, int32) {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == rayspec.MetricsPortName {
				return c.Name, port.ContainerPort
			}
		}
	}
	return "", 0
}

// localPrometheus is the environment's Prometheus and what it scrapes besides the Ray pods.
type localPrometheus struct {
	*prometheus.Prometheus
	fixed  []prometheus.Target // raygate and Traefik
	cancel context.CancelFunc
	done   chan struct{}
}

// startPrometheus starts Prometheus scraping raygate's metrics at raygateMetrics, with its
// TSDB under dir and its log in logs, and records its URL in dir.
func startPrometheus(ctx context.Context, dir, logs, raygateMetrics string) (*localPrometheus, error) {
	f, err := os.Create(filepath.Join(logs, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	// The process holds its own copy of the descriptor.
	defer func() { _ = f.Close() }()
	data := filepath.Join(dir, prometheusDir)
	_ = os.RemoveAll(data) // one run's series per directory
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	fixed := []prometheus.Target{{Job: JobRaygate, URL: raygateMetrics}}
	p, err := prometheus.Start(ctx, prometheus.Options{Targets: fixed, Dir: data, Log: f})
	if err != nil {
		return nil, fmt.Errorf("starting Prometheus (log: %s): %w", f.Name(), err)
	}
	if err := os.WriteFile(PrometheusURLPath(dir), []byte(p.URL()+"\n"), 0o600); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return &localPrometheus{Prometheus: p, fixed: fixed}, nil
}

// addFixed adds a target that is not a Ray pod (Traefik's metrics).
func (p *localPrometheus) addFixed(ctx context.Context, t prometheus.Target) error {
	p.fixed = append(p.fixed, t)
	return p.SetTargets(ctx, p.fixed)
}

// followRayPods keeps the Ray pods' targets up to date, as a PodMonitor would, until stop.
func (p *localPrometheus) followRayPods(c client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	log := ctrl.Log.WithName("prometheus-targets")
	fixed := slices.Clone(p.fixed)
	go func() {
		defer close(p.done)
		var last []prometheus.Target
		t := time.NewTicker(rayTargetsEvery)
		defer t.Stop()
		for {
			last = p.syncRayTargets(ctx, c, fixed, last, log)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// syncRayTargets lists the Ray pods and reloads Prometheus when their targets changed; it
// returns the targets now configured.
func (p *localPrometheus) syncRayTargets(ctx context.Context, c client.Client, fixed, last []prometheus.Target, log logr.Logger) []prometheus.Target {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingLabels{rayv1.IsRayNodeLabelKey: "yes"}); err != nil {
		if ctx.Err() == nil {
			log.Info("cannot list the Ray pods", "err", err.Error())
		}
		return last
	}
	want := RayTargets(pods.Items)
	if sameTargets(want, last) {
		return last
	}
	if err := p.SetTargets(ctx, append(slices.Clone(fixed), want...)); err != nil {
		if ctx.Err() == nil {
			log.Info("cannot reload Prometheus's targets", "err", err.Error())
		}
		return last
	}
	return want
}

func sameTargets(a, b []prometheus.Target) bool {
	return slices.EqualFunc(a, b, func(x, y prometheus.Target) bool {
		return x.Job == y.Job && x.URL == y.URL && fmt.Sprint(x.Labels) == fmt.Sprint(y.Labels)
	})
}

// stop stops following the pods and stops Prometheus; the URL file goes too.
func (p *localPrometheus) stop(dir string) error {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
	_ = os.Remove(PrometheusURLPath(dir))
	return p.Stop()
}
