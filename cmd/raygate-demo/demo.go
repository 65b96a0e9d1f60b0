package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/testenv/invariants"
)

// demo is one run of the tour.
type demo struct {
	opts options
	out  io.Writer
	s    *localmode.Session
	// stop stops the environment when the demo started it (nil when attached).
	stop func() error
	// violationsFrom is where the environment's violations file stood when the demo began.
	violationsFrom int64
}

func (d *demo) printf(format string, a ...any) { fmt.Fprintf(d.out, format, a...) }

func (d *demo) section(n int, title string) { d.printf("\n[%d/5] %s\n", n, title) }

func (d *demo) run(ctx context.Context) error {
	d.printf("raygate demo: an incremental upgrade of a RayService, watched step by step\n")
	d.section(1, "Local environment")
	if err := d.environment(ctx); err != nil {
		return err
	}
	d.violationsFrom = d.s.ViolationsOffset()
	stopTail := d.tailViolations(ctx)
	defer stopTail()

	d.section(2, "The sample RayService")
	svc, err := d.sample(ctx)
	if err != nil {
		return err
	}
	d.section(3, "Admission: an invalid RayService is rejected at kubectl apply")
	if err := d.rejectInvalid(ctx); err != nil {
		return err
	}
	d.section(4, "Incremental upgrade")
	if err := d.upgrade(ctx, svc); err != nil {
		return err
	}
	d.section(5, "Invariants")
	return d.verdict()
}

// environment attaches to make run, or starts an environment for the demo.
func (d *demo) environment(ctx context.Context) error {
	if localmode.Running(d.opts.dir) {
		s, err := localmode.Attach(d.opts.dir)
		if err != nil {
			return err
		}
		d.s = s
		d.printf("  attached to the environment of make run (KUBECONFIG=%s)\n", s.Kubeconfig)
		return nil
	}
	d.printf("  no make run is running in %s: starting a local environment for the demo\n", d.opts.dir)
	env, err := localmode.Start(ctx, localmode.Options{Dir: d.opts.dir, Progress: indent(d.out)})
	if err != nil {
		return err
	}
	d.s, d.stop = &env.Session, env.Stop
	d.printf("  KUBECONFIG=%s\n", env.Kubeconfig)
	return nil
}

// sample applies the incremental sample unless it exists, and waits until it is Ready.
func (d *demo) sample(ctx context.Context) (*rayv1.RayService, error) {
	path := localmode.SamplePath(localmode.IncrementalSample)
	want, err := localmode.ReadRayService(path)
	if err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: want.Namespace, Name: want.Name}
	var cur rayv1.RayService
	switch err := d.s.Client.Get(ctx, key, &cur); {
	case err == nil:
		d.printf("  RayService %s exists (make run applied it); image %s\n", key.Name, localmode.RayImage(&cur))
	case apierrors.IsNotFound(err):
		if err := d.kubectl(ctx, true, "apply", "-f", path); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	d.printf("  waiting until it is Ready:\n")
	svc, err := localmode.WaitReady(ctx, d.s.Client, key, func(since time.Duration, line string) {
		d.printf("  %6.1fs  %s\n", since.Seconds(), line)
	})
	if err != nil {
		return nil, err
	}
	if svc.Spec.UpgradeStrategy == nil || ptr.Deref(svc.Spec.UpgradeStrategy.Type, "") != rayv1.NewClusterWithIncrementalUpgrade {
		return nil, fmt.Errorf("RayService %s does not use the NewClusterWithIncrementalUpgrade strategy", key.Name)
	}
	d.printf("  Ready: RayCluster %s serves all traffic\n", svc.Status.ActiveServiceStatus.RayClusterName)
	return svc, nil
}

// rejectInvalid applies the invalid sample and shows kubectl's answer; it must be rejected.
func (d *demo) rejectInvalid(ctx context.Context) error {
	path := localmode.SamplePath(localmode.InvalidSample)
	d.printf("  $ kubectl apply -f %s\n", path)
	stdout, stderr, err := d.s.Kubectl(ctx, "", "apply", "-f", path)
	d.printf("%s", indentText(stdout+stderr))
	if err == nil {
		invalid, _ := localmode.ReadRayService(path)
		_, _, _ = d.s.Kubectl(ctx, "", "delete", "--ignore-not-found", "-f", path)
		return fmt.Errorf("the invalid RayService %s was accepted; admission should have rejected it", invalid.Name)
	}
	if !strings.Contains(stderr, "is invalid") {
		return fmt.Errorf("kubectl apply -f %s failed, but not with a validation error: %w", path, err)
	}
	d.printf("  rejected: nothing was stored, and every problem is listed by field path\n")
	return nil
}

// kubectl runs and echoes a kubectl command, as a user would see it.
func (d *demo) kubectl(ctx context.Context, echo bool, args ...string) error {
	if echo {
		d.printf("  $ kubectl %s\n", shellJoin(args))
	}
	stdout, stderr, err := d.s.Kubectl(ctx, "", args...)
	d.printf("%s", indentText(stdout+stderr))
	if err != nil {
		return fmt.Errorf("kubectl %s: %w", args[0], err)
	}
	return nil
}

// verdict reads the violations the environment's checker recorded during the demo.
func (d *demo) verdict() error {
	// The checker judges each change after re-reading it; give the last ones time to land.
	time.Sleep(2 * time.Second)
	vs, err := d.s.ViolationsSince(d.violationsFrom)
	if err != nil {
		return err
	}
	for _, r := range []string{invariants.RuleWeightsSum, invariants.RuleWithinCapacity, invariants.RuleTrafficToRunning, invariants.RuleDeleteAfterDelay, invariants.RuleActiveConfigFixed} {
		d.printf("  checked on every change: %s\n", r)
	}
	if len(vs) == 0 {
		d.printf("  every invariant held\n")
		return nil
	}
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = "  " + v.String()
	}
	return fmt.Errorf("%d invariant violation(s):\n%s", len(vs), strings.Join(lines, "\n"))
}

// tailViolations prints violations as the checker records them.
func (d *demo) tailViolations(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			vs, _ := d.s.ViolationsSince(d.violationsFrom)
			for _, v := range vs[min(seen, len(vs)):] {
				d.printf("  INVARIANT VIOLATED: %s\n", v)
			}
			seen = max(seen, len(vs))
		}
	}()
	return func() { cancel(); <-done }
}
