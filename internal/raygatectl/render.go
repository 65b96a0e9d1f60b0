// Package raygatectl is kubectl raygate: a live view of a RayService's upgrade, the
// upgrade actions (pause, resume, abort, promote) and why an upgrade waits; and a RayJob's
// status and why it is where it is. The views are pure functions of the objects read, so
// their output is tested as golden text.
package raygatectl

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	"github.com/raygate/raygate/internal/rayspec"
)

// View is what status and why read: the RayService and, for the incremental strategy, its
// HTTPRoute (nil when there is none).
type View struct {
	Service *rayv1.RayService
	Route   *gwv1.HTTPRoute
	// Now is when the view is rendered, for the time to the next step.
	Now time.Time
}

// strategy is the RayService's upgrade strategy as stored (NewCluster when unset).
func strategy(svc *rayv1.RayService) rayv1.RayServiceUpgradeType {
	if s := svc.Spec.UpgradeStrategy; s != nil && s.Type != nil {
		return *s.Type
	}
	return rayv1.NewCluster
}

// interval is the incremental strategy's intervalSeconds (0: not set).
func interval(svc *rayv1.RayService) time.Duration {
	if s := svc.Spec.UpgradeStrategy; s != nil && s.ClusterUpgradeOptions != nil {
		return time.Duration(ptr.Deref(s.ClusterUpgradeOptions.IntervalSeconds, 0)) * time.Second
	}
	return 0
}

