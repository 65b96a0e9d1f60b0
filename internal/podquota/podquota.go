// Package podquota computes what the pods raygate wants for a RayCluster charge to a
// namespace's ResourceQuotas, the way the API server's quota admission counts a pod, and
// which quotas cannot hold them.
//
// Pods are built by internal/raypod (the head with the autoscaler sidecar, workers with the
// wait-gcs-ready init container) and counted per distinct template. A pod's requests and
// limits are the upstream helpers' (k8s.io/component-helpers/resource: the larger of the init
// containers and the sum of the others, sidecars and pod overhead included), after the API
// server's defaulting of requests from limits. LimitRange defaults are not applied: a
// container without requests counts as none.
package podquota

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	quota "k8s.io/apiserver/pkg/quota/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// Pods is a number of identical pods.
type Pods struct {
	Pod   *corev1.Pod
	Count int64
}

// MaxPodKinds bounds the distinct pods (by what quota sees of them) ClusterPods builds for
// one cluster: building one costs tens of microseconds, and an object may hold thousands of
// worker groups.
const MaxPodKinds = 256

// ClusterPods are the pods a defaulted cluster asks for: the head, and for each worker
// group max(replicas, minReplicas) × numOfHosts pods; none while the cluster is suspended,
// none for a suspended group. Groups without containers are left out (validation reports
// them). Groups that quota cannot tell apart (same resources, scopes) share one pod; with
// more than MaxPodKinds kinds of pod, ok is false and the pods are not counted. s are the
// operator's pod settings: the admin's sidecars ask for resources too.
func ClusterPods(rc *rayv1.RayCluster, s raypod.Settings) (pods []Pods, ok bool) {
	if ptr.Deref(rc.Spec.Suspend, false) || len(rc.Spec.HeadGroupSpec.Template.Spec.Containers) == 0 {
		return nil, true
	}
	out := []Pods{{Pod: defaulted(raypod.HeadPod(rc, "", s)), Count: 1}}
	byKey := map[string]int{} // index in out of the pods of a quota key
	for i := range rc.Spec.WorkerGroupSpecs {
		g := &rc.Spec.WorkerGroupSpecs[i]
		if ptr.Deref(g.Suspend, false) || len(g.Template.Spec.Containers) == 0 {
			continue
		}
		hosts := int64(max(g.NumOfHosts, 1))
		n := max(int64(max(ptr.Deref(g.Replicas, 0), 0)), int64(max(ptr.Deref(g.MinReplicas, 0), 0))) * hosts
		if n == 0 {
			continue
		}
		key, err := quotaKey(&g.Template.Spec)
		if j, seen := byKey[key]; seen && err == nil {
			out[j].Count += n
			continue
		}
		if len(out) == MaxPodKinds {
			return nil, false
		}
		byKey[key] = len(out)
		out = append(out, Pods{Pod: defaulted(raypod.WorkerPod(rc, g, nil, s)), Count: n})
	}
	return out, true
}

// quotaKey identifies what of a worker template quota can see (resources, and what quota
// scopes select on), so groups that differ in nothing else are built once.
func quotaKey(s *corev1.PodSpec) (string, error) {
	type container struct {
		Resources     corev1.ResourceRequirements
		RestartPolicy *corev1.ContainerRestartPolicy
	}
	k := struct {
		Init, Containers      []container
		Overhead              corev1.ResourceList
		Resources             *corev1.ResourceRequirements
		PriorityClassName     string
		ActiveDeadlineSeconds *int64
		Affinity              *corev1.Affinity
	}{Overhead: s.Overhead, Resources: s.Resources, PriorityClassName: s.PriorityClassName, ActiveDeadlineSeconds: s.ActiveDeadlineSeconds, Affinity: s.Affinity}
	for _, c := range s.InitContainers {
		k.Init = append(k.Init, container{c.Resources, c.RestartPolicy})
	}
	for _, c := range s.Containers {
		k.Containers = append(k.Containers, container{c.Resources, c.RestartPolicy})
	}
	b, err := json.Marshal(k)
	return string(b), err
}

// Surge is the part of a cluster's pods that an incremental upgrade adds next to the old
// cluster: the head, and percent of each worker group's pods (rounded up).
func Surge(pods []Pods, percent int32) []Pods {
	out := make([]Pods, 0, len(pods))
	for i, p := range pods {
		if i > 0 { // the head is the first; a new cluster always has one
			p.Count = (p.Count*int64(percent) + 99) / 100
		}
		if p.Count > 0 {
			out = append(out, p)
		}
	}
	return out
}

// defaulted applies the API server's defaulting that quota sees: a container's requests
// default to its limits.
func defaulted(pod *corev1.Pod) *corev1.Pod {
	fill := func(cs []corev1.Container) {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
	fill(pod.Spec.InitContainers)
	fill(pod.Spec.Containers)
	return pod
}

// countName is the object count quota of pods.
const countName corev1.ResourceName = "count/pods"

// Usage is what one pod charges to quotas, as the API server's pod quota evaluator computes it.
func Usage(pod *corev1.Pod) corev1.ResourceList {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	out := corev1.ResourceList{countName: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("1")}
	set := func(name corev1.ResourceName, q resource.Quantity) { out[name] = q.DeepCopy() }
	for _, r := range []struct{ plain, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.plain]; ok {
			set(r.plain, q)
			set(r.req, q)
		}
		if q, ok := limits[r.plain]; ok {
			set(r.lim, q)
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			set(name, q)
			set(corev1.DefaultResourceRequestsPrefix+name, q)
		case extended(name):
			// Extended resources (nvidia.com/gpu) are quota'd only as requests.<name>.
			set(corev1.DefaultResourceRequestsPrefix+name, q)
		}
	}
	return out
}

