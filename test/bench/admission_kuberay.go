package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/test/builders"
)

// KubeRay's admission, measured like raygate's. KubeRay v1.5.1 with ENABLE_WEBHOOKS=true
// registers one validating webhook, for RayCluster (its main.go; v1.7.0 adds RayJob and
// RayService). Its webhook server is controller-runtime's default: port 9443 on every
// interface, the serving certificate read from $TMPDIR/k8s-webhook-server/serving-certs.
const (
	kubeRayWebhookPort        = 9443
	kubeRayValidateRayCluster = "/validate-ray-io-v1-raycluster"
	kubeRayWebhookConfig      = "kuberay-validating-webhook-configuration"
)

// admissionCase is the latency the webhooks add to one kind and operation, at one client
// and at admissionConcurrency.
type admissionCase struct {
	Kind       string           `json:"kind"`      // RayCluster, RayService
	Operation  string           `json:"operation"` // create, update
	Sequential admissionLatency `json:"sequential"`
	Concurrent admissionLatency `json:"concurrent"`
}

// operatorAdmission is one operator's cases, on a cluster of its own.
type operatorAdmission struct {
	Operator string          `json:"operator"`
	Webhooks string          `json:"webhooks"` // what its webhooks check
	Cases    []admissionCase `json:"cases"`
	Error    string          `json:"error,omitempty"`
}

// operatorsAdmission compares raygate's webhooks with KubeRay's on the same harness.
type operatorsAdmission struct {
	Raygate operatorAdmission `json:"raygate"`
	KubeRay operatorAdmission `json:"kuberay"`
}

// admissionOperators measures raygate's and then KubeRay's webhooks, n requests per setting
// at admissionConcurrency clients and up to sequentialRequests at one client.
func (b *bench) admissionOperators(ctx context.Context, n int) *operatorsAdmission {
	seq := min(n, sequentialRequests)
	b.logf("admission: raygate and KubeRay, RayCluster and RayService creates and updates, %d requests per setting at %d clients, %d at one", n, admissionConcurrency, seq)
	res := &operatorsAdmission{
		Raygate: b.raygateAdmission(ctx, n, seq),
		KubeRay: b.kubeRayAdmission(ctx, n, seq),
	}
	for _, o := range []operatorAdmission{res.Raygate, res.KubeRay} {
		for _, c := range o.Cases {
			b.logf("admission: %s %s %s: added p50 %.2f ms / p99 %.2f ms at 1 client, p50 %.2f / p99 %.2f ms at %d",
				o.Operator, c.Kind, c.Operation, c.Sequential.AddedP50Ms, c.Sequential.AddedP99Ms, c.Concurrent.AddedP50Ms, c.Concurrent.AddedP99Ms, admissionConcurrency)
		}
		if o.Error != "" {
			b.logf("admission: %s: %s", o.Operator, o.Error)
		}
	}
	return res
}

func (b *bench) raygateAdmission(ctx context.Context, n, seq int) (res operatorAdmission) {
	res = operatorAdmission{Operator: "raygate", Webhooks: "mutating and validating, RayCluster and RayService (Pod Security and quota checks included)"}
	// envtest picks the webhook port when the cluster starts; on a busy machine another
	// process can take it before the operator binds it. A new cluster gets a new port.
	for attempt := 1; ; attempt++ {
		var retry bool
		res.Cases, retry, res.Error = b.raygateAdmissionOnce(ctx, n, seq)
		if !retry || attempt == 2 {
			return res
		}
		b.logf("admission: raygate: the webhook port was taken (%s); again on a new cluster", firstLine(res.Error))
	}
}