// RenderStatus writes the live view: the conditions that matter, one line per cluster
// (capacity, traffic recorded and on the route, workers, applications), the pending action
// and when the next traffic step is due.
func RenderStatus(w io.Writer, v View) error {
	svc := v.Service
	st := &svc.Status
	var b strings.Builder
	fmt.Fprintf(&b, "RayService %s/%s (strategy %s, generation %d, observed %d)\n", svc.Namespace, svc.Name, strategy(svc), svc.Generation, st.ObservedGeneration)
	fmt.Fprintf(&b, "Ready:     %s\n", conditionLine(st.Conditions, rayv1.RayServiceReady))
	fmt.Fprintf(&b, "Upgrade:   %s\n", conditionLine(st.Conditions, rayv1.UpgradeInProgress))
	if c := meta.FindStatusCondition(st.Conditions, string(rayv1.RollbackInProgress)); c != nil && c.Status == metav1.ConditionTrue {
		fmt.Fprintf(&b, "Rollback:  %s\n", conditionLine(st.Conditions, rayv1.RollbackInProgress))
	}
	fmt.Fprintf(&b, "Action:    %s\n", actionLine(svc))
	if policy := svc.Annotations[raygatev1alpha1.UpgradePolicyAnnotation]; policy != "" {
		// The condition's message carries each gate's last value and bound.
		fmt.Fprintf(&b, "Gates:     UpgradePolicy %s: %s\n", policy, conditionLine(st.Conditions, raygatev1alpha1.UpgradeGatesCondition))
	}
	fmt.Fprintf(&b, "Next step: %s\n", nextStep(v))
	fmt.Fprintf(&b, "Endpoints: %d\n\n", st.NumServeEndpoints)

	weights := map[string]int32{}
	if v.Route != nil {
		weights = rayspec.RouteWeights(v.Route)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tCLUSTER\tCAPACITY\tTRAFFIC\tROUTE WEIGHT\tWORKERS\tAPPLICATIONS")
	for _, c := range []struct {
		role string
		s    *rayv1.RayServiceStatus
	}{{"active", &st.ActiveServiceStatus}, {"pending", &st.PendingServiceStatus}} {
		if c.s.RayClusterName == "" {
			continue
		}
		weight := "-"
		if w, ok := weights[c.s.RayClusterName]; ok {
			weight = fmt.Sprintf("%d%%", w)
		}
		rc := &c.s.RayClusterStatus
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", c.role, c.s.RayClusterName, pct(c.s.TargetCapacity), pct(c.s.TrafficRoutedPercent),
			weight, rc.ReadyWorkerReplicas, rc.DesiredWorkerReplicas, apps(c.s.Applications))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderWhy writes why the upgrade waits: the exact conditions it waits on, with their
// messages as the controller wrote them.
func RenderWhy(w io.Writer, v View) error {
	svc := v.Service
	st := &svc.Status
	var b strings.Builder
	switch {
	case st.PendingServiceStatus.RayClusterName == "" && st.ActiveServiceStatus.RayClusterName == "":
		fmt.Fprintf(&b, "RayService %s/%s has no cluster yet.\n", svc.Namespace, svc.Name)
		fmt.Fprintf(&b, "Ready: %s\n", conditionLine(st.Conditions, rayv1.RayServiceReady))
	case st.PendingServiceStatus.RayClusterName == "":
		fmt.Fprintf(&b, "No upgrade is running: RayCluster %s serves.\n", st.ActiveServiceStatus.RayClusterName)
	case st.ActiveServiceStatus.RayClusterName == "":
		fmt.Fprintf(&b, "The first cluster %s is being prepared.\n", st.PendingServiceStatus.RayClusterName)
		fmt.Fprintf(&b, "Ready: %s\n", conditionLine(st.Conditions, rayv1.RayServiceReady))
	default:
		fmt.Fprintf(&b, "Upgrading from %s to %s.\n", st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName)
		fmt.Fprintf(&b, "UpgradeInProgress: %s\n", conditionLine(st.Conditions, rayv1.UpgradeInProgress))
		if c := meta.FindStatusCondition(st.Conditions, string(rayv1.RollbackInProgress)); c != nil && c.Status == metav1.ConditionTrue {
			fmt.Fprintf(&b, "RollbackInProgress: %s\n", conditionLine(st.Conditions, rayv1.RollbackInProgress))
		}
		if n := nextStep(v); n != "-" {
			fmt.Fprintf(&b, "Next traffic step: %s\n", n)
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeAction)); c != nil {
		fmt.Fprintf(&b, "UpgradeAction: %s\n", conditionLine(st.Conditions, rayv1.UpgradeAction))
	}
	// A gate that failed, waits for data or cannot be evaluated holds the upgrade.
	if c := meta.FindStatusCondition(st.Conditions, raygatev1alpha1.UpgradeGatesCondition); c != nil && c.Status != metav1.ConditionTrue {
		fmt.Fprintf(&b, "%s: %s\n", raygatev1alpha1.UpgradeGatesCondition, conditionLine(st.Conditions, raygatev1alpha1.UpgradeGatesCondition))
	}
	for _, t := range []rayv1.RayServiceConditionType{rayv1.RayServiceOwnershipConflict, rayv1.UpgradeStrategyFallback} {
		if c := meta.FindStatusCondition(st.Conditions, string(t)); c != nil && c.Status == metav1.ConditionTrue {
			fmt.Fprintf(&b, "%s: %s\n", t, conditionLine(st.Conditions, t))
		}
	}
	if st.ObservedGeneration != svc.Generation {
		fmt.Fprintf(&b, "The controller has not seen generation %d yet (status is of generation %d).\n", svc.Generation, st.ObservedGeneration)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func conditionLine(conds []metav1.Condition, t rayv1.RayServiceConditionType) string {
	c := meta.FindStatusCondition(conds, string(t))
	if c == nil {
		return "-"
	}
	line := string(c.Status) + " (" + c.Reason + ")"
	if c.Message != "" {
		line += ": " + c.Message
	}
	return line
}

// actionLine is the action the annotations ask for and whether the controller took it up.
func actionLine(svc *rayv1.RayService) string {
	a := svc.Annotations[rayv1.UpgradeActionKey]
	if a == "" {
		return "none"
	}
	line := a
	if t := svc.Annotations[rayv1.UpgradeTargetKey]; t != "" {
		line += " " + t
	}
	if c := meta.FindStatusCondition(svc.Status.Conditions, string(rayv1.UpgradeAction)); c != nil {
		return line + " (" + c.Reason + ")"
	}
	return line + " (not in effect)"
}

// nextStep is when the next traffic step of an incremental upgrade is due: intervalSeconds
// after the last one, while the upgrade is not held.
func nextStep(v View) string {
	svc := v.Service
	p := &svc.Status.PendingServiceStatus
	if p.RayClusterName == "" || svc.Status.ActiveServiceStatus.RayClusterName == "" || strategy(svc) != rayv1.NewClusterWithIncrementalUpgrade {
		return "-"
	}
	if c := meta.FindStatusCondition(svc.Status.Conditions, string(rayv1.UpgradeAction)); c != nil && c.Reason == rayv1.UpgradePaused {
		return "none while paused"
	}
	if p.LastTrafficMigratedTime == nil {
		return "once the pending cluster's applications run and the route is programmed"
	}
	at := p.LastTrafficMigratedTime.Add(interval(svc))
	if !at.After(v.Now) {
		return at.UTC().Format(time.RFC3339) + " (due)"
	}
	return fmt.Sprintf("%s (in %s)", at.UTC().Format(time.RFC3339), at.Sub(v.Now).Round(time.Second))
}

func pct(v *int32) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%d%%", *v)
}

func apps(a map[string]rayv1.AppStatus) string {
	if len(a) == 0 {
		return "-"
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(a)) {
		out = append(out, name+" "+orDash(a[name].Status))
	}
	return strings.Join(out, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
