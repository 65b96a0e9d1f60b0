package webhooks

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/poddryrun"
	"github.com/raygate/raygate/internal/validation"
)

// podDryRun asks the API server whether it would create the pods an object would get
// (internal/poddryrun), after raygate's own validation.
type podDryRun struct {
	checker *poddryrun.Checker // nil: --pod-dry-run=false
	policy  validation.Policy
	gates   features.Gates
}

// podsOf builds the pods of an object and of the stored one (nil on create).
type podsOf func() (pods, stored []poddryrun.Pod)

// check dry-runs the pods of an object in namespace ns and merges what the API server said
// into validation's results. It sends nothing for an object being deleted, for an update
// that leaves spec and metadata as they were, or when validation found errors other than
// Pod Security refusals (the API server's verdict may overrule those): the user fixes those
// first, and the next apply dry-runs the pods.
func (d podDryRun) check(ctx context.Context, ns string, obj, old metav1.Object, oldSpec, spec any, build podsOf, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	if d.checker == nil || obj.GetDeletionTimestamp() != nil || !poddryrun.OnlyPodSecurity(errs) {
		return errs, warnings
	}
	if old != nil && equality.Semantic.DeepEqual(oldSpec, spec) &&
		equality.Semantic.DeepEqual(old.GetLabels(), obj.GetLabels()) && equality.Semantic.DeepEqual(old.GetAnnotations(), obj.GetAnnotations()) {
		return errs, warnings
	}
	pods, stored := build()
	if len(pods) == 0 {
		return errs, warnings
	}
	mode := d.policy.PodSecurity
	if mode == "" {
		mode = validation.PodSecurityEnforce
	}
	if slices.Contains(d.policy.PodSecurityExemptNamespaces, ns) {
		mode = validation.PodSecurityOff
	}
	rep := d.checker.Check(ctx, poddryrun.Request{Namespace: ns, Pods: pods, Stored: stored, PodSecurity: mode, Budget: budgetOf(ctx)})
	if len(rep.Errors) > 0 {
		logf.FromContext(ctx).V(1).Info("the API server refuses the object's pods", "errors", len(rep.Errors))
	}
	return rep.Merge(errs, warnings)
}

func (d podDryRun) rayCluster(ctx context.Context, ns string, old, rc *rayv1.RayCluster, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	var oldMeta metav1.Object
	var oldSpec any
	if old != nil {
		oldMeta, oldSpec = old, &old.Spec
	}
	return d.check(ctx, ns, rc, oldMeta, oldSpec, &rc.Spec, func() (pods, stored []poddryrun.Pod) {
		if old != nil {
			stored = poddryrun.RayClusterPods(old, ns, d.policy.PodSettings)
		}
		return poddryrun.RayClusterPods(rc, ns, d.policy.PodSettings), stored
	}, errs, warnings)
}

func (d podDryRun) rayService(ctx context.Context, ns string, old, svc *rayv1.RayService, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	var oldMeta metav1.Object
	var oldSpec any
	if old != nil {
		oldMeta, oldSpec = old, &old.Spec.RayClusterSpec
	}
	return d.check(ctx, ns, svc, oldMeta, oldSpec, &svc.Spec.RayClusterSpec, func() (pods, stored []poddryrun.Pod) {
		if old != nil {
			stored = poddryrun.RayServicePods(old, ns, d.policy.PodSettings)
		}
		return poddryrun.RayServicePods(svc, ns, d.policy.PodSettings), stored
	}, errs, warnings)
}

func (d podDryRun) rayJob(ctx context.Context, ns string, old, job *rayv1.RayJob, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	var oldMeta metav1.Object
	var oldSpec any
	if old != nil {
		oldMeta, oldSpec = old, &old.Spec
	}
	return d.check(ctx, ns, job, oldMeta, oldSpec, &job.Spec, func() (pods, stored []poddryrun.Pod) {
		if old != nil {
			stored = poddryrun.RayJobPods(old, ns, d.gates, d.policy.PodSettings)
		}
		return poddryrun.RayJobPods(job, ns, d.gates, d.policy.PodSettings), stored
	}, errs, warnings)
}