func (b *bench) raygateAdmissionOnce(ctx context.Context, n, seq int) (cases []admissionCase, retry bool, runErr string) {
	c, err := b.startCluster(ctx, 1, "admission-raygate", func(o *kwokcluster.Options) { o.Webhooks, o.GatewayAPI = true, true })
	if err != nil {
		return nil, false, err.Error()
	}
	defer b.stopCluster(c, &runErr)
	host, port, certDir := c.WebhookServing()
	if _, err := b.startOperator(ctx, c, operatorOptions{Concurrency: 4, Webhooks: true, ExtraArgs: []string{
		"--webhook-host=" + host, "--webhook-port=" + strconv.Itoa(port), "--webhook-cert-dir=" + certDir,
	}}); err != nil {
		return nil, strings.Contains(err.Error(), "address already in use"), err.Error()
	}
	cases, err = measureAdmissionCases(ctx, c, n, seq, []string{rayv1.RayClusterKind, rayv1.RayServiceKind}, func(cl client.Client) (*webhookToggle, error) {
		return newWebhookToggle(ctx, cl)
	})
	if err != nil {
		return cases, false, err.Error()
	}
	return cases, false, ""
}

func (b *bench) kubeRayAdmission(ctx context.Context, n, seq int) (res operatorAdmission) {
	res = operatorAdmission{Operator: "KubeRay v1.5.1", Webhooks: "validating, RayCluster only (v1.5.1 registers no RayService webhook)"}
	// envtest makes the serving certificate (for 127.0.0.1) and installs raygate's webhook
	// configurations, which are removed: only KubeRay's answers here.
	c, err := b.startCluster(ctx, 1, "admission-kuberay", func(o *kwokcluster.Options) { o.Webhooks, o.GatewayAPI = true, true })
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer b.stopCluster(c, &res.Error)
	if err := b.startKubeRayWebhook(ctx, c); err != nil {
		res.Error = err.Error()
		return res
	}
	res.Cases, err = measureAdmissionCases(ctx, c, n, seq, []string{rayv1.RayClusterKind}, func(cl client.Client) (*webhookToggle, error) {
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := cl.Get(ctx, client.ObjectKey{Name: kubeRayWebhookConfig}, &vwc); err != nil {
			return nil, err
		}
		t := &webhookToggle{cl: cl, enabled: true, validating: []admissionregistrationv1.ValidatingWebhookConfiguration{vwc}, probe: kubeRayProbe(cl)}
		return t, t.await(ctx, true)
	})
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

// startKubeRayWebhook replaces raygate's webhook configurations with KubeRay's and starts
// KubeRay's operator with its webhook on, serving envtest's certificate.
func (b *bench) startKubeRayWebhook(ctx context.Context, c *kwokcluster.Cluster) error {
	// KubeRay's port is fixed: say so plainly when another process holds it.
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(kubeRayWebhookPort)))
	if err != nil {
		return fmt.Errorf("KubeRay's webhook port %d is taken: %w", kubeRayWebhookPort, err)
	}
	_ = l.Close()
	cl := c.Client
	if err := cl.DeleteAllOf(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{}); err != nil {
		return err
	}
	if err := cl.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{}); err != nil {
		return err
	}
	host, _, certDir := c.WebhookServing()
	tmp := filepath.Join(c.LogDir, "kuberay-tmp")
	serving := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(serving, 0o700); err != nil {
		return err
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(certDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(serving, f), data, 0o600); err != nil {
			return err
		}
	}
	if _, err := b.startOperator(ctx, c, operatorOptions{KubeRay: true, Concurrency: 4, ExtraArgs: kubeRayRayJobFlags(4),
		Env: []string{"ENABLE_WEBHOOKS=true", "TMPDIR=" + tmp}}); err != nil {
		return err
	}
	return cl.Create(ctx, kubeRayValidatingWebhook(host, c.Env.Env.WebhookInstallOptions.LocalServingCAData))
}

