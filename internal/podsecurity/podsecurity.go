// Package podsecurity evaluates the pods raygate builds for a RayCluster (or a RayService's
// rayClusterConfig) against a namespace's Pod Security Standards, with the policy library the
// API server itself uses (k8s.io/pod-security-admission), and names for each violation the
// field of the RayCluster that causes it.
//
// The pods are built by internal/raypod, the code the RayCluster controller creates them
// with: the head (with the autoscaler sidecar when autoscaling is on) and one pod per worker
// group (with raygate's wait-gcs-ready init container). Verdicts and wording are the
// library's; this package only decides where in the RayCluster a violation comes from, by
// running the failing check again on parts of the pod (locate.go).
package podsecurity

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// Violation is one check a pod fails, at the field of the RayCluster that causes it.
type Violation struct {
	// Path is the field to change, e.g.
	// spec.workerGroupSpecs[1].template.spec.containers[0].securityContext.privileged.
	Path *field.Path
	// Check is the library's check ID, e.g. "privileged".
	Check string
	// Reason is the check's forbidden reason as the API server prints it, e.g. "privileged".
	Reason string
	// Message is the reason with its detail, as the API server prints it for a pod, e.g.
	// `privileged (container "ray-worker" must not set securityContext.privileged=true)`.
	Message string
}

// NamespacePolicy is the policy a namespace's labels ask for, read as the API server reads
// them with its default configuration (privileged:latest where a label is missing; an
// invalid enforce label means restricted:latest, invalid warn and audit labels fail open).
// Exemptions and defaults set in the API server's admission configuration cannot be seen
// from here.
func NamespacePolicy(labels map[string]string) api.Policy {
	privileged := api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()}
	p, _ := api.PolicyToEvaluate(labels, api.Policy{Enforce: privileged, Audit: privileged, Warn: privileged})
	return p
}

// Evaluator runs the library's default checks.
type Evaluator struct {
	checks     []policy.Check
	maxVersion api.Version
}

// NewEvaluator returns an evaluator of the Pod Security Standards as
// k8s.io/pod-security-admission defines them.
func NewEvaluator() *Evaluator {
	e := &Evaluator{checks: policy.DefaultChecks()}
	for _, c := range e.checks {
		if v := c.Versions[len(c.Versions)-1].MinimumVersion; e.maxVersion.Older(v) {
			e.maxVersion = v
		}
	}
	return e
}

// levelCheck is a check as it applies at one level and version.
type levelCheck struct {
	id policy.CheckID
	fn policy.CheckPodFn
}

