// Command local is `make run`: raygate on a local control plane with simulated pods, Ray
// dashboards and Gateway, where a newcomer can watch it work without a Kubernetes cluster.
// It starts everything (see package internal/localmode), applies the incremental-upgrade sample,
// waits until the RayService is Ready, prints what to try next and runs until Ctrl-C, which
// stops everything it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/testenv/invariants"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o localmode.Options
	fs.StringVar(&o.Dir, "dir", localmode.DefaultDir(), "state directory: kubeconfig, raygate.log and the components' logs")
	fs.IntVar(&o.Nodes, "nodes", 3, "number of simulated Nodes")
	fs.DurationVar(&o.DeployDelay, "deploy-delay", 5*time.Second, "how long simulated Serve applications stay DEPLOYING")
	fs.StringVar(&o.LogLevel, "log-level", "info", "raygate's log level (debug, info, warn, error)")
	withPrometheus := fs.Bool("prometheus", true, "start Prometheus on 127.0.0.1, scraping raygate, Traefik and the simulated Ray pods, as raygate's --prometheus-url (UpgradePolicy gates)")
	sample := fs.String("sample", localmode.SamplePath(localmode.IncrementalSample), "RayService manifest to apply once raygate runs; empty: none")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o.Progress = stdout
	o.NoPrometheus = !*withPrometheus
	// The checker watches every upgrade in namespace default; a violation is news.
	o.OnViolation = func(v invariants.Violation) { fmt.Fprintf(stderr, "INVARIANT VIOLATED: %s\n", v) }

	// The first Ctrl-C stops everything cleanly; a second one exits at once (the next run
	// stops whatever that leaves behind).
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		<-again
		fmt.Fprintln(stderr, "raygate local: interrupted twice, exiting now")
		os.Exit(1)
	}()

	start := time.Now()
	env, err := localmode.Start(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "raygate local:", err)
		return 1
	}
	fmt.Fprintf(stdout, "raygate is running (%s). kubeconfig: %s\n", time.Since(start).Round(100*time.Millisecond), env.Kubeconfig)
	if u := env.PrometheusURL(); u != "" {
		fmt.Fprintf(stdout, "Prometheus: %s (scrapes raygate, Traefik and the simulated Ray pods; raygate's --prometheus-url)\n", u)
	}

	code := 0
	if err := showSample(ctx, env, *sample, stdout); err != nil {
		if ctx.Err() == nil {
			fmt.Fprintln(stderr, "raygate local:", err)
			fmt.Fprintf(stderr, "raygate's log: %s\n", env.OperatorLog())
			code = 1
		}
	} else {
		fmt.Fprintln(stdout, "Ctrl-C stops everything.")
		code = wait(ctx, env, stderr)
	}

	fmt.Fprintln(stdout, "\nstopping raygate and the local control plane...")
	if err := env.Stop(); err != nil {
		fmt.Fprintln(stderr, "raygate local: stopping:", err)
		return 1
	}
	fmt.Fprintln(stdout, "stopped.")
	return code
}

// showSample applies the sample, waits for it to be Ready and prints what to try next.
func showSample(ctx context.Context, env *localmode.Env, path string, out io.Writer) error {
	if path == "" {
		fmt.Fprint(out, nextSteps(env, nil, ""))
		return nil
	}
	svc, err := localmode.ReadRayService(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n$ kubectl apply -f %s\n", path)
	stdout, stderr, err := env.Kubectl(ctx, "", "apply", "-f", path)
	fmt.Fprint(out, stdout, stderr)
	if err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w", path, err)
	}
	fmt.Fprintf(out, "\nwaiting for RayService %s to be Ready (pods are simulated by kwok, Ray dashboards by raygate's simulator):\n", svc.Name)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	ready, err := localmode.WaitReady(wctx, env.Client, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, func(since time.Duration, line string) {
		fmt.Fprintf(out, "  %6.1fs  %s\n", since.Seconds(), line)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nRayService Ready: %s serves from RayCluster %s (%s)\n", ready.Name, ready.Status.ActiveServiceStatus.RayClusterName, time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(out, "\nPod Security at admission: namespace %s enforces the restricted standard, so admission refuses the RayCluster sample, whose pods would be refused:\n\n", localmode.RestrictedNamespace)
	transcript, err := localmode.ShowPodSecurity(ctx, &env.Session)
	fmt.Fprint(out, indent(transcript))
	if err != nil {
		return err
	}
	fmt.Fprint(out, nextSteps(env, ready, gatewayCurl(ctx, env, ready)))
	return nil
}

// gatewayCurl is a curl command that sends a request through Traefik to the first Serve
// application of svc, or "" when the serve pods' addresses are not all on loopback (then
// no request may be sent to them).
func gatewayCurl(ctx context.Context, env *localmode.Env, svc *rayv1.RayService) string {
	addrs, err := localmode.ServeAddresses(ctx, env.Client, svc.Namespace, svc.Status.ActiveServiceStatus.RayClusterName)
	prefixes := localmode.RoutePrefixes(svc.Spec.ServeConfigV2)
	if err != nil || !localmode.AllLoopback(addrs) || len(prefixes) == 0 {
		return ""
	}
	return fmt.Sprintf("curl -s %s%s", env.Gateway.URL(), prefixes[0])
}

// indent prints a transcript two spaces in.
func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}

// wait runs until Ctrl-C, or until a component of the control plane dies.
func wait(ctx context.Context, env *localmode.Env, stderr io.Writer) int {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
			if err := env.Healthy(); err != nil {
				fmt.Fprintln(stderr, "raygate local:", err)
				return 1
			}
		}
	}
}