// kubeRayValidatingWebhook is KubeRay's webhook configuration (its config/webhook, RayCluster
// entry) pointed at its server on loopback, with the settings of raygate's (5 s timeout,
// Equivalent matching) so the two differ only in what answers.
func kubeRayValidatingWebhook(host string, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	url := fmt.Sprintf("https://%s%s", net.JoinHostPort(host, strconv.Itoa(kubeRayWebhookPort)), kubeRayValidateRayCluster)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: kubeRayWebhookConfig},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vraycluster.kb.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"ray.io"}, APIVersions: []string{"v1"}, Resources: []string{"rayclusters"}},
			}},
		}},
	}
}

// kubeRayProbe sends a RayCluster that KubeRay's webhook rejects and the CRD schema accepts:
// a name longer than KubeRay's 53 characters. (Its webhook checks only the name and that
// worker group names are unique, which the CRD schema checks too.)
func kubeRayProbe(cl client.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		bad := builders.RayCluster("probe-"+strings.Repeat("x", 54), "default").Obj()
		return cl.Create(ctx, bad, client.DryRunAll)
	}
}

// sendProbe sends the toggle's probe: by default a RayService whose serveConfigV2 is not
// YAML (only raygate's webhook checks that; the CRD schema cannot).
func (t *webhookToggle) sendProbe(ctx context.Context) error {
	if t.probe != nil {
		return t.probe(ctx)
	}
	bad := benchRayService("probe")
	bad.Spec.ServeConfigV2 = "applications: ["
	return t.cl.Create(ctx, bad, client.DryRunAll)
}

// measureAdmissionCases measures creates and updates of each kind, webhooks on and off.
func measureAdmissionCases(ctx context.Context, c *kwokcluster.Cluster, n, seq int, kinds []string,
	toggleFor func(client.Client) (*webhookToggle, error)) ([]admissionCase, error) {
	cl, _, err := benchClient(c.Config)
	if err != nil {
		return nil, err
	}
	if _, err := createNamespaces(ctx, cl, 1); err != nil {
		return nil, err
	}
	toggle, err := toggleFor(cl)
	if err != nil {
		return nil, err
	}
	var cases []admissionCase
	for _, kind := range kinds {
		for _, op := range []string{"create", "update"} {
			send, err := admissionRequests(ctx, cl, kind, op)
			if err != nil {
				return cases, err
			}
			ac := admissionCase{Kind: kind, Operation: op}
			prefix := strings.ToLower(kind[3:4] + op[:1])
			if ac.Concurrent, err = compareWebhooksOf(ctx, toggle, n, admissionConcurrency, admissionRounds, prefix+"c", send); err != nil {
				return cases, fmt.Errorf("%s %s: %w", kind, op, err)
			}
			if ac.Sequential, err = compareWebhooksOf(ctx, toggle, seq, 1, 2, prefix+"s", send); err != nil {
				return cases, fmt.Errorf("%s %s: %w", kind, op, err)
			}
			cases = append(cases, ac)
		}
	}
	return cases, nil
}

