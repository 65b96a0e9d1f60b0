// Command demo is `make demo`: a scripted tour of raygate on the local environment. It
// attaches to a running `make run` (or starts its own environment), makes sure the
// incremental-upgrade sample is Ready, shows admission rejecting an invalid RayService,
// changes the Ray image to start an incremental upgrade and prints the capacity and traffic
// split as it moves, step by step, until the new cluster serves everything and the old one
// is deleted. It exits 0 only if the upgrade completed and every upgrade invariant held
// throughout: route weights sum to 100, no cluster gets more traffic than its capacity, no
// traffic to applications that are not all RUNNING, the old cluster deleted only after
// promotion and its delay, and the serving cluster never given the new serve config
// (checked by internal/testenv/invariants in the environment).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/raygate/raygate/internal/localmode"
)

// options are the demo's flags.
type options struct {
	dir     string
	timeout time.Duration
	// Pacing overrides for the upgrade (0 / -1: keep the sample's).
	interval, step, maxSurge int
	deletionDelay            int
	// rate is the load sent through the Gateway during the upgrade (requests/s, 0: none).
	rate int
	// pauseAt pauses the upgrade once the pending cluster has this share of the traffic,
	// then resumes and promotes it (0: no pause).
	pauseAt int
	// gate runs the upgrade under an UpgradePolicy gate evaluated by the environment's
	// Prometheus (gate.go).
	gate bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.dir, "dir", localmode.DefaultDir(), "state directory of the local environment (make run's, to attach to it)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.IntVar(&o.interval, "interval", 0, "set clusterUpgradeOptions.intervalSeconds for the upgrade (0: keep the sample's)")
	fs.IntVar(&o.step, "step", 0, "set clusterUpgradeOptions.stepSizePercent (0: keep the sample's)")
	fs.IntVar(&o.maxSurge, "max-surge", 0, "set clusterUpgradeOptions.maxSurgePercent (0: keep the sample's)")
	fs.IntVar(&o.deletionDelay, "deletion-delay", -1, "set rayClusterDeletionDelaySeconds (-1: keep the sample's)")
	fs.IntVar(&o.rate, "rate", 20, fmt.Sprintf("requests per second sent through the Gateway during the upgrade (0: none, at most %d); any failed request fails the demo", maxLoadRate))
	fs.IntVar(&o.pauseAt, "pause-at", 0, "pause the upgrade when the pending cluster has this percentage of the traffic (1-99), show it frozen, resume, then promote (0: off)")
	fs.BoolVar(&o.gate, "gate", false, "run the upgrade under an UpgradePolicy gate (the new cluster's Ray Serve error ratio at most 1%) that raygate evaluates on the local Prometheus, and show its UpgradeGates condition")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.pauseAt < 0 || o.pauseAt > 99 || o.rate < 0 {
		fmt.Fprintln(stderr, "demo: --pause-at must be within 0-99 and --rate at least 0")
		return 2
	}

	interrupted, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(interrupted, o.timeout)
	defer cancelTimeout()

	start := time.Now()
	d := &demo{opts: o, out: stdout}
	err := d.run(ctx)
	if d.stop != nil {
		fmt.Fprintln(stdout, "\nstopping the local environment...")
		if serr := d.stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the local environment: %w", serr))
		}
	}
	switch {
	case err != nil && interrupted.Err() != nil:
		fmt.Fprintln(stderr, "\nraygate demo: interrupted")
		return 130
	case err != nil:
		fmt.Fprintf(stderr, "\nraygate demo FAILED after %s: %v\n", time.Since(start).Round(time.Second), err)
		return 1
	}
	fmt.Fprintf(stdout, "\nraygate demo passed in %s.\n", time.Since(start).Round(time.Second))
	return 0
}
