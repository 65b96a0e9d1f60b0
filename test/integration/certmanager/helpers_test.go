package certmanager

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/testenv/podrunner"
	"github.com/raygate/raygate/internal/testenv/proc"
)

var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// operatorProc is one raygate process, as one pod of the Deployment.
type operatorProc struct {
	p       *proc.Process
	webhook string // 127.0.0.1:port
	metrics string // 127.0.0.1:port, HTTPS with the same certificate (the chart's --metrics-cert-dir)
	readyz  string
}

// startOperator runs cmd/raygate with the chart's webhook flags on loopback, reading its
// certificate from certDir, and does not wait for it.
func startOperator(name, certDir string) *operatorProc {
	ports := make([]int, 3)
	for i := range ports {
		var err error
		ports[i], err = proc.FreePort()
		Expect(err).NotTo(HaveOccurred())
	}
	log, err := os.Create(filepath.Join(logDir, name+".log"))
	Expect(err).NotTo(HaveOccurred())
	o := &operatorProc{
		webhook: "127.0.0.1:" + strconv.Itoa(ports[0]),
		readyz:  "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/readyz",
		metrics: "127.0.0.1:" + strconv.Itoa(ports[2]),
	}
	cmd := exec.Command(operator,
		"--leader-elect=false",
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(ports[1]),
		"--metrics-bind-address="+o.metrics,
		"--metrics-secure=true",
		"--metrics-cert-dir="+certDir,
		"--enable-webhooks=true",
		"--webhook-host=127.0.0.1",
		"--webhook-port="+strconv.Itoa(ports[0]),
		"--webhook-cert-dir="+certDir,
	)
	// The chart's ServiceAccount's token, not the admin's credentials: the operator gets
	// exactly the RBAC the chart grants (expectNoForbidden reads the log).
	kubeconfig := filepath.Join(workDir, name+".kubeconfig")
	Expect(podrunner.TokenKubeconfig(context.Background(), env.Client, env.Config, releaseNS, release, nil, kubeconfig)).To(Succeed())
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+releaseNS)
	cmd.Stdout, cmd.Stderr = log, log
	o.p, err = proc.Start(name, cmd)
	Expect(err).NotTo(HaveOccurred())
	return o
}

func logOf(name string) string {
	b, _ := os.ReadFile(filepath.Join(logDir, name+".log"))
	return string(b)
}

func (o *operatorProc) stop() { Expect(o.p.Stop(30 * time.Second)).To(Succeed()) }

// servedCert is the leaf certificate the webhook server presents right now.
func servedCert(addr string) (*x509.Certificate, error) {
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // reads what is served; trust is checked separately
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}

func parsePEM(b []byte) *x509.Certificate {
	blk, _ := pem.Decode(b)
	Expect(blk).NotTo(BeNil(), "no PEM block")
	c, err := x509.ParseCertificate(blk.Bytes)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func secret(ctx context.Context, name string) *corev1.Secret {
	var s corev1.Secret
	Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: name}, &s)).To(Succeed())
	return &s
}

func certificate(ctx context.Context, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(certificateGVK)
	Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: name}, u)).To(Succeed())
	return u
}

// condition is the status of a Certificate's condition ("" when absent).
func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// renew does what `cmctl renew` does: set the Certificate's Issuing condition, which
// cert-manager's controllers take as the request to issue it again now.
func renew(ctx context.Context, name string) {
	u := certificate(ctx, name)
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	conds = append(conds, map[string]any{
		"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
		"message":            "Certificate re-issuance manually triggered",
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	})
	Expect(unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")).To(Succeed())
	Expect(env.Client.Status().Update(ctx, u)).To(Succeed())
}

// injected is the caBundle of every webhook in both configurations (one per webhook).
func injected(ctx context.Context) [][]byte {
	var out [][]byte
	var m admissionregistrationv1.MutatingWebhookConfiguration
	Expect(env.Client.Get(ctx, types.NamespacedName{Name: mutating}, &m)).To(Succeed())
	Expect(m.Webhooks).NotTo(BeEmpty())
	for _, h := range m.Webhooks {
		out = append(out, h.ClientConfig.CABundle)
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	Expect(env.Client.Get(ctx, types.NamespacedName{Name: validating}, &v)).To(Succeed())
	Expect(v.Webhooks).NotTo(BeEmpty())
	for _, h := range v.Webhooks {
		out = append(out, h.ClientConfig.CABundle)
	}
	return out
}

// verifies says whether leaf chains to one of the PEM certificates in bundle for the
// webhook Service's name, as the API server checks it.
func verifies(bundle []byte, leaf *x509.Certificate) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return fmt.Errorf("no certificate in the bundle")
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: release + "-webhook-service." + releaseNS + ".svc"})
	return err
}

func sameCert(a *x509.Certificate, pemB []byte) bool {
	return a != nil && bytes.Equal(a.Raw, parsePEM(pemB).Raw)
}
