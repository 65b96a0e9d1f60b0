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
	watched []string // empty: every namespace
}

// podsOf builds the pods of an object and of the stored one (nil on create).
type podsOf func() (pods, stored []poddryrun.Pod)

// check dry-runs the pods of an object in namespace ns and merges what the API server said
// into validation's results. It sends nothing for an object being deleted, for an update
// that leaves spec and metadata as they were, in a namespace the operator does not watch,
// or when validation found errors other than Pod Security refusals (the API server's
// verdict may overrule those): the user fixes those first, and the next apply dry-runs the
// pods.
func (d podDryRun) check(ctx context.Context, ns string, obj, old metav1.Object, oldSpec, spec any, build podsOf, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	if d.checker == nil || obj.GetDeletionTimestamp() != nil || !poddryrun.OnlyPodSecurity(errs) ||
		(len(d.watched) > 0 && !slices.Contains(d.watched, ns)) {
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

// dryRun checks obj against old (nil on create) with check: specOf is what of an object's
// spec its pods come from, podsFor builds them.
func dryRun[P interface {
	comparable
	metav1.Object
}](ctx context.Context, d podDryRun, ns string, old, obj P, specOf func(P) any, podsFor func(P) []poddryrun.Pod, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	var none P
	var oldMeta metav1.Object
	var oldSpec any
	if old != none {
		oldMeta, oldSpec = old, specOf(old)
	}
	return d.check(ctx, ns, obj, oldMeta, oldSpec, specOf(obj), func() (pods, stored []poddryrun.Pod) {
		if old != none {
			stored = podsFor(old)
		}
		return podsFor(obj), stored
	}, errs, warnings)
}

func (d podDryRun) rayCluster(ctx context.Context, ns string, old, rc *rayv1.RayCluster, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	return dryRun(ctx, d, ns, old, rc, func(rc *rayv1.RayCluster) any { return &rc.Spec },
		func(rc *rayv1.RayCluster) []poddryrun.Pod {
			return poddryrun.RayClusterPods(rc, ns, d.policy.PodSettings)
		}, errs, warnings)
}

func (d podDryRun) rayService(ctx context.Context, ns string, old, svc *rayv1.RayService, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	return dryRun(ctx, d, ns, old, svc, func(svc *rayv1.RayService) any { return &svc.Spec.RayClusterSpec },
		func(svc *rayv1.RayService) []poddryrun.Pod {
			return poddryrun.RayServicePods(svc, ns, d.policy.PodSettings)
		}, errs, warnings)
}

func (d podDryRun) rayJob(ctx context.Context, ns string, old, job *rayv1.RayJob, errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	return dryRun(ctx, d, ns, old, job, func(job *rayv1.RayJob) any { return &job.Spec },
		func(job *rayv1.RayJob) []poddryrun.Pod {
			return poddryrun.RayJobPods(job, ns, d.gates, d.policy.PodSettings)
		}, errs, warnings)
}