// checksFor selects the checks of a level and version as the library's evaluator does:
// baseline checks, plus restricted ones at restricted level except the baseline checks they
// override; each in its newest version not newer than the policy's ("latest" and versions
// past the library's newest mean the newest). Baseline checks come first, each group sorted
// by ID, which is the order of the API server's message.
func (e *Evaluator) checksFor(lv api.LevelVersion) []levelCheck {
	if lv.Level == api.LevelPrivileged {
		return nil
	}
	v := lv.Version
	if v.Latest() || e.maxVersion.Older(v) {
		v = e.maxVersion
	}
	var baseline, restricted []levelCheck
	overridden := map[policy.CheckID]bool{}
	for _, c := range e.checks {
		if c.Level == api.LevelRestricted && lv.Level != api.LevelRestricted {
			continue
		}
		var chosen *policy.VersionedCheck
		for i := range c.Versions {
			if min := c.Versions[i].MinimumVersion; !v.Older(min) {
				chosen = &c.Versions[i]
			}
		}
		if chosen == nil {
			continue // the check is newer than the policy version
		}
		if c.Level == api.LevelRestricted {
			restricted = append(restricted, levelCheck{c.ID, chosen.CheckPod})
			for _, id := range chosen.OverrideCheckIDs {
				overridden[id] = true
			}
		} else {
			baseline = append(baseline, levelCheck{c.ID, chosen.CheckPod})
		}
	}
	baseline = slices.DeleteFunc(baseline, func(c levelCheck) bool { return overridden[c.id] })
	byID := func(a, b levelCheck) int { return cmpString(string(a.id), string(b.id)) }
	slices.SortFunc(baseline, byID)
	slices.SortFunc(restricted, byID)
	return append(baseline, restricted...)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maxLocated bounds the violations of one object that are located field by field. Locating
// re-runs the checks per field of a failing template (docs/benchmarks.md has its cost) and an
// object may hold thousands of worker groups, so past the bound a failing template's
// violations are reported at its spec, with the checks' messages: the verdict stays exact, the
// webhook stays well inside its timeout.
const maxLocated = 200

// Cluster evaluates the pods raygate would create for a defaulted cluster at a level and
// version. specPath is where the cluster spec is in the object (spec for a RayCluster,
// spec.rayClusterConfig for a RayService). Each distinct pod template is evaluated once,
// whatever its replicas; groups without containers are skipped (validation reports them).
// s are the operator's pod settings, so the pods are exactly those it creates: its default
// sidecars, labels and annotations too. A sidecar's violation is reported at the template's
// containers, naming the sidecar and the setting it comes from.
func (e *Evaluator) Cluster(lv api.LevelVersion, rc *rayv1.RayCluster, specPath *field.Path, s raypod.Settings) []Violation {
	return e.ClusterWith(&Memo{}, lv, rc, specPath, s)
}

// Memo keeps what was found for each distinct worker template, so evaluating the stored
// and the updated object of one request finds each template's violations once.
type Memo struct{ found map[string][]located }

// ClusterWith is Cluster, remembering found violations in memo (not safe for concurrent use;
// one memo is for one s).
func (e *Evaluator) ClusterWith(memo *Memo, lv api.LevelVersion, rc *rayv1.RayCluster, specPath *field.Path, s raypod.Settings) []Violation {
	if memo.found == nil {
		memo.found = map[string][]located{}
	}
	checks := e.checksFor(lv)
	if len(checks) == 0 {
		return nil
	}
	var out []Violation
	head := &rc.Spec.HeadGroupSpec
	if len(head.Template.Spec.Containers) > 0 {
		pod := raypod.HeadPod(rc, "", s)
		tmpl := specPath.Child("headGroupSpec", "template")
		found := locatePod(checks, pod, originOf(&head.Template, pod, len(s.Defaults.HeadSidecars)))
		out = append(out, materialize(found, tmpl, specPath, "headSidecarContainers")...)
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		g := &rc.Spec.WorkerGroupSpecs[i]
		if len(g.Template.Spec.Containers) == 0 {
			continue
		}
		key, err := templateKey(&g.Template)
		key = lv.String() + "/" + key
		found, seen := memo.found[key]
		if !seen || err != nil {
			pod := raypod.WorkerPod(rc, g, nil, s)
			if len(out) < maxLocated {
				found = locatePod(checks, pod, originOf(&g.Template, pod, len(s.Defaults.WorkerSidecars)))
			} else {
				found = unlocated(checks, pod)
			}
			memo.found[key] = found
		}
		out = append(out, materialize(found, specPath.Child("workerGroupSpecs").Index(i).Child("template"), specPath, "workerSidecarContainers")...)
	}
	return out
}

// originOf says which containers of a pod built from tmpl came from where, the last sidecars
// of them being the admin's.
func originOf(tmpl *corev1.PodTemplateSpec, pod *corev1.Pod, sidecars int) origin {
	return origin{userContainers: len(tmpl.Spec.Containers), userInit: len(tmpl.Spec.InitContainers), firstSidecar: len(pod.Spec.Containers) - sidecars}
}

// templateKey identifies what of a worker template the checks can see: the template without
// the container fields no check reads (image, command, args, environment, resources), so
// groups that differ only in those are evaluated once.
func templateKey(t *corev1.PodTemplateSpec) (string, error) {
	t = t.DeepCopy()
	for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Image, c.ImagePullPolicy, c.Command, c.Args, c.WorkingDir = "", "", nil, nil, ""
			c.Env, c.EnvFrom, c.Resources = nil, nil, corev1.ResourceRequirements{}
		}
	}
	b, err := json.Marshal(t)
	return string(b), err
}

// ClusterOf is the RayCluster a RayService's controller builds from its rayClusterConfig, as
// far as its pods are concerned. Its spec shares maps, slices and pointers with svc (a deep
// copy was a noticeable share of a validating review's allocations: docs/benchmarks.md): it is
// for reading only, as the pod builders and checks it is passed to do.
func ClusterOf(svc *rayv1.RayService) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: map[string]string{
			rayv1.OriginatedFromCRNameLabelKey: svc.Name,
			rayv1.OriginatedFromCRDLabelKey:    rayv1.RayServiceKind,
		}},
		Spec: svc.Spec.RayClusterSpec,
	}
}

// materialize turns violations located in a pod into violations at the cluster's fields.
// sidecars is the setting of the operator's configuration the pod's admin sidecars come from.
func materialize(found []located, tmpl, specPath *field.Path, sidecars string) []Violation {
	out := make([]Violation, 0, len(found))
	for _, f := range found {
		msg := f.message
		if f.part.root == sidecarRoot {
			msg += fmt.Sprintf(" (a sidecar the operator adds to every such pod: %s of its configuration; ask the platform admin)", sidecars)
		}
		out = append(out, Violation{Path: f.part.path(tmpl, specPath), Check: string(f.check), Reason: f.reason, Message: msg})
	}
	return out
}
