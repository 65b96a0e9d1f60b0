// Package kueue runs the real Kueue manager (built by `make tools` from sigs.k8s.io/kueue)
// against a test control plane: it installs Kueue's CRDs with their conversion webhook and
// Kueue's admission webhooks for its own kinds, RayClusters and RayJobs, all served by the Kueue
// process over TLS on loopback, then starts Kueue and waits until it is ready.
//
// Kueue manages its certificates itself (internalCertManagement), but the Secret it keeps
// them in is created here first with a serving certificate that is also valid for
// 127.0.0.1, where the API server calls it; Kueue keeps a valid certificate and only injects
// its CA into the webhook configurations and CRDs.
package kueue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/proc"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// Names Kueue's certificate management expects (its defaults): it checks the certificates
// in the Secret against the Service and CA names, and injects its CA into the webhook
// configurations by name.
const (
	Namespace        = "kueue-system"
	webhookService   = "kueue-webhook-service"
	webhookSecret    = "kueue-webhook-server-cert" //nolint:gosec // a Secret's name, not a credential
	mutatingConfig   = "kueue-mutating-webhook-configuration"
	validatingConfig = "kueue-validating-webhook-configuration"
	caCommonName     = "kueue-ca"
)

const (
	readyTimeout    = 2 * time.Minute
	stopGracePeriod = 20 * time.Second
	// Kueue v0.15 has no RayService integration; RayClusters and RayJobs are what it
	// queues (a RayJob's own RayCluster is admitted with the RayJob, not queued again).
	rayClusterFramework = "ray.io/raycluster"
	rayJobFramework     = "ray.io/rayjob"
)

// conversionCRDs are the CRDs Kueue converts between v1beta1 (stored) and v1beta2 (what its
// controllers use) with its conversion webhook.
var conversionCRDs = []string{
	"localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io",
	"cohorts.kueue.x-k8s.io", "multikueueclusters.kueue.x-k8s.io",
}

// Options configure the Kueue process.
type Options struct {
	// FeatureGates are Kueue's feature gates. VisibilityOnDemand is off unless set here:
	// its API server would listen on every interface.
	FeatureGates map[string]bool
	// Log receives Kueue's output.
	Log io.Writer
}

// Kueue is a running Kueue manager.
type Kueue struct {
	proc *proc.Process
	dir  string
	// WebhookPort and HealthPort are where Kueue listens on 127.0.0.1.
	WebhookPort, HealthPort int
}

// Start installs Kueue's CRDs and webhooks on env and starts Kueue; it returns once Kueue is
// ready (its webhook server serves with the certificate the API server trusts). Stop it
// when done.
func Start(ctx context.Context, env *controlplane.Env, opts Options) (*Kueue, error) {
	bin, err := tools.Path("kueue")
	if err != nil {
		return nil, err
	}
	crdDir, err := tools.Path("kueue-crds")
	if err != nil {
		return nil, err
	}
	webhookDir, err := tools.Path("kueue-webhooks")
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	k := &Kueue{}
	if k.WebhookPort, err = proc.FreePort(); err != nil {
		return nil, err
	}
	if k.HealthPort, err = proc.FreePort(); err != nil {
		return nil, err
	}
	if k.dir, err = os.MkdirTemp("", "raygate-kueue-"); err != nil {
		return nil, err
	}
	certs, err := newCertificates()
	if err != nil {
		return nil, k.cleanup(err)
	}
	certDir := filepath.Join(k.dir, "certs")
	if err := certs.write(certDir); err != nil {
		return nil, k.cleanup(err)
	}
	if err := createSecret(ctx, env.Client, certs); err != nil {
		return nil, k.cleanup(err)
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", k.WebhookPort)
	if err := installCRDs(env, crdDir, base, certs.caPEM); err != nil {
		return nil, k.cleanup(err)
	}
	if err := installWebhooks(ctx, env.Client, filepath.Join(webhookDir, "manifests.yaml"), base, certs.caPEM); err != nil {
		return nil, k.cleanup(err)
	}
	configPath := filepath.Join(k.dir, "config.yaml")
	if err := os.WriteFile(configPath, configuration(k.WebhookPort, k.HealthPort, certDir, opts), 0o600); err != nil {
		return nil, k.cleanup(err)
	}

	cmd := exec.Command(bin, "--config", configPath, "--zap-log-level=2")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	if k.proc, err = proc.Start("kueue", cmd); err != nil {
		return nil, k.cleanup(err)
	}
	// Kueue's /readyz answers 200 once its certificates are in place and its webhook
	// server listens.
	if err := k.proc.WaitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", k.HealthPort), readyTimeout); err != nil {
		_ = k.Stop()
		return nil, err
	}
	return k, nil
}

