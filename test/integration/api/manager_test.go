package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/app"
)

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

var _ = Describe("the manager binary's server", func() {
	It("serves health and readiness, and refuses metrics without credentials", func(ctx context.Context) {
		opts := app.DefaultOptions()
		opts.EnableWebhooks = false
		opts.ProbeAddr = freeAddr()
		opts.MetricsAddr = freeAddr()
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(runCtx, env.Config, opts) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done, 10*time.Second).Should(Receive(BeNil()))
		})

		for _, path := range []string{"/healthz", "/readyz"} {
			Eventually(func() (int, error) {
				resp, err := http.Get(fmt.Sprintf("http://%s%s", opts.ProbeAddr, path))
				if err != nil {
					return 0, err
				}
				_ = resp.Body.Close()
				return resp.StatusCode, nil
			}, 20*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK), path)
		}

		// Metrics are HTTPS only, TLS >= 1.2, HTTP/1.1 only, and need a token.
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
		var resp *http.Response
		Eventually(func() error {
			var err error
			resp, err = insecure.Get("https://" + opts.MetricsAddr + "/metrics")
			return err
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(resp.ProtoMajor).To(Equal(1), "HTTP/2 must be off by default")

		old := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11} //nolint:gosec // proving TLS 1.1 is refused
		_, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: old}}).Get("https://" + opts.MetricsAddr + "/metrics")
		Expect(err).To(HaveOccurred(), "TLS 1.1 must be refused")
	})
})
