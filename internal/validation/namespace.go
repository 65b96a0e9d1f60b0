package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/podquota"
	"github.com/raygate/raygate/internal/podsecurity"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// Namespace is what the validating webhook knows about the namespace of the object it
// admits: the platform's constraints on the pods raygate will create there.
type Namespace struct {
	// Name of the namespace.
	Name string
	// Labels are the namespace's labels, read for its Pod Security levels. LabelsKnown is
	// false when they could not be read; Pod Security is not checked then (the API server
	// still enforces it when raygate creates the pods).
	Labels      map[string]string
	LabelsKnown bool
	// Quotas are the namespace's ResourceQuotas (warnings only).
	Quotas []corev1.ResourceQuota
}

// podSecurityEvaluator holds the library's checks; it is read-only once built.
var podSecurityEvaluator = podsecurity.NewEvaluator()

// podSecurity evaluates the pods raygate would create for a (defaulted) cluster against the
// namespace's Pod Security labels: a violation of the enforce level is an error at the field
// that causes it, the warn and audit levels give warnings. On update an error counts only if
// the stored object did not already have it (same field, same check), so a cluster created
// before its namespace was labelled can still be scaled and relabelled, by the autoscaler
// and by Kueue.
func (c *check) podSecurity(ns *Namespace, old, rc *rayv1.RayCluster, path *field.Path) (field.ErrorList, []string) {
	memo := &podsecurity.Memo{}
	return c.podSecurityOf(ns, func(lv api.LevelVersion, ofStored bool) []podsecurity.Violation {
		if ofStored {
			return podSecurityEvaluator.ClusterWith(memo, lv, old, path, c.policy.PodSettings)
		}
		return podSecurityEvaluator.ClusterWith(memo, lv, rc, path, c.policy.PodSettings)
	}, old != nil)
}

// podSecurityOf is podSecurity for any pods: evaluate returns the violations of the
// object's pods at a level (of the stored object's, with ofStored, on update).
func (c *check) podSecurityOf(ns *Namespace, evaluate func(lv api.LevelVersion, ofStored bool) []podsecurity.Violation, update bool) (field.ErrorList, []string) {
	mode := c.policy.PodSecurity
	if ns == nil || !ns.LabelsKnown || mode == PodSecurityOff || slices.Contains(c.policy.PodSecurityExemptNamespaces, ns.Name) {
		return nil, nil
	}
	p := podsecurity.NamespacePolicy(ns.Labels)
	enforced := evaluate(p.Enforce, false)
	var errs field.ErrorList
	var warnings []string
	if len(enforced) > 0 {
		stored := map[string]bool{}
		if update {
			for _, v := range evaluate(p.Enforce, true) {
				stored[v.Path.String()+"/"+v.Check] = true
			}
		}
		for _, v := range enforced {
			if stored[v.Path.String()+"/"+v.Check] {
				continue
			}
			if mode == PodSecurityWarn {
				warnings = append(warnings, fmt.Sprintf(WarnPodSecurityEnforce, v.Path, p.Enforce.String(), v.Message))
				continue
			}
			errs = append(errs, c.decide(field.Forbidden(v.Path, fmt.Sprintf("violates PodSecurity %q: %s", p.Enforce.String(), v.Message)))...)
		}
	}
	if len(errs) > 0 {
		return errs, nil // the API server does not warn about a pod it refuses either
	}
	checked := []api.LevelVersion{p.Enforce}
	for _, lv := range []struct {
		lv     api.LevelVersion
		format string
	}{{p.Warn, WarnPodSecurity}, {p.Audit, WarnPodSecurityAudit}} {
		if slices.ContainsFunc(checked, func(c api.LevelVersion) bool { return c.Equivalent(&lv.lv) }) {
			continue // the same evaluation as one already reported
		}
		checked = append(checked, lv.lv)
		for _, v := range evaluate(lv.lv, false) {
			warnings = append(warnings, fmt.Sprintf(lv.format, v.Path, lv.lv.String(), v.Message))
		}
	}
	return nil, warnings
}

// quotaWarnings warns when the pods a cluster asks for do not fit in the namespace's
// ResourceQuotas (hard minus used). On update only what the change adds is counted: the
// stored cluster's pods are in "used" already.
func quotaWarnings(ns *Namespace, old, rc *rayv1.RayCluster, path *field.Path, s raypod.Settings) []string {
	if ns == nil || len(ns.Quotas) == 0 {
		return nil
	}
	pods, ok := podquota.ClusterPods(rc, s)
	var oldPods []podquota.Pods
	if old != nil && ok {
		oldPods, ok = podquota.ClusterPods(old, s)
	}
	if !ok {
		return []string{fmt.Sprintf(WarnQuotaNotChecked, path, podquota.MaxPodKinds)}
	}
	return podQuotaWarnings(ns, oldPods, pods, old != nil, path, fmt.Sprintf("the cluster's %d pods", countPods(pods)))
}

