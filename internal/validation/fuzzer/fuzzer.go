// Package fuzzer builds random RayClusters, RayServices and RayJobs for the fuzz tests of defaulting
// and validation. Values are drawn mostly from the ones the rules care about (boundaries,
// strategy names, autoscaler versions, serve configs), so a short fuzzing run reaches every
// rule instead of producing only unparsable noise.
package fuzzer

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

var (
	strs = []string{
		"", "a", "svc", "ray-head", "workers", "Bad_Name", "1abc", "a.b", strings.Repeat("n", 48), strings.Repeat("n", 70),
		"NewCluster", "NewClusterWithIncrementalUpgrade", "None", "Recreate", "RayService", "ray.io/v1",
		"v1", "v2", "true", "1", "0", "2.52.0", "2.46.0", "num-cpus", "num-gpus", "memory", "resources", "labels",
		"RAY_enable_autoscaler_v2", "/", "/fruit", "fruit", "istio", "rayproject/ray:2.52.0",
	}
	ints = []int32{math.MinInt32, -1, 0, 1, 2, 5, 9, 10, 40, 99, 100, 101, math.MaxInt32}

	serveConfigs = []string{
		"", "applications:\n  - name: a\n    import_path: m:app\n    route_prefix: /a\n",
		"applications:\n  - {name: a, import_path: m:app}\n  - {name: a, route_prefix: x}\n",
		"applications: 3\n", "- a\n", "applications:\n  - 1\n  - null\n", "applications:\n  - name: a\n   bad: [\n",
		"applications:\n  - {name: [1], import_path: {a: b}, route_prefix: null}\n", billionLaughs,
	}
	// largeServeConfigs, drawn now and then (each takes milliseconds to parse): the largest
	// accepted size, one byte more, and the densest document.
	largeServeConfigs = []string{
		maxSizeConfig(256 << 10), maxSizeConfig(256<<10 + 1), "applications: [" + strings.Repeat("0,", 128<<10-20) + "0]\n",
	}
	runtimeEnvs = []string{
		"", "pip:\n  - requests==2.26.0\nenv_vars:\n  A: \"1\"\n", "invalid_yaml_str", "- a\n", "a: [\n", "null\n", billionLaughs,
	}
	billionLaughs = "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
)

// maxSizeConfig is a valid serve config of size bytes: applications padded by a comment.
func maxSizeConfig(size int) string {
	var b strings.Builder
	b.WriteString("applications:\n")
	for i := 0; b.Len() < size-200; i++ {
		fmt.Fprintf(&b, "  - {name: app%d, import_path: m:app, route_prefix: /app%d, deployments: [{name: D, num_replicas: 2}]}\n", i, i)
	}
	return b.String() + "#" + strings.Repeat("x", max(size-b.Len()-2, 0)) + "\n"
}

func pick[T any](c randfill.Continue, from []T) T { return from[c.Intn(len(from))] }

