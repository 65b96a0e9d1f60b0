package admission

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/webhooks"
)

// With failurePolicy Fail, a webhook that cannot be reached refuses every write it is
// called for. Its configurations' matchConditions keep it out of updates of objects being
// deleted, so finalizers can still be removed and namespaces deleted.
var _ = Describe("while the webhooks are down", Serial, func() {
	It("refuses writes, but finalizers can be removed and a namespace holding ray.io objects deleted", func(ctx context.Context) {
		const ns = "webhooks-down"
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		withFinalizer := func(manifest, name string) string {
			return edit(manifest, "  name: "+name, fmt.Sprintf("  name: %s\n  namespace: %s\n  finalizers: [example.com/cleanup]", name, ns))
		}
		for _, m := range []string{
			withFinalizer(rayCluster("leaving", 1, 1, 2), "leaving"),
			withFinalizer(rayCluster("staying", 1, 1, 2), "staying"),
			withFinalizer(rayService("service"), "service"),
		} {
			_, stderr, err := kubectl(ctx, m, "create", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
		}

		By("pointing the webhook configurations at an address where nothing listens")
		restore := stopWebhooks(ctx)
		refused := func() string {
			_, stderr, _ := kubectl(ctx, rayCluster("refused", 1, 1, 2), "create", "--dry-run=server", "-f", "-")
			return stderr
		}
		Eventually(refused, 10*time.Second, 200*time.Millisecond).Should(ContainSubstring(`failed calling webhook "mraycluster.ray.io"`))

		By("deleting a RayCluster: the API server does not call the webhooks for it any more")
		_, stderr, err := kubectl(ctx, "", "delete", "raycluster", "leaving", "-n", ns, "--wait=false")
		Expect(err).NotTo(HaveOccurred(), stderr)
		stdout, stderr, err := kubectl(ctx, "", "label", "raycluster", "leaving", "-n", ns, "phase=leaving")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/leaving labeled\n"))

		By("checking that without the matchConditions the same update would be refused")
		setMatchConditions(ctx, nil)
		Eventually(func() string {
			_, stderr, _ := kubectl(ctx, "", "label", "--overwrite", "raycluster", "leaving", "-n", ns, "phase=left")
			return stderr
		}, 10*time.Second, 200*time.Millisecond).Should(ContainSubstring(`failed calling webhook`))
		setMatchConditions(ctx, webhooks.MatchConditions)
		Eventually(func() error {
			_, _, err := kubectl(ctx, "", "label", "--overwrite", "raycluster", "leaving", "-n", ns, "phase=left")
			return err
		}, 10*time.Second, 200*time.Millisecond).Should(Succeed())

		By("removing its finalizer")
		stdout, stderr, err = kubectl(ctx, "", "patch", "raycluster", "leaving", "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal("raycluster.ray.io/leaving patched\n"))
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "leaving"}, &rayv1.RayCluster{}))
		}, 10*time.Second, 100*time.Millisecond).Should(BeTrue())

		By("deleting the namespace: its controller deletes the RayCluster and the RayService, and their finalizers are removed")
		stopControllers, err := env.StartControllers(ctx, GinkgoWriter, "namespace")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopControllers)
		_, stderr, err = kubectl(ctx, "", "delete", "namespace", ns, "--wait=false")
		Expect(err).NotTo(HaveOccurred(), stderr)
		for _, o := range []struct {
			kind, name string
			obj        client.Object
		}{{"raycluster", "staying", &rayv1.RayCluster{}}, {"rayservice", "service", &rayv1.RayService{}}} {
			Eventually(func() bool {
				return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.name}, o.obj) == nil && o.obj.GetDeletionTimestamp() != nil
			}, 60*time.Second, 200*time.Millisecond).Should(BeTrue(), "the namespace controller deletes %s %s", o.kind, o.name)
			stdout, stderr, err := kubectl(ctx, "", "patch", o.kind, o.name, "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(stdout).To(Equal(fmt.Sprintf("%s.ray.io/%s patched\n", o.kind, o.name)))
		}
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
		}, 60*time.Second, 200*time.Millisecond).Should(BeTrue(), "the namespace is gone")

		By("checking that writes were refused all along")
		Expect(refused()).To(ContainSubstring(`failed calling webhook "mraycluster.ray.io"`))
		restore()
	})
})

// stopWebhooks points every webhook of raygate's configurations at a local port where
// nothing listens, until the returned function restores them and waits until they answer.
func stopWebhooks(ctx context.Context) (restore func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	dead := l.Addr().String()
	Expect(l.Close()).To(Succeed())

	urls := map[string]string{}
	updateWebhooks(ctx, func(name string, cc *admissionregistrationv1.WebhookClientConfig, _ *[]admissionregistrationv1.MatchCondition) {
		Expect(cc.URL).NotTo(BeNil(), "envtest configures webhooks by URL")
		urls[name] = *cc.URL
		u, err := url.Parse(*cc.URL)
		Expect(err).NotTo(HaveOccurred())
		u.Host = dead
		cc.URL = ptr.To(u.String())
	})
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		ctx := context.Background() // also runs as a cleanup, after the spec's context ended
		updateWebhooks(ctx, func(name string, cc *admissionregistrationv1.WebhookClientConfig, mc *[]admissionregistrationv1.MatchCondition) {
			cc.URL = ptr.To(urls[name])
			*mc = webhooks.MatchConditionsFor(name[len("m/"):])
		})
		Eventually(func() error {
			_, _, err := env.Kubectl(ctx, rayService("probe-back"), "create", "--dry-run=server", "-f", "-")
			return err
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed(), "webhooks back")
	}
	DeferCleanup(restore)
	return restore
}

func setMatchConditions(ctx context.Context, conditions []admissionregistrationv1.MatchCondition) {
	updateWebhooks(ctx, func(_ string, _ *admissionregistrationv1.WebhookClientConfig, mc *[]admissionregistrationv1.MatchCondition) {
		*mc = conditions
	})
}

// updateWebhooks changes every webhook of raygate's two configurations.
func updateWebhooks(ctx context.Context, change func(name string, cc *admissionregistrationv1.WebhookClientConfig, mc *[]admissionregistrationv1.MatchCondition)) {
	GinkgoHelper()
	Eventually(func() error {
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "mutating-webhook-configuration"}, mwc); err != nil {
			return err
		}
		for i := range mwc.Webhooks {
			change("m/"+mwc.Webhooks[i].Name, &mwc.Webhooks[i].ClientConfig, &mwc.Webhooks[i].MatchConditions)
		}
		return env.Client.Update(ctx, mwc)
	}).Should(Succeed())
	Eventually(func() error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, vwc); err != nil {
			return err
		}
		for i := range vwc.Webhooks {
			change("v/"+vwc.Webhooks[i].Name, &vwc.Webhooks[i].ClientConfig, &vwc.Webhooks[i].MatchConditions)
		}
		return env.Client.Update(ctx, vwc)
	}).Should(Succeed())
}
