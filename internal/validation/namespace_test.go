package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func labelled(labels ...string) *Namespace {
	ns := &Namespace{Name: "ns", Labels: map[string]string{}, LabelsKnown: true}
	for i := 0; i < len(labels); i += 2 {
		ns.Labels[labels[i]] = labels[i+1]
	}
	return ns
}

const (
	enforce = "pod-security.kubernetes.io/enforce"
	warn    = "pod-security.kubernetes.io/warn"
	audit   = "pod-security.kubernetes.io/audit"
)

func privilegedWorkers(rc *rayv1.RayCluster) {
	rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestPodSecurityAtAdmission(t *testing.T) {
	const privileged = `spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged`
	const detail = `privileged (containers "wait-gcs-ready", "ray-worker" must not set securityContext.privileged=true)`
	cases := map[string]struct {
		ns       *Namespace
		policy   Policy
		want     []string
		warnings []string
	}{
		"no namespace facts: not checked":     {ns: nil},
		"labels unknown: not checked":         {ns: &Namespace{Name: "ns", LabelsKnown: false}},
		"an unlabelled namespace: privileged": {ns: labelled()},
		"enforce baseline": {ns: labelled(enforce, "baseline"),
			want: []string{privileged + `: Forbidden: violates PodSecurity "baseline:latest": ` + detail}},
		"enforce with a version": {ns: labelled(enforce, "baseline", "pod-security.kubernetes.io/enforce-version", "v1.30"),
			want: []string{privileged + `: Forbidden: violates PodSecurity "baseline:v1.30": ` + detail}},
		"warn baseline": {ns: labelled(warn, "baseline"),
			warnings: []string{privileged + `: would violate PodSecurity "baseline:latest": ` + detail}},
		"audit baseline": {ns: labelled(audit, "baseline"),
			warnings: []string{privileged + `: would violate PodSecurity "baseline:latest", the namespace's audit level (recorded in the API server's audit log): ` + detail}},
		"warn and audit at the same level warn once": {ns: labelled(warn, "baseline", audit, "baseline"),
			warnings: []string{privileged + `: would violate PodSecurity "baseline:latest": ` + detail}},
		"exempt namespace": {ns: labelled(enforce, "baseline"), policy: Policy{PodSecurityExemptNamespaces: []string{"ns"}}},
		"check off":        {ns: labelled(enforce, "baseline"), policy: Policy{PodSecurity: PodSecurityOff}},
		"warn mode": {ns: labelled(enforce, "baseline"), policy: Policy{PodSecurity: PodSecurityWarn},
			warnings: []string{privileged + `: violates PodSecurity "baseline:latest": ` + detail + `; the API server will refuse these pods when raygate creates them`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := Validator{Policy: tc.policy}.AdmitRayCluster(tc.ns, nil, cluster(privilegedWorkers))
			diffWarnings(t, tc.want, errorStrings(errs))
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

// A cluster that MultiKueue runs in another cluster has no pods here.
func TestNamespaceRulesSkipClustersManagedElsewhere(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		privilegedWorkers(rc)
		rc.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
	})
	ns := labelled(enforce, "baseline")
	ns.Quotas = []corev1.ResourceQuota{quota("none", rl("pods", "0"), nil)}
	errs, warnings := Validator{}.AdmitRayCluster(ns, nil, rc)
	diffErrors(t, nil, errs)
	diffWarnings(t, nil, warnings)
}

// A cluster created before its namespace enforced a level can still be scaled and
// relabelled; a change that adds a violation is refused, naming only the new one.
func TestPodSecurityRatchets(t *testing.T) {
	ns := labelled(enforce, "baseline")
	v := Validator{}
	stored := cluster(privilegedWorkers)
	scaled := stored.DeepCopy()
	scaled.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
	scaled.Spec.WorkerGroupSpecs[0].Template.Spec.NodeSelector = map[string]string{"flavor": "on-demand"} // as Kueue does
	errs, _ := v.AdmitRayCluster(ns, stored, scaled)
	diffErrors(t, nil, errs)

	worse := scaled.DeepCopy()
	worse.Spec.HeadGroupSpec.Template.Spec.HostNetwork = true
	errs, _ = v.AdmitRayCluster(ns, stored, worse)
	diffErrors(t, field.ErrorList{field.Forbidden(p("spec.headGroupSpec.template.spec.hostNetwork"), "")}, errs)
}

func TestPodSecurityRayService(t *testing.T) {
	svc := service(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.HostPID = true
	})
	errs, _ := Validator{}.AdmitRayService(labelled(enforce, "baseline"), nil, svc)
	diffWarnings(t, []string{`spec.rayClusterConfig.headGroupSpec.template.spec.hostPID: Forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true)`}, errorStrings(errs))
}

func quota(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestQuotaWarnings(t *testing.T) {
	// The builders' cluster: a head of 1 CPU/2Gi and workers of 1 CPU/1Gi.
	ns := &Namespace{Name: "ns", Quotas: []corev1.ResourceQuota{
		quota("compute", rl("requests.cpu", "4", "limits.memory", "8Gi"), rl("requests.cpu", "2", "limits.memory", "1Gi")),
		quota("pods", rl("pods", "10", "requests.nvidia.com/gpu", "2"), rl("pods", "2")),
	}}
	big := cluster(func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
	_, warnings := Validator{}.AdmitRayCluster(ns, nil, big)
	diffWarnings(t, []string{
		`spec: the cluster's 4 pods do not fit in ResourceQuota "compute": requests.cpu 4, 2 left (hard 4, used 2); the API server will refuse the pods that do not fit when raygate creates them`,
	}, warnings)

	// On update, only what the change adds counts.
	stored := cluster(nil)
	_, warnings = Validator{}.AdmitRayCluster(ns, stored, big)
	diffWarnings(t, nil, warnings)
	bigger := big.DeepCopy()
	bigger.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](5)
	_, warnings = Validator{}.AdmitRayCluster(ns, stored, bigger)
	diffWarnings(t, []string{
		`spec: the pods this change adds do not fit in ResourceQuota "compute": requests.cpu 4, 2 left (hard 4, used 2); the API server will refuse the pods that do not fit when raygate creates them`,
	}, warnings)

	gpu := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
	})
	_, warnings = Validator{}.AdmitRayCluster(&Namespace{Name: "ns", Quotas: ns.Quotas[1:]}, nil, gpu)
	diffWarnings(t, []string{
		`spec: the cluster's 4 pods do not fit in ResourceQuota "pods": requests.nvidia.com/gpu 3, 2 left (hard 2, used 0); the API server will refuse the pods that do not fit when raygate creates them`,
	}, warnings)

	noLimits := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	})
	_, warnings = Validator{}.AdmitRayCluster(&Namespace{Name: "ns", Quotas: []corev1.ResourceQuota{quota("mem", rl("limits.memory", "100Gi"), nil)}}, nil, noLimits)
	diffWarnings(t, []string{`spec: ResourceQuota "mem" limits limits.memory, so the API server refuses pods with a container that does not set it: ray-worker`}, warnings)
}

