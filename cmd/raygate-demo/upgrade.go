package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/rayspec"
)

// upgradePatch changes the Ray image and, when the flags ask, the upgrade's pacing. "add"
// sets a member whether or not it exists.
func upgradePatch(svc *rayv1.RayService, image string, o options) string {
	ops := localmode.ImagePatchOps(svc, image)
	opt := "/spec/upgradeStrategy/clusterUpgradeOptions/"
	for _, p := range []struct {
		name string
		v    int
	}{{"maxSurgePercent", o.maxSurge}, {"stepSizePercent", o.step}, {"intervalSeconds", o.interval}} {
		if p.v > 0 {
			ops = append(ops, localmode.PatchOp{Op: "add", Path: opt + p.name, Value: p.v})
		}
	}
	if o.deletionDelay >= 0 {
		ops = append(ops, localmode.PatchOp{Op: "add", Path: "/spec/rayClusterDeletionDelaySeconds", Value: o.deletionDelay})
	}
	return localmode.MarshalPatch(ops)
}

// upgradeDone: the generation of the patch is observed, a new cluster serves, none is
// pending and the service is Ready.
func upgradeDone(svc *rayv1.RayService, generation int64, old string) bool {
	st := svc.Status
	return st.ObservedGeneration >= generation &&
		st.ActiveServiceStatus.RayClusterName != "" && st.ActiveServiceStatus.RayClusterName != old &&
		st.PendingServiceStatus.RayClusterName == "" &&
		meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceReady))
}

// upgrade patches the image and prints the split as it moves until the old cluster is gone.
func (d *demo) upgrade(ctx context.Context, svc *rayv1.RayService) error {
	from := localmode.RayImage(svc)
	to := localmode.NextImage(from)
	old := svc.Status.ActiveServiceStatus.RayClusterName
	d.printf("  change the Ray image %s → %s: raygate starts a new RayCluster and moves capacity and traffic to it\n", from, to)

	// Watch first, so the table starts before the first step.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	svcs, routes := follow(wctx, d.s.Client, svc.Namespace, svc.Name)
	var gates *gateWatch
	if d.opts.gate {
		if err := d.applyGate(ctx, svc); err != nil {
			return err
		}
		gates = &gateWatch{}
	}
	run := d.startLoad(ctx, svc)
	defer func() {
		if run != nil {
			run.Stop()
		}
	}()
	if err := d.kubectl(ctx, true, "patch", "rayservice", svc.Name, "--type=json", "-p", upgradePatch(svc, to, d.opts)); err != nil {
		return err
	}
	start := time.Now()
	var patched rayv1.RayService
	if err := d.s.Client.Get(ctx, client.ObjectKeyFromObject(svc), &patched); err != nil {
		return err
	}
	d.printPacing(&patched)
	var pause *pauser
	if d.opts.pauseAt > 0 {
		pause = &pauser{at: int32(d.opts.pauseAt), hold: holdFor(pacingInterval(&patched))}
		d.printf("  --pause-at %d: pause at %d%% of the traffic, resume, then promote\n", d.opts.pauseAt, d.opts.pauseAt)
	}

	d.printf("\n  clusters without the prefix %s-; ACTIVE CAP / PENDING CAP are Serve target capacities;\n", svc.Name)
	d.printf("  OK/FAILED and MEASURED SPLIT are the requests that finished during the row, and who answered them\n")
	d.printf("%s\n", header())
	var (
		cur     = &patched
		rt      = &gwv1.HTTPRoute{}
		traffic []int32
		tbl     = &table{d: d, service: svc.Name, namespace: svc.Namespace, start: start, results: resultsOf(run)}
		tick    = time.NewTicker(time.Second)
	)
	defer tick.Stop()
	if err := d.s.Client.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: rayspec.HTTPRouteName(svc.Name)}, rt); err != nil {
		rt = nil // shown as "-" until the watch delivers it
	}
	for {
		select {
		case <-ctx.Done():
			tbl.flush(time.Now())
			return fmt.Errorf("the upgrade did not finish: %w", ctx.Err())
		case o := <-svcs:
			cur = o.(*rayv1.RayService)
		case o := <-routes:
			rt = o.(*gwv1.HTTPRoute)
		case <-tick.C:
		}
		now := time.Now()
		s := splitOf(cur, rt)
		tbl.observe(s, now)
		if t := s.PendingTraffic; t != nil && *t > 0 && (len(traffic) == 0 || traffic[len(traffic)-1] != *t) {
			traffic = append(traffic, *t)
		}
		if note := gates.observe(cur); note != "" {
			tbl.flush(now)
			d.printf("  +%.1fs  %s\n", now.Sub(start).Seconds(), note)
		}
		action, note, err := pause.step(cur, s, now)
		if err != nil {
			tbl.flush(now)
			return err
		}
		if note != "" {
			tbl.flush(now)
			d.printf("  +%.1fs  %s\n", now.Sub(start).Seconds(), note)
		}
		if action != "" {
			if err := d.kubectl(ctx, true, "annotate", "rayservice", svc.Name, "--overwrite",
				rayv1.UpgradeActionKey+"="+action, rayv1.UpgradeTargetKey+"="+s.Pending); err != nil {
				return err
			}
		}
		if upgradeDone(cur, patched.Generation, old) {
			tbl.flush(now)
			break
		}
	}
	cancel()
	promoted := time.Since(start)
	delay := ptr.Deref(cur.Spec.RayClusterDeletionDelaySeconds, 60)
	d.printf("\n  +%.1fs  RayCluster %s promoted: it serves all traffic (traffic moved in %d steps: %s)\n",
		promoted.Seconds(), cur.Status.ActiveServiceStatus.RayClusterName, len(traffic), percents(traffic))
	d.printf("          RayCluster %s is deleted after rayClusterDeletionDelaySeconds (%ds)\n", old, delay)
	if err := waitGone(ctx, d.s.Client, types.NamespacedName{Namespace: svc.Namespace, Name: old}); err != nil {
		return err
	}
	d.printf("  +%.1fs  RayCluster %s deleted\n", time.Since(start).Seconds(), old)
	if gates != nil {
		if err := gates.verdict(); err != nil {
			return err
		}
		d.printf("  every traffic step waited for the gates of UpgradePolicy %s to pass\n", gatePolicyName)
		if err := d.removeGate(ctx, svc); err != nil {
			return err
		}
	}
	if pause != nil {
		// The action is inert once its upgrade ended; removing it keeps the object tidy.
		if err := d.kubectl(ctx, true, "annotate", "rayservice", svc.Name, rayv1.UpgradeActionKey+"-", rayv1.UpgradeTargetKey+"-"); err != nil {
			return err
		}
		if pause.phase != pausePromoting {
			return fmt.Errorf("--pause-at %d: the upgrade ended before the script did (it stopped at step %d of pause, resume, promote)", d.opts.pauseAt, pause.phase)
		}
	}
	err := d.loadVerdict(run)
	run = nil
	return err
}

