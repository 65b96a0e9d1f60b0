package raycluster

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/rayspec"
)

// maxCreatesPerPass bounds the pods one pass creates (the ReplicaSet controller's burst), so
// a pass's work and memory follow the pods that exist, never the replicas a spec asks for.
// The pods it creates trigger the next pass, which creates more.
const maxCreatesPerPass = 500

// podsInput is everything planPods decides from, all of it read before planning.
type podsInput struct {
	// Cluster is the defaulted cluster; its Status is the status last written.
	Cluster *rayv1.RayCluster
	// Hash is the spec hash of the defaulted spec, recorded on the head pod.
	Hash string
	// Pods are the cluster's pods in the cache, terminating ones included.
	Pods []corev1.Pod
	// Pending holds the groups (expectations.HeadGroup for the head) whose last creates or
	// deletes the cache does not show yet; AnyPending is true when any group of the cluster,
	// even one no longer in the spec, has such changes.
	Pending    map[string]bool
	AnyPending bool
	// Conditions and Indexing are the RayClusterStatusConditions and RayMultiHostIndexing gates.
	Conditions bool
	Indexing   bool
	// RandomPodDelete is the operator's ENABLE_RANDOM_POD_DELETE=true.
	RandomPodDelete bool
	// OperatorVersion is this operator's version, recorded on the head pod.
	OperatorVersion string
}

// podPlan is what one pass does to the cluster's pods. applyPodPlan carries it out in this
// order: Restamp, DeleteAll, then each group's plan.
type podPlan struct {
	// Wait says why the pass does nothing (more) to the pods, for the log.
	Wait string
	// Restamp is a head pod built by another operator version, to be re-stamped with this
	// version and the spec hash.
	Restamp *corev1.Pod
	// DeleteAll deletes every pod of the cluster at once (suspend, Recreate).
	DeleteAll *deletion
	// Groups are the head's plan, then the worker groups' in spec order, up to the first
	// that ends the pass.
	Groups []groupPlan
}

// changesPods says whether applying the plan writes any pod (creates, deletes or restamps).
func (p podPlan) changesPods() bool {
	if p.Restamp != nil || p.DeleteAll != nil {
		return true
	}
	for _, g := range p.Groups {
		if g.DeleteAll != nil || len(g.Deletes) > 0 || g.Create.Pods() > 0 {
			return true
		}
	}
	return false
}

// handledWorkersToDelete are the worker groups whose workersToDelete the plan handles: they
// are cleared from the spec once the plan is carried out.
func (p podPlan) handledWorkersToDelete() []string {
	var groups []string
	for _, g := range p.Groups {
		if g.ClearWorkersToDelete {
			groups = append(groups, g.Group)
		}
	}
	return groups
}

// groupPlan is what one pass does to the head pod or to the pods of one worker group.
type groupPlan struct {
	// Group is the worker group's name, or expectations.HeadGroup.
	Group string
	// Spec is the worker group's spec, nil for the head.
	Spec *rayv1.WorkerGroupSpec
	// Wait says why nothing (more) is done to the group this pass, for the log.
	Wait string
	// DeleteAll deletes the group's pods at once (the group is suspended).
	DeleteAll *deletion
	// Deletes are deleted pod by pod, in order; each is reported in one event.
	Deletes []deletion
	Create  creation
	// ClearWorkersToDelete: the group's workersToDelete were handled and are removed from the
	// spec once the pass succeeded.
	ClearWorkersToDelete bool
	// MultipleHeads reports several head pods. raygate never picks the one to keep, so the
	// pass fails with this message until someone deletes the extra ones.
	MultipleHeads string
	// ReportSkippedRestart: the head pod is gone and deliberately not recreated; report it.
	ReportSkippedRestart bool
	// EndsPass: later groups wait for the next pass, which starts from what the cache then
	// shows (e.g. replacements are created once the deletions are visible).
	EndsPass bool
}

// deletion is a set of pods deleted for one reason.
type deletion struct {
	Pods   []corev1.Pod
	Reason string
}

// creation is the pods to create: Replicas × Hosts pods. A count, not a list, so nothing is
// allocated for pods that do not exist yet.
type creation struct {
	// Replicas is the number of new replicas; a replica of a single-host group is one pod.
	Replicas int
	// Hosts is the pods per replica: numOfHosts for a multi-host group managed in whole
	// replicas (RayMultiHostIndexing), else 1.
	Hosts int
	// Indices are the ray.io/worker-group-replica-index values of the new replicas under
	// RayMultiHostIndexing, nil otherwise.
	Indices []int
}

// Pods is the number of pods to create.
func (c creation) Pods() int { return c.Replicas * c.Hosts }

