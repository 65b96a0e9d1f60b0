// Package poddryrun checks the pods' dry-run at admission as users meet it: the real
// kube-apiserver, with a Pod Security admission configuration of its own (cluster default
// and an exempt namespace), LimitRanges, a ValidatingAdmissionPolicy and a slow webhook on
// pods, calls raygate's webhooks, which dry-run the pods raygate would create; the real
// kubectl prints the result.
//
// Run it with RAYGATE_POD_DRY_RUN=false to see what the same manifests got before (raygate
// started with --pod-dry-run=false): every spec states both answers.
package poddryrun

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

var (
	env *controlplane.Env
	// dryRun is raygate's --pod-dry-run in this run (RAYGATE_POD_DRY_RUN=false: off).
	dryRun = os.Getenv("RAYGATE_POD_DRY_RUN") != "false"
	// webhookCache is what the webhooks read namespaces from.
	webhookCache client.Reader
)

func TestPodDryRun(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission: the pods' dry-run")
}

// exemptNamespace is exempt from Pod Security in the API server's admission configuration,
// which also enforces baseline in namespaces that set no level: what raygate cannot read
// from namespace labels.
const exemptNamespace = "exempt-team"

const admissionConfiguration = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
    exemptions:
      namespaces: [` + exemptNamespace + `]
`

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	env, err = controlplane.Start(controlplane.Options{Webhooks: true, AdmissionConfiguration: admissionConfiguration})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)

	opts := app.DefaultOptions()
	opts.WebhookHost, opts.WebhookPort, opts.WebhookCertDir = env.WebhookServing()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.WebhooksOnly = true
	opts.PodDryRun = dryRun
	mgr, err := app.NewManager(env.Config, opts)
	Expect(err).NotTo(HaveOccurred())
	webhookCache = mgr.GetCache()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done, 20*time.Second).Should(Receive(BeNil()))
	})

	probe := builders.RayService("probe", "default").Obj()
	defaulting.RayService(probe)
	Eventually(func() error {
		return env.Client.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	GinkgoWriter.Printf("--pod-dry-run=%v\n", dryRun)
})

// kubectl runs the real kubectl and logs what a user would see, for docs/admission.md.
func kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	stdout, stderr, err = env.Kubectl(ctx, stdin, args...)
	GinkgoWriter.Printf("$ kubectl %s\n%s%s\n", strings.Join(args, " "), stdout, stderr)
	return stdout, stderr, err
}

// newNamespace creates a namespace with the given labels (named name when given, else
// generated from prefix) and waits until the webhooks see it.
func newNamespace(ctx context.Context, prefix, name string, labels map[string]string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if name == "" {
		ns.GenerateName = prefix + "-"
	}
	Expect(env.Client.Create(ctx, ns)).To(Succeed())
	Eventually(func() error {
		return webhookCache.Get(ctx, client.ObjectKey{Name: ns.Name}, webhooks.NamespaceMetadata())
	}).Should(Succeed())
	return ns.Name
}

// slowWebhook serves a validating webhook on pods that answers after delay, in the
// namespaces labelled raygate-test/slow=on: a cluster whose pod webhooks are slow.
func slowWebhook(ctx context.Context, delay time.Duration) {
	GinkgoHelper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	DeferCleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "slow-pod-policy"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "slow.pods.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate"), CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"raygate-test/slow": "on"}},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		}},
	}
	Expect(env.Client.Create(ctx, cfg)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, cfg)).To(Succeed()) })
}