// Stop ends the Kueue process (SIGTERM, then SIGKILL after a grace period) and removes its
// files. The objects it installed stay with the control plane.
func (k *Kueue) Stop() error {
	var exitErr error
	if k.proc != nil {
		exitErr = k.proc.Stop(stopGracePeriod)
	}
	return k.cleanup(exitErr)
}

func (k *Kueue) cleanup(err error) error {
	if k.dir != "" {
		err = errors.Join(err, os.RemoveAll(k.dir))
	}
	return err
}

// configuration is Kueue's configuration file: everything on loopback, no leader election,
// no metrics listener.
func configuration(webhookPort, healthPort int, certDir string, opts Options) []byte {
	gates := map[string]bool{"VisibilityOnDemand": false}
	for g, on := range opts.FeatureGates {
		gates[g] = on
	}
	cfg := map[string]any{
		"apiVersion":     "config.kueue.x-k8s.io/v1beta2",
		"kind":           "Configuration",
		"namespace":      Namespace,
		"health":         map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)},
		"metrics":        map[string]any{"bindAddress": "0"},
		"webhook":        map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir},
		"leaderElection": map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{
			"enable": true, "webhookServiceName": webhookService, "webhookSecretName": webhookSecret,
		},
		"integrations": map[string]any{"frameworks": []string{rayClusterFramework, rayJobFramework}},
		"featureGates": gates,
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		panic(err) // a map of plain values always marshals
	}
	return out
}

func createSecret(ctx context.Context, c client.Client, certs *certificates) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: webhookSecret, Namespace: Namespace},
		Data: map[string][]byte{
			"ca.crt": certs.caPEM, "ca.key": certs.caKeyPEM, "tls.crt": certs.certPEM, "tls.key": certs.keyPEM,
		},
	}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating secret %s: %w", webhookSecret, err)
	}
	return nil
}

// installCRDs installs Kueue's CRDs, those with several versions converted by Kueue's
// conversion webhook, and waits until they are served.
func installCRDs(env *controlplane.Env, dir, base string, caPEM []byte) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		if slices.Contains(conversionCRDs, crd.Name) {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(base + "/convert"), CABundle: caPEM},
					ConversionReviewVersions: []string{"v1"},
				},
			}
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: crds})
	return err
}

// installWebhooks installs Kueue's webhook configurations, keeping the webhooks for its own
// kinds, RayClusters and RayJobs (the integrations in use), pointed at the Kueue process.
func installWebhooks(ctx context.Context, c client.Client, path, base string, caPEM []byte) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		doc, err := yaml.Marshal(raw)
		if err != nil {
			return err
		}
		switch raw["kind"] {
		case "MutatingWebhookConfiguration":
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.Unmarshal(doc, mutating)
		case "ValidatingWebhookConfiguration":
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.Unmarshal(doc, validating)
		}
		if err != nil {
			return err
		}
	}
	if mutating == nil || validating == nil {
		return fmt.Errorf("%s: expected a mutating and a validating webhook configuration", path)
	}
	clientConfig := func(cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + *cc.Service.Path), CABundle: caPEM}
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: mutatingConfig}}
	for _, w := range mutating.Webhooks {
		if inUse(w.Rules) {
			w.ClientConfig = clientConfig(w.ClientConfig)
			m.Webhooks = append(m.Webhooks, w)
		}
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: validatingConfig}}
	for _, w := range validating.Webhooks {
		if inUse(w.Rules) {
			w.ClientConfig = clientConfig(w.ClientConfig)
			v.Webhooks = append(v.Webhooks, w)
		}
	}
	if err := c.Create(ctx, m); err != nil {
		return fmt.Errorf("creating %s: %w", mutatingConfig, err)
	}
	if err := c.Create(ctx, v); err != nil {
		return fmt.Errorf("creating %s: %w", validatingConfig, err)
	}
	return nil
}

// inUse: rules for Kueue's own kinds, RayClusters or RayJobs. Kueue serves no handler for the
// integrations it was not configured with, and a failing webhook would block those kinds.
func inUse(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			switch {
			case g == "kueue.x-k8s.io":
			case g == "ray.io" && (slices.Equal(r.Resources, []string{"rayclusters"}) || slices.Equal(r.Resources, []string{"rayjobs"})):
			default:
				return false
			}
		}
	}
	return len(rules) > 0
}