// planPods decides what a pass does to the pods, in order of precedence: suspend, Recreate,
// the head pod, then each worker group. A step that deletes pods ends the pass.
func planPods(in podsInput) podPlan {
	rc := in.Cluster
	all := active(in.Pods)
	suspend := ptr.Deref(rc.Spec.Suspend, false)
	state := suspendStatus(rc.Status.Conditions)
	if state == rayv1.RayClusterSuspending || (!in.Conditions && suspend) {
		d, wait := deleteAtOnce(all, "the cluster is suspended", in.AnyPending)
		return podPlan{DeleteAll: d, Wait: wait}
	}
	if in.Conditions && (state == rayv1.RayClusterSuspended || suspend) {
		return podPlan{Wait: "the cluster is suspended, or is once the status says Suspending"}
	}

	var plan podPlan
	heads := headPods(all)
	recreate, restamp := recreateDecision(&rc.Spec, heads, in.Hash, in.OperatorVersion)
	if restamp {
		plan.Restamp = &heads[0]
	}
	if recreate {
		plan.DeleteAll, plan.Wait = deleteAtOnce(all, "the spec changed and upgradeStrategy is Recreate", in.AnyPending)
		return plan
	}

	head := planHead(rc, heads, in.Pending[expectations.HeadGroup])
	plan.Groups = append(plan.Groups, head)
	if head.EndsPass {
		return plan
	}
	randomDelete := randomDeleteAllowed(rayspec.AutoscalingEnabled(&rc.Spec), in.RandomPodDelete)
	for i := range rc.Spec.WorkerGroupSpecs {
		g := &rc.Spec.WorkerGroupSpecs[i]
		group := planWorkerGroup(groupInput{
			Spec: g, Pods: groupPods(all, g.GroupName),
			Pending: in.Pending[g.GroupName], AnyPending: in.AnyPending,
			Indexing: in.Indexing, RandomDelete: randomDelete,
		})
		plan.Groups = append(plan.Groups, group)
		if group.EndsPass {
			break
		}
	}
	return plan
}

// deleteAtOnce deletes pods at once, unless the cache does not show the last deletions
// yet: they would be deleted and reported twice.
func deleteAtOnce(pods []corev1.Pod, why string, pending bool) (d *deletion, wait string) {
	switch {
	case len(pods) == 0:
		return nil, ""
	case pending:
		return nil, "earlier pod changes are not in the cache yet; " + why
	}
	return &deletion{Pods: pods, Reason: why}, ""
}

// planHead keeps exactly one healthy head pod.
func planHead(rc *rayv1.RayCluster, heads []corev1.Pod, pending bool) groupPlan {
	p := groupPlan{Group: expectations.HeadGroup}
	if pending {
		p.Wait = "head pod changes are not in the cache yet; the head is reconciled later"
		return p
	}
	switch len(heads) {
	case 0:
		if skipHeadRestart(rc) {
			// Report once, when the head pod disappears.
			p.ReportSkippedRestart = rc.Status.Head.PodName != ""
			p.Wait = "the head pod is not recreated: " + rayv1.DisableProvisionedHeadRestartKey + " is set"
			p.EndsPass = true
			return p
		}
		p.Create = creation{Replicas: 1, Hosts: 1}
	case 1:
		if del, why := shouldDeletePod(&heads[0]); del {
			// The replacement is created once the deletion is in the cache.
			p.Deletes = []deletion{{Pods: heads, Reason: why}}
			p.EndsPass = true
		}
	default:
		names := make([]string, len(heads))
		for i := range heads {
			names[i] = heads[i].Name
		}
		p.MultipleHeads = fmt.Sprintf("%d head pods found (%s); delete the extra ones, raygate never picks one", len(heads), strings.Join(names, ", "))
		p.EndsPass = true
	}
	return p
}

// groupInput is what planWorkerGroup decides one worker group from.
type groupInput struct {
	Spec *rayv1.WorkerGroupSpec
	// Pods are the group's active pods.
	Pods []corev1.Pod
	// Pending: the cache does not show the group's last creates or deletes yet.
	// AnyPending: the same for any group of the cluster.
	Pending, AnyPending bool
	// Indexing is the RayMultiHostIndexing gate.
	Indexing bool
	// RandomDelete: raygate picks the workers to remove on scale-down.
	RandomDelete bool
}