func TestQuotaWarningsForUpgrades(t *testing.T) {
	// room for one more head (1 CPU) and worker, not for a whole second cluster of 1 head + 4 workers
	ns := &Namespace{Name: "ns", Quotas: []corev1.ResourceQuota{quota("compute", rl("requests.cpu", "8"), rl("requests.cpu", "5"))}}
	withWorkers := func(s *rayv1.RayService) { s.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4) }
	newImage := func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	}

	stored := service(withWorkers)
	upgraded := service(func(s *rayv1.RayService) { withWorkers(s); newImage(s) })
	_, warnings := Validator{}.AdmitRayService(ns, stored, upgraded)
	diffWarnings(t, []string{
		`spec.rayClusterConfig: this change starts a NewCluster upgrade, which needs the new cluster's 5 pods next to the current cluster; they do not fit in ResourceQuota "compute": requests.cpu 5, 3 left (hard 8, used 5); the upgrade cannot finish until the quota has room`,
	}, warnings)

	scaled := service(func(s *rayv1.RayService) { s.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](6) })
	_, warnings = Validator{}.AdmitRayService(ns, stored, scaled)
	diffWarnings(t, nil, warnings) // two more workers fit: scaling starts no upgrade

	// Incremental with maxSurgePercent 40: a new head (1 CPU and the autoscaler's 500m) and
	// 2 of the 4 workers.
	incStored := incremental(withWorkers)
	incUpgraded := incremental(func(s *rayv1.RayService) { withWorkers(s); newImage(s) })
	roomy := &Namespace{Name: "ns", Quotas: []corev1.ResourceQuota{quota("compute", rl("requests.cpu", "8"), rl("requests.cpu", "4"))}}
	_, warnings = Validator{Gates: gateOn}.AdmitRayService(roomy, incStored, incUpgraded)
	diffWarnings(t, nil, warnings)
	tight := &Namespace{Name: "ns", Quotas: []corev1.ResourceQuota{quota("compute", rl("requests.cpu", "8"), rl("requests.cpu", "6"))}}
	_, warnings = Validator{Gates: gateOn}.AdmitRayService(tight, incStored, incUpgraded)
	diffWarnings(t, []string{
		`spec.rayClusterConfig: this change starts a NewClusterWithIncrementalUpgrade upgrade, which needs up to 3 more pods (the new cluster's head and maxSurgePercent 40% of its workers) next to the current cluster; they do not fit in ResourceQuota "compute": requests.cpu 3500m, 2 left (hard 8, used 6); the upgrade cannot finish until the quota has room`,
	}, warnings)
}
