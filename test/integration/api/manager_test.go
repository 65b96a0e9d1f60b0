package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/raygate/raygate/internal/app"
)

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

var _ = Describe("the manager binary's server", func() {
	It("serves health and readiness, and metrics only to a token allowed to read them", func(ctx context.Context) {
		opts := app.DefaultOptions()
		opts.EnableWebhooks = false
		opts.ProbeAddr = freeAddr()
		opts.MetricsAddr = freeAddr()
		// As the chart's ServiceAccount: the metrics endpoint's TokenReviews and
		// SubjectAccessReviews need the chart's metrics-auth rules.
		mgr := harness.StartManager(opts)
		DeferCleanup(func() { Expect(mgr.Stop()).To(Succeed()) })

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

		// A ServiceAccount token is checked with the API server: valid and granted
		// `get /metrics` scrapes; valid without the grant is refused; made up is unknown.
		scrape := func(token string) (int, string) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+opts.MetricsAddr+"/metrics", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := insecure.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(body)
		}
		ns := "metrics-scrape"
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "raygate-test-metrics-reader"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		Expect(env.Client.Create(ctx, reader)).To(Succeed())
		Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "raygate-test-metrics-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "prometheus"}}})).To(Succeed())
		token := func(sa string) string {
			Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})).To(Succeed())
			tr := &authenticationv1.TokenRequest{}
			Expect(env.Client.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}, tr)).To(Succeed())
			return tr.Status.Token
		}
		prometheus := token("prometheus")
		Eventually(func() (int, error) {
			code, body := scrape(prometheus)
			if !strings.Contains(body, "raygate_") {
				return code, fmt.Errorf("no raygate metrics in %.200q", body)
			}
			return code, nil
		}, 20*time.Second, 500*time.Millisecond).Should(Equal(http.StatusOK))
		code, body := scrape(token("app"))
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(body).To(ContainSubstring("Authorization denied for user system:serviceaccount:metrics-scrape:app"))
		code, _ = scrape("not-a-token")
		Expect(code).To(Equal(http.StatusUnauthorized))
	})
})
