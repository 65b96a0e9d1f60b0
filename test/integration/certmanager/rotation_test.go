package certmanager

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/certmanager"
)

// timeline records what happened during a rotation, relative to its start.
type timeline struct {
	start time.Time
	lines []string
}

func (t *timeline) add(format string, args ...any) {
	line := fmt.Sprintf("+%6.2fs  ", time.Since(t.start).Seconds()) + fmt.Sprintf(format, args...)
	t.lines = append(t.lines, line)
	GinkgoWriter.Println(line)
}

// rotate renews the serving certificate, then the CA (and the serving certificate again,
// so one signed by the new CA is served), under continuous admission load, and expects
// every request answered.
func rotate(ctx context.Context, op *operatorProc, sync *certmanager.SecretSync) {
	tl := &timeline{start: time.Now()}
	l := newLoad(env.Client, "default")
	stop := make(chan struct{})
	done := make(chan loadResult, 1)
	go func() { done <- l.run(ctx, stop, 20000) }()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	Eventually(func() int { return l.result().Requests }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 20))
	tl.add("load running: %s", l.result())

	var delays []time.Duration
	renewServing := func(why string) *x509.Certificate {
		before := secret(ctx, webhookTLS).Data["tls.crt"]
		renew(ctx, webhookCrt)
		tl.add("renew %s (%s)", webhookCrt, why)
		var issued []byte
		Eventually(func() bool {
			issued = secret(ctx, webhookTLS).Data["tls.crt"]
			return !bytes.Equal(issued, before)
		}).WithTimeout(time.Minute).Should(BeTrue())
		leaf := parsePEM(issued)
		tl.add("issued serial %s by %q", leaf.SerialNumber.Text(16), leaf.Issuer.CommonName)
		var projected time.Time
		Eventually(func() bool {
			for _, p := range sync.History() {
				if bytes.Equal(p.TLSCert, issued) {
					projected = p.At
					return true
				}
			}
			return false
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		tl.add("projected into the operator's certificate directory")
		Eventually(func() bool {
			c, err := servedCert(op.webhook)
			return err == nil && sameCert(c, issued)
		}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(BeTrue())
		d := time.Since(projected)
		delays = append(delays, d)
		tl.add("served by the operator (reload %.2fs after projection, no restart)", d.Seconds())
		return leaf
	}

	renewServing("serving certificate rotation")
	Consistently(func() int { return l.result().X509 + l.result().Refused }).WithTimeout(2 * time.Second).Should(BeZero())

	caBefore := secret(ctx, caCert).Data["tls.crt"]
	renew(ctx, caCert)
	tl.add("renew %s (CA rotation)", caCert)
	Eventually(func() bool { return !bytes.Equal(secret(ctx, caCert).Data["tls.crt"], caBefore) }).WithTimeout(time.Minute).Should(BeTrue())
	newCA := secret(ctx, caCert).Data["tls.crt"]
	tl.add("new CA issued, serial %s", parsePEM(newCA).SerialNumber.Text(16))
	leaf := renewServing("re-signed by the new CA")
	Expect(verifies(newCA, leaf)).To(Succeed())
	Eventually(func(g Gomega) {
		for _, b := range injected(ctx) {
			g.Expect(verifies(b, leaf)).To(Succeed())
			g.Expect(bytes.Contains(b, bytes.TrimSpace(newCA))).To(BeTrue())
		}
	}).WithTimeout(time.Minute).Should(Succeed())
	tl.add("new CA in both webhook configurations' caBundle")
	Consistently(func() int { return l.result().X509 + l.result().Refused }).WithTimeout(3 * time.Second).Should(BeZero())

	close(stop)
	res := <-done
	tl.add("load stopped: %s", res)
	AddReportEntry("rotation timeline", tl.lines)
	AddReportEntry("certificate reload delays", fmt.Sprint(delays))
	Expect(res.Requests).To(BeNumerically(">", 50))
	Expect(res.X509).To(BeZero(), "%v", res.Samples)
	Expect(res.Refused).To(BeZero(), "%v", res.Samples)
	Expect(res.Wrong).To(BeZero(), "%v", res.Samples)
}