// planWorkerGroup keeps one worker group at its desired size, for single-host groups pod by
// pod and for multi-host groups (under RayMultiHostIndexing) in whole replicas: a replica
// missing a host or with a pod beyond repair is deleted entirely, and workersToDelete
// removes the replica of each named pod.
func planWorkerGroup(in groupInput) groupPlan {
	g := in.Spec
	p := groupPlan{Group: g.GroupName, Spec: g}
	if in.Pending {
		p.Wait = "worker pod changes are not in the cache yet; the group is reconciled later"
		return p
	}
	if ptr.Deref(g.Suspend, false) {
		p.DeleteAll, p.Wait = deleteAtOnce(in.Pods, "worker group "+g.GroupName+" is suspended", in.AnyPending)
		return p
	}

	indexing := in.Indexing && (rayspec.NumOfHosts(*g) <= 1 || !predatesIndexing(in.Pods))
	shape := groupShape{atomic: indexing && rayspec.NumOfHosts(*g) > 1, hosts: 1}
	if shape.atomic {
		shape.hosts = int(rayspec.NumOfHosts(*g))
	}
	units, orphans := workerUnits(in.Pods, shape.atomic)
	if repairs := shape.repairs(units, orphans); len(repairs) > 0 {
		// Replacements are created once the deletions are in the cache.
		p.Deletes, p.EndsPass = repairs, true
		return p
	}

	kept := units
	if names := g.ScaleStrategy.WorkersToDelete; len(names) > 0 {
		var named []workerUnit
		kept, named = splitNamed(units, names)
		p.Deletes = shape.deletions(named, func(u workerUnit) string {
			if shape.atomic {
				return "replica " + u.Name + " has a pod listed in workersToDelete"
			}
			return "listed in workersToDelete"
		})
		p.ClearWorkersToDelete = true
	}

	switch diff := shape.desired(g) - len(kept); {
	case diff > 0:
		p.Create = planCreation(kept, diff, shape.hosts, indexing)
	case diff < 0 && in.RandomDelete:
		// Without RandomDelete the autoscaler picks the workers to remove, through
		// workersToDelete.
		p.Deletes = append(p.Deletes, shape.deletions(unitsToRemove(kept, -diff, shape.atomic), func(u workerUnit) string {
			if shape.atomic {
				return "scaling down replica " + u.Name
			}
			return "scaling down"
		})...)
	}
	return p
}

// predatesIndexing reports whether a group's pods were all created without
// RayMultiHostIndexing (none carries a replica name). Such a group stays managed pod by pod
// until its pods are gone, so turning the gate on (it is on by default, and KubeRay v1.5.1
// has it off) never recreates running pods; a group with indexed replicas deletes strays.
func predatesIndexing(pods []corev1.Pod) bool {
	for i := range pods {
		if pods[i].Labels[rayv1.WorkerReplicaNameLabelKey] != "" {
			return false
		}
	}
	return len(pods) > 0
}

// planCreation creates diff replicas, at most maxCreatesPerPass pods (but at least one whole
// replica) per pass, with the smallest replica indices not in use.
func planCreation(kept []workerUnit, diff, hosts int, indexing bool) creation {
	c := creation{Replicas: min(diff, max(1, maxCreatesPerPass/hosts)), Hosts: hosts}
	if indexing {
		used := make(map[int]bool, len(kept))
		for _, u := range kept {
			used[u.Index] = true
		}
		c.Indices = freeIndices(used, c.Replicas)
	}
	return c
}

// groupShape says how a group's pods are managed: one by one (hosts 1), or atomically in
// replicas of hosts pods.
type groupShape struct {
	atomic bool
	hosts  int
}

// desired is the number of units the group should have.
func (s groupShape) desired(g *rayv1.WorkerGroupSpec) int {
	if s.atomic {
		return int(rayspec.WorkerGroupDesiredReplicas(*g))
	}
	return int(rayspec.WorkerGroupDesiredPods(*g))
}

// repairs are the deletions that make a group whole again, of the first kind found: pods
// outside any replica, replicas missing hosts, units with a pod beyond repair.
func (s groupShape) repairs(units []workerUnit, orphans []corev1.Pod) []deletion {
	if len(orphans) > 0 {
		return []deletion{{Pods: orphans, Reason: "not part of a multi-host replica"}}
	}
	if d := s.deletions(incomplete(units, s.hosts), func(u workerUnit) string {
		return fmt.Sprintf("replica %s has %d of %d hosts", u.Name, len(u.Pods), s.hosts)
	}); len(d) > 0 {
		return d
	}
	broken, whys := unhealthy(units)
	return s.deletions(broken, func(u workerUnit) string {
		if s.atomic {
			return "replica " + u.Name + ": " + whys[u.Name]
		}
		return whys[u.Name]
	})
}

// deletions deletes units: one deletion per replica of a multi-host group, so each event
// names its replica; one for all pods of a single-host group, whose event gives every
// distinct reason.
func (s groupShape) deletions(units []workerUnit, reason func(workerUnit) string) []deletion {
	if len(units) == 0 {
		return nil
	}
	if s.atomic {
		out := make([]deletion, 0, len(units))
		for _, u := range units {
			out = append(out, deletion{Pods: u.Pods, Reason: reason(u)})
		}
		return out
	}
	var d deletion
	var reasons []string
	seen := map[string]bool{}
	for _, u := range units {
		d.Pods = append(d.Pods, u.Pods...)
		if r := reason(u); !seen[r] {
			seen[r] = true
			reasons = append(reasons, r)
		}
	}
	d.Reason = strings.Join(reasons, "; ")
	return []deletion{d}
}