// podQuotaWarnings warns when pods (what, e.g. "the cluster's 4 pods") do not fit in the
// namespace's quotas; on update only what they add to oldPods counts.
func podQuotaWarnings(ns *Namespace, oldPods, pods []podquota.Pods, update bool, path *field.Path, what string) []string {
	var warnings []string
	for _, q := range quotasByName(ns) {
		need, what := podquota.Demand(q, pods), what
		if update {
			need = podquota.Sub(need, podquota.Demand(q, oldPods))
			what = "the pods this change adds"
		}
		if s := podquota.Shortfalls(q, need); len(s) > 0 {
			warnings = append(warnings, fmt.Sprintf(WarnQuotaExceeded, path, what, q.Name, joinShortfalls(s)))
		}
		warnings = append(warnings, missingRequestWarnings(q, oldPods, pods, update, path)...)
	}
	return warnings
}

// upgradeQuotaWarnings warns when a RayService update starts an upgrade whose new cluster
// the namespace's quotas cannot hold next to the current one: NewCluster needs room for the
// whole new cluster, an incremental upgrade for its head and maxSurgePercent of its workers.
// It returns ok=false when the update starts no upgrade (ok=true without quotas: the
// caller then has no quota to warn about either).
func upgradeQuotaWarnings(ns *Namespace, old, svc *rayv1.RayService, s raypod.Settings) ([]string, bool) {
	if ns == nil || len(ns.Quotas) == 0 {
		return nil, true // nothing to warn about either way; spares hashing both specs
	}
	strategy := effectiveStrategy(&svc.Spec)
	t := *strategy.Type
	if t == rayv1.None || UpgradeInProgress(old) || !startsNewCluster(&old.Spec.RayClusterSpec, &svc.Spec.RayClusterSpec) {
		return nil, false
	}
	pods, ok := podquota.ClusterPods(podsecurity.ClusterOf(svc), s)
	if !ok {
		return []string{fmt.Sprintf(WarnQuotaNotChecked, rayClusterConfigPath, podquota.MaxPodKinds)}, true
	}
	what := fmt.Sprintf("the new cluster's %d pods", countPods(pods))
	if t == rayv1.NewClusterWithIncrementalUpgrade && strategy.ClusterUpgradeOptions != nil {
		surge := ptr.Deref(strategy.ClusterUpgradeOptions.MaxSurgePercent, defaulting.MaxSurgePercent)
		pods = podquota.Surge(pods, surge)
		what = fmt.Sprintf("up to %d more pods (the new cluster's head and maxSurgePercent %d%% of its workers)", countPods(pods), surge)
	}
	var warnings []string
	for _, q := range quotasByName(ns) {
		if s := podquota.Shortfalls(q, podquota.Demand(q, pods)); len(s) > 0 {
			warnings = append(warnings, fmt.Sprintf(WarnQuotaUpgrade, rayClusterConfigPath, t, what, q.Name, joinShortfalls(s)))
		}
	}
	return warnings, true
}

// startsNewCluster reports whether a RayService's cluster spec changed in a way its
// controller answers with a new cluster: anything but replicas, tolerations, scheduling
// gates and appended worker groups (the controller's spec hash).
func startsNewCluster(old, spec *rayv1.RayClusterSpec) bool {
	oldHash, err1 := rayspec.SpecHash(*old)
	newHash, err2 := rayspec.SpecHash(*spec)
	if err1 != nil || err2 != nil || oldHash == newHash {
		return false
	}
	if n := len(old.WorkerGroupSpecs); n > 0 && len(spec.WorkerGroupSpecs) > n {
		if prefix, err := rayspec.SpecHash(rayspec.FirstWorkerGroups(*spec, n)); err == nil && prefix == oldHash {
			return false // groups appended: updated in place
		}
	}
	return true
}

// missingRequestWarnings: a quota on cpu or memory makes the API server refuse pods with a
// container that does not set them. On update only a newly missing setting warns.
func missingRequestWarnings(q *corev1.ResourceQuota, oldPods, pods []podquota.Pods, update bool, path *field.Path) []string {
	missing := podquota.MissingRequests(q, pods)
	var before map[corev1.ResourceName][]string
	if update {
		before = podquota.MissingRequests(q, oldPods)
	}
	var warnings []string
	for _, name := range sortedResourceNames(missing) {
		if update && slices.Equal(before[name], missing[name]) {
			continue
		}
		warnings = append(warnings, fmt.Sprintf(WarnQuotaMissingRequests, path, q.Name, name, strings.Join(missing[name], ", ")))
	}
	return warnings
}

func sortedResourceNames[V any](m map[corev1.ResourceName]V) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// quotasByName orders the namespace's quotas by name, so warnings come in a stable order.
func quotasByName(ns *Namespace) []*corev1.ResourceQuota {
	out := make([]*corev1.ResourceQuota, len(ns.Quotas))
	for i := range ns.Quotas {
		out[i] = &ns.Quotas[i]
	}
	slices.SortFunc(out, func(a, b *corev1.ResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func countPods(pods []podquota.Pods) int64 {
	var n int64
	for _, p := range pods {
		n = satAdd(n, p.Count)
	}
	return n
}

func joinShortfalls(s []podquota.Shortfall) string {
	parts := make([]string, len(s))
	for i := range s {
		parts[i] = s[i].String()
	}
	return strings.Join(parts, "; ")
}