// extended reports whether a resource is an extended resource: qualified by a domain other
// than kubernetes.io, and not a quota name itself.
func extended(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

// Demand is what the pods that a quota's scopes select charge to it, for the resources it
// limits.
func Demand(q *corev1.ResourceQuota, pods []Pods) corev1.ResourceList {
	hard := hardOf(q)
	total := corev1.ResourceList{}
	for _, p := range pods {
		if !Matches(q, p.Pod) {
			continue
		}
		for name, u := range quota.Mask(Usage(p.Pod), quota.ResourceNames(hard)) {
			u.Mul(p.Count)
			cur := total[name]
			cur.Add(u)
			total[name] = cur
		}
	}
	return total
}

func hardOf(q *corev1.ResourceQuota) corev1.ResourceList {
	if len(q.Status.Hard) > 0 {
		return q.Status.Hard
	}
	return q.Spec.Hard
}

// Shortfall is a resource a quota cannot give.
type Shortfall struct {
	Resource         corev1.ResourceName
	Need, Left       resource.Quantity
	Hard, Used       resource.Quantity
	Quota, Namespace string
}

func (s Shortfall) String() string {
	return fmt.Sprintf("%s %s, %s left (hard %s, used %s)", s.Resource, qty(s.Need), qty(s.Left), qty(s.Hard), qty(s.Used))
}

func qty(q resource.Quantity) string { return q.String() }

// Shortfalls lists the resources for which need is more than a quota has left (hard minus
// used, as the quota's status says; with no status yet, all of spec.hard).
func Shortfalls(q *corev1.ResourceQuota, need corev1.ResourceList) []Shortfall {
	hard := hardOf(q)
	var out []Shortfall
	for _, name := range sortedNames(need) {
		n := need[name]
		h, limited := hard[name]
		if !limited || n.Sign() <= 0 {
			continue
		}
		used := q.Status.Used[name]
		left := h.DeepCopy()
		left.Sub(used)
		if n.Cmp(left) > 0 {
			out = append(out, Shortfall{Resource: name, Need: n, Left: left, Hard: h, Used: used.DeepCopy(), Quota: q.Name, Namespace: q.Namespace})
		}
	}
	return out
}

// Sub is a − b for the resources of a, dropping what is not positive: the more a change
// needs than what it replaces.
func Sub(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range a {
		d := q.DeepCopy()
		if o, ok := b[name]; ok {
			d.Sub(o)
		}
		if d.Sign() > 0 {
			out[name] = d
		}
	}
	return out
}

// MissingRequests lists, for a quota that limits cpu or memory, the containers of the pods it
// selects that do not set them: the API server refuses such pods ("must specify ..."). Of
// groups that share a pod in ClusterPods, the first one's container names are given.
func MissingRequests(q *corev1.ResourceQuota, pods []Pods) map[corev1.ResourceName][]string {
	var required []corev1.ResourceName
	for _, name := range sortedNames(hardOf(q)) {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory:
			required = append(required, name)
		}
	}
	if len(required) == 0 {
		return nil
	}
	out := map[corev1.ResourceName][]string{}
	for _, p := range pods {
		if !Matches(q, p.Pod) || resourcehelper.IsPodLevelResourcesSet(p.Pod) {
			continue
		}
		for _, c := range append(append([]corev1.Container(nil), p.Pod.Spec.InitContainers...), p.Pod.Spec.Containers...) {
			has := Usage(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
			for _, name := range required {
				if _, ok := has[name]; !ok {
					out[name] = appendUnique(out[name], c.Name)
				}
			}
		}
	}
	return out
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := quota.ResourceNames(l)
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// Matches reports whether a quota's scopes select a pod, as the API server's pod quota
// evaluator decides: Terminating/NotTerminating (activeDeadlineSeconds), BestEffort/
// NotBestEffort (QoS), PriorityClass and CrossNamespacePodAffinity, from spec.scopes and
// spec.scopeSelector together.
func Matches(q *corev1.ResourceQuota, pod *corev1.Pod) bool {
	var reqs []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		reqs = append(reqs, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		reqs = append(reqs, q.Spec.ScopeSelector.MatchExpressions...)
	}
	for _, r := range reqs {
		if !matchesScope(r, pod) {
			return false
		}
	}
	return true
}

func matchesScope(r corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	switch r.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		return priorityClassMatches(r, pod.Spec.PriorityClassName)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod)
	}
	return false
}

func terminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// bestEffort: no container (nor the pod) requests or limits cpu or memory.
func bestEffort(pod *corev1.Pod) bool {
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		return false
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := l[name]; ok && !q.IsZero() {
					return false
				}
			}
		}
	}
	return true
}

func priorityClassMatches(r corev1.ScopedResourceSelectorRequirement, class string) bool {
	if r.Operator == corev1.ScopeSelectorOpExists {
		return class != ""
	}
	op := map[corev1.ScopeSelectorOperator]selection.Operator{
		corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
		corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
	}[r.Operator]
	req, err := labels.NewRequirement(string(corev1.ResourceQuotaScopePriorityClass), op, r.Values)
	if err != nil {
		return false
	}
	set := labels.Set{}
	if class != "" {
		set[string(corev1.ResourceQuotaScopePriorityClass)] = class
	}
	return labels.NewSelector().Add(*req).Matches(set)
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		terms = appendAffinityTerms(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		terms = appendAffinityTerms(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil })
}

func appendAffinityTerms(terms, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) []corev1.PodAffinityTerm {
	terms = append(terms, required...)
	for _, w := range preferred {
		terms = append(terms, w.PodAffinityTerm)
	}
	return terms
}
