package raycluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var _ = Describe("a manager watching some namespaces, then restarted", func() {
	It("reconciles only the watched namespaces, and a fresh manager picks up the rest", func(ctx context.Context) {
		watched, other := world.NewNamespace(ctx), world.NewNamespace(ctx)
		Expect(mgr.Stop()).To(Succeed())
		opts := rctest.ManagerOptions()
		opts.WatchNamespaces = []string{watched}
		scoped := harness.StartManager(opts)
		restarted := false
		DeferCleanup(func() {
			if !restarted { // keep the suite's manager running for the next specs
				Expect(scoped.Stop()).To(Succeed())
				mgr = harness.StartManager(rctest.ManagerOptions())
			}
		})

		Expect(k8s.Create(ctx, builders.RayCluster("in", watched).Obj())).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayCluster("out", other).Obj())).To(Succeed())
		world.WaitReady(ctx, watched, "in")
		Consistently(func() int { return len(world.Pods(ctx, other, "out")) }, time.Second).Should(BeZero())
		Expect(world.Get(ctx, other, "out").Status.State).To(BeEmpty())

		Expect(scoped.Stop()).To(Succeed())
		mgr = harness.StartManager(rctest.ManagerOptions())
		restarted = true
		world.WaitReady(ctx, other, "out")
		Expect(world.Get(ctx, watched, "in").Status.State).To(Equal(rayv1.Ready))
		world.ExpectQuiet()
		Consistently(func() int { return len(world.Pods(ctx, watched, "in")) }, time.Second).Should(Equal(2), "a restart with empty memory adds or removes nothing")
	})
})