// admissionRequests returns what sends the i-th server-side dry-run request of a case: a
// create of a new object, or a merge patch (an UPDATE to admission) of a stored object's
// head template, with a value no earlier request had. The stored RayCluster is suspended,
// so neither operator creates pods for it.
func admissionRequests(ctx context.Context, cl client.Client, kind, op string) (func(ctx context.Context, i int, prefix string) error, error) {
	const ns = "bench-0"
	newCluster := func(name string) *rayv1.RayCluster { return builders.RayCluster(name, ns).Obj() }
	newService := func(name string) *rayv1.RayService { return benchRayService(name) }
	withEnv := func(spec *rayv1.RayClusterSpec, i int, prefix string) {
		c := &spec.HeadGroupSpec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "BENCH_UPDATE", Value: fmt.Sprintf("%s-%d", prefix, i)})
	}
	switch {
	case kind == rayv1.RayClusterKind && op == "create":
		return func(ctx context.Context, i int, prefix string) error {
			return cl.Create(ctx, newCluster(fmt.Sprintf("rc-%s-%d", prefix, i)), client.DryRunAll)
		}, nil
	case kind == rayv1.RayServiceKind && op == "create":
		return func(ctx context.Context, i int, prefix string) error {
			return cl.Create(ctx, newService(fmt.Sprintf("svc-%s-%d", prefix, i)), client.DryRunAll)
		}, nil
	case kind == rayv1.RayClusterKind:
		stored := newCluster("stored-rc")
		stored.Spec.Suspend = ptr.To(true)
		if err := createOnce(ctx, cl, stored); err != nil {
			return nil, err
		}
		return func(ctx context.Context, i int, prefix string) error {
			changed := stored.DeepCopy()
			withEnv(&changed.Spec, i, prefix)
			return cl.Patch(ctx, changed, client.MergeFrom(stored), client.DryRunAll)
		}, nil
	default:
		stored := newService("stored-svc")
		if err := createOnce(ctx, cl, stored); err != nil {
			return nil, err
		}
		return func(ctx context.Context, i int, prefix string) error {
			changed := stored.DeepCopy()
			withEnv(&changed.Spec.RayClusterSpec, i, prefix)
			return cl.Patch(ctx, changed, client.MergeFrom(stored), client.DryRunAll)
		}, nil
	}
}

// createOnce creates obj (through the webhooks, which must admit it) unless it exists.
func createOnce(ctx context.Context, cl client.Client, obj client.Object) error {
	if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s: %w", obj.GetName(), err)
	}
	return nil
}

// compareWebhooksOf is compareWebhooks for any request: n requests with webhooks off and n
// with them on, alternating in rounds so background load hits both alike.
func compareWebhooksOf(ctx context.Context, toggle *webhookToggle, n, concurrency, rounds int, prefix string,
	send func(ctx context.Context, i int, prefix string) error) (admissionLatency, error) {
	res := admissionLatency{Requests: n, Concurrency: concurrency}
	var onD, offD []time.Duration
	var onErr, offErr int
	var onWall, offWall time.Duration
	per := max(1, n/rounds)
	for round := range rounds {
		for _, enabled := range []bool{false, true} {
			if err := toggle.set(ctx, enabled); err != nil {
				return res, err
			}
			count := per
			if round == rounds-1 {
				count = max(0, n-per*(rounds-1))
			}
			d, errs, wall, err := timeRequests(ctx, count, concurrency, fmt.Sprintf("%s%d%s", prefix, round, onOff(enabled)), send)
			if err != nil {
				return res, err
			}
			if enabled {
				onD, onErr, onWall = append(onD, d...), onErr+errs, onWall+wall
			} else {
				offD, offErr, offWall = append(offD, d...), offErr+errs, offWall+wall
			}
		}
	}
	res.On, res.Off = summarise(onD, onErr, onWall), summarise(offD, offErr, offWall)
	res.AddedP50Ms = res.On.P50Ms - res.Off.P50Ms
	res.AddedP99Ms = res.On.P99Ms - res.Off.P99Ms
	return res, nil
}

// timeRequests sends count requests from concurrency clients and returns each successful
// one's latency; more than 1% failed is an error.
func timeRequests(ctx context.Context, count, concurrency int, prefix string, send func(ctx context.Context, i int, prefix string) error) ([]time.Duration, int, time.Duration, error) {
	var mu sync.Mutex
	durations := make([]time.Duration, 0, count)
	errs := 0
	var firstErr error
	start := time.Now()
	_ = parallel(ctx, count, concurrency, func(ctx context.Context, i int) error {
		t := time.Now()
		err := send(ctx, i, prefix)
		d := time.Since(t)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs++
			if firstErr == nil {
				firstErr = err
			}
			return nil
		}
		durations = append(durations, d)
		return nil
	})
	if errs > count/100 {
		return nil, errs, 0, fmt.Errorf("%d of %d requests failed, first: %w", errs, count, firstErr)
	}
	return durations, errs, time.Since(start), ctx.Err()
}
