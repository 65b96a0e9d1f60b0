package main

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

// gatePolicyName is the UpgradePolicy `--gate` applies.
const gatePolicyName = "demo-error-ratio"

// gatePolicy is that policy: docs/rayservice.md's error-ratio gate on the pending cluster's
// Ray Serve series, with `or vector(0)` so that "no request yet" passes (before the first
// traffic step the pending cluster answers none).
func gatePolicy(namespace string) string {
	return fmt.Sprintf(`apiVersion: raygate.ray.io/v1alpha1
kind: UpgradePolicy
metadata:
  name: %s
  namespace: %s
spec:
  onFailure: Pause
  gates:
  - name: error-ratio
    query: |
      (sum(rate(ray_serve_num_http_error_requests_total{namespace="{{namespace}}",pod=~"{{pending}}-.*"}[1m]))
      / sum(rate(ray_serve_num_http_requests_total{namespace="{{namespace}}",pod=~"{{pending}}-.*"}[1m])))
      or vector(0)
    max: "0.01"
`, gatePolicyName, namespace)
}

// applyGate puts the upgrade of svc under the demo's UpgradePolicy.
func (d *demo) applyGate(ctx context.Context, svc *rayv1.RayService) error {
	u := d.s.PrometheusURL()
	if u == "" {
		return errors.New("--gate needs the local environment's Prometheus, which this one runs without (make run ARGS=\"--prometheus=false\")")
	}
	d.printf("  --gate: each traffic step waits for an UpgradePolicy gate that raygate evaluates on Prometheus (%s):\n", u)
	policy := gatePolicy(svc.Namespace)
	d.printf("  $ kubectl apply -f - <<EOF\n%s  EOF\n", indentText(policy))
	stdout, stderr, err := d.s.Kubectl(ctx, policy, "apply", "-f", "-")
	d.printf("%s", indentText(stdout+stderr))
	if err != nil {
		return fmt.Errorf("kubectl apply the UpgradePolicy: %w", err)
	}
	return d.kubectl(ctx, true, "annotate", "rayservice", svc.Name, "--overwrite", raygatev1alpha1.UpgradePolicyAnnotation+"="+gatePolicyName)
}

// removeGate takes the RayService out of the policy again, so a later upgrade is not gated.
func (d *demo) removeGate(ctx context.Context, svc *rayv1.RayService) error {
	return d.kubectl(ctx, true, "annotate", "rayservice", svc.Name, raygatev1alpha1.UpgradePolicyAnnotation+"-")
}

// gateWatch follows the UpgradeGates condition of a gated upgrade.
type gateWatch struct {
	last   string // status/reason/message last reported
	passed int    // evaluations seen passing (each change of the message counts)
}

// observe reports the UpgradeGates condition when it changed ("": unchanged or absent).
func (g *gateWatch) observe(svc *rayv1.RayService) string {
	if g == nil {
		return ""
	}
	c := meta.FindStatusCondition(svc.Status.Conditions, raygatev1alpha1.UpgradeGatesCondition)
	if c == nil {
		return ""
	}
	now := fmt.Sprintf("%s %s %s: %s", raygatev1alpha1.UpgradeGatesCondition, c.Status, c.Reason, c.Message)
	if now == g.last {
		return ""
	}
	g.last = now
	if c.Reason == raygatev1alpha1.GatesPassed {
		g.passed++
	}
	return now
}

// verdict fails a gated upgrade whose gates were never seen passing.
func (g *gateWatch) verdict() error {
	if g == nil || g.passed > 0 {
		return nil
	}
	if g.last == "" {
		return errors.New("--gate: the RayService never reported an UpgradeGates condition")
	}
	return fmt.Errorf("--gate: the gates were never seen passing (last: %s)", g.last)
}
