package raycluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

var _ = Describe("a manager watching some namespaces, then restarted", func() {
	It("reconciles only the watched namespaces, and a fresh manager picks up the rest", func(ctx context.Context) {
		watched, other := newNamespace(ctx), newNamespace(ctx)
		Expect(mgr.Stop()).To(Succeed())
		opts := managerOptions()
		opts.WatchNamespaces = []string{watched}
		scoped := harness.StartManager(opts)
		restarted := false
		DeferCleanup(func() {
			if !restarted { // keep the suite's manager running for the next specs
				Expect(scoped.Stop()).To(Succeed())
				mgr = harness.StartManager(managerOptions())
			}
		})

		Expect(k8s.Create(ctx, builders.RayCluster("in", watched).Obj())).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayCluster("out", other).Obj())).To(Succeed())
		waitReady(ctx, watched, "in")
		Consistently(func() int { return len(pods(ctx, other, "out")) }, time.Second).Should(BeZero())
		Expect(getCluster(ctx, other, "out").Status.State).To(BeEmpty())

		Expect(scoped.Stop()).To(Succeed())
		mgr = harness.StartManager(managerOptions())
		restarted = true
		waitReady(ctx, other, "out")
		Expect(getCluster(ctx, watched, "in").Status.State).To(Equal(rayv1.Ready))
		expectQuiet()
		Consistently(func() int { return len(pods(ctx, watched, "in")) }, time.Second).Should(Equal(2), "a restart with empty memory adds or removes nothing")
	})
})