// pacingInterval is the upgrade's intervalSeconds (0 when unset).
func pacingInterval(svc *rayv1.RayService) time.Duration {
	if s := svc.Spec.UpgradeStrategy; s != nil && s.ClusterUpgradeOptions != nil {
		return time.Duration(ptr.Deref(s.ClusterUpgradeOptions.IntervalSeconds, 0)) * time.Second
	}
	return 0
}

func (d *demo) printPacing(svc *rayv1.RayService) {
	o := rayv1.ClusterUpgradeOptions{}
	if s := svc.Spec.UpgradeStrategy; s != nil && s.ClusterUpgradeOptions != nil {
		o = *s.ClusterUpgradeOptions
	}
	d.printf("  pacing: maxSurgePercent %d, stepSizePercent %d, intervalSeconds %d, rayClusterDeletionDelaySeconds %d\n",
		ptr.Deref(o.MaxSurgePercent, 100), ptr.Deref(o.StepSizePercent, 0), ptr.Deref(o.IntervalSeconds, 0), ptr.Deref(svc.Spec.RayClusterDeletionDelaySeconds, 60))
}

func waitGone(ctx context.Context, c client.Client, key types.NamespacedName) error {
	for {
		var rc rayv1.RayCluster
		err := c.Get(ctx, key, &rc)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("RayCluster %s was not deleted: %w", key.Name, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func percents(v []int32) string {
	s := make([]string, len(v))
	for i, p := range v {
		s[i] = fmt.Sprintf("%d%%", p)
	}
	return strings.Join(s, " → ")
}

// shellJoin quotes arguments that need it, so a printed command can be pasted.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$`\\{}[]*?<>|&;()#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// indentText indents every line by two spaces.
func indentText(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ") + "\n"
}

// indent is a writer that indents what is written to w (whole lines at a time).
func indent(w io.Writer) io.Writer { return indentWriter{w} }

type indentWriter struct{ w io.Writer }

func (i indentWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(i.w, indentText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