// New returns a filler driven by the fuzzer's bytes.
func New(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(s *string, c randfill.Continue) {
			if c.Intn(4) == 0 {
				*s = c.String(12)
				return
			}
			*s = pick(c, strs)
		},
		func(i *int32, c randfill.Continue) { *i = pick(c, ints) },
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(pick(c, []string{"0", "500m", "1", "2Gi"}))
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(c.Int63n(1<<32), 0).UTC())
		},
		func(t *rayv1.RayServiceUpgradeType, c randfill.Continue) {
			*t = pick(c, []rayv1.RayServiceUpgradeType{rayv1.NewCluster, rayv1.NewClusterWithIncrementalUpgrade, rayv1.None, "Other", ""})
		},
		func(t *rayv1.RayClusterUpgradeType, c randfill.Continue) {
			*t = pick(c, []rayv1.RayClusterUpgradeType{rayv1.RayClusterRecreate, rayv1.RayClusterUpgradeNone, "Other"})
		},
		func(v *rayv1.AutoscalerVersion, c randfill.Continue) {
			*v = pick(c, []rayv1.AutoscalerVersion{rayv1.AutoscalerVersionV1, rayv1.AutoscalerVersionV2, "v3"})
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			*m = metav1.ObjectMeta{Name: pick(c, strs), Namespace: "ns", Generation: 1}
			if m.Name == "" {
				m.GenerateName = pick(c, strs)
			}
			if c.Bool() {
				c.Fill(&m.Labels)
				c.Fill(&m.Annotations)
			}
			if c.Intn(4) == 0 {
				m.OwnerReferences = []metav1.OwnerReference{{APIVersion: pick(c, strs), Kind: pick(c, strs), Name: "owner", UID: types.UID("u")}}
			}
			if c.Intn(8) == 0 {
				m.DeletionTimestamp = &metav1.Time{}
			}
		},
		// Pod templates are huge; only the parts the rules read are filled.
		func(t *corev1.PodTemplateSpec, c randfill.Continue) {
			*t = corev1.PodTemplateSpec{}
			for range c.Intn(3) {
				ct := corev1.Container{Name: pick(c, strs), Image: pick(c, strs)}
				if c.Bool() {
					ct.Env = []corev1.EnvVar{{Name: pick(c, strs), Value: pick(c, strs)}}
				}
				t.Spec.Containers = append(t.Spec.Containers, ct)
			}
			t.Spec.RestartPolicy = pick(c, []corev1.RestartPolicy{"", corev1.RestartPolicyNever, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure})
		},
		func(s *corev1.Service, c randfill.Continue) {
			*s = corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: pick(c, strs)}}
		},
		func(s *rayv1.RayClusterStatus, c randfill.Continue) { *s = rayv1.RayClusterStatus{} },
		func(s *rayv1.RayServiceStatuses, c randfill.Continue) {
			*s = rayv1.RayServiceStatuses{}
			if c.Bool() {
				s.PendingServiceStatus.RayClusterName = pick(c, strs)
			}
			if c.Bool() {
				s.Conditions = []metav1.Condition{{Type: string(rayv1.UpgradeInProgress), Status: pick(c, []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse})}}
			}
		},
		func(s *rayv1.RayServiceSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			s.ServeConfigV2 = pick(c, serveConfigs)
			if c.Intn(32) == 0 {
				s.ServeConfigV2 = pick(c, largeServeConfigs)
			}
		},
		func(m *rayv1.JobSubmissionMode, c randfill.Continue) {
			*m = pick(c, []rayv1.JobSubmissionMode{rayv1.K8sJobMode, rayv1.HTTPMode, rayv1.InteractiveMode, rayv1.SidecarMode, "", "Other"})
		},
		func(p *rayv1.DeletionPolicyType, c randfill.Continue) {
			*p = pick(c, []rayv1.DeletionPolicyType{rayv1.DeleteCluster, rayv1.DeleteWorkers, rayv1.DeleteSelf, rayv1.DeleteNone, "Other"})
		},
		func(s *rayv1.JobStatus, c randfill.Continue) { *s = pick(c, rayv1.AllJobStatuses) },
		func(s *rayv1.JobDeploymentStatus, c randfill.Continue) {
			*s = pick(c, []rayv1.JobDeploymentStatus{rayv1.JobDeploymentStatusNew, rayv1.JobDeploymentStatusRunning,
				rayv1.JobDeploymentStatusWaiting, rayv1.JobDeploymentStatusFailed, rayv1.JobDeploymentStatusComplete, rayv1.JobDeploymentStatusSuspended})
		},
		func(f *float32, c randfill.Continue) { *f = pick(c, []float32{0, -1, 0.5, 2, 1e30}) },
		func(s *rayv1.RayJobSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			s.RuntimeEnvYAML = pick(c, runtimeEnvs)
			s.EntrypointResources = pick(c, []string{"", `{"r": 1}`, "[1]", "{"})
			if c.Intn(4) == 0 {
				s.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: pick(c, strs)}
			}
		},
		func(s *rayv1.RayJobStatus, c randfill.Continue) {
			*s = rayv1.RayJobStatus{}
			c.Fill(&s.JobDeploymentStatus)
			if c.Bool() {
				s.JobId, s.RayClusterName = pick(c, strs), pick(c, strs)
			}
		},
		// Now and then many worker groups, copies of one filled group.
		func(s *rayv1.RayClusterSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if len(s.WorkerGroupSpecs) > 0 && c.Intn(16) == 0 {
				for range 300 {
					s.WorkerGroupSpecs = append(s.WorkerGroupSpecs, *s.WorkerGroupSpecs[0].DeepCopy())
				}
			}
		},
	)
}
