package validation

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

// job is a valid, defaulted K8sJobMode RayJob after mutate.
func job(mutate func(*rayv1.RayJob)) *rayv1.RayJob {
	j := builders.RayJob("job", "ns").Obj()
	if mutate != nil {
		mutate(j)
	}
	defaulting.RayJob(j)
	return j
}

func onSelector(j *rayv1.RayJob) {
	j.Spec.RayClusterSpec = nil
	j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
}

func rule(policy rayv1.DeletionPolicyType, status rayv1.JobStatus, ttl int32) rayv1.DeletionRule {
	return rayv1.DeletionRule{Policy: policy, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(status), TTLSeconds: ttl}}
}

func deploymentRule(policy rayv1.DeletionPolicyType, ttl int32) rayv1.DeletionRule {
	return rayv1.DeletionRule{Policy: policy, Condition: rayv1.DeletionCondition{JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed), TTLSeconds: ttl}}
}

func rules(rs ...rayv1.DeletionRule) func(*rayv1.RayJob) {
	return func(j *rayv1.RayJob) { j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: rs} }
}

func legacy(onSuccess, onFailure *rayv1.DeletionPolicyType) func(*rayv1.RayJob) {
	return func(j *rayv1.RayJob) {
		j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{}
		if onSuccess != nil {
			j.Spec.DeletionStrategy.OnSuccess = &rayv1.DeletionPolicy{Policy: onSuccess}
		}
		if onFailure != nil {
			j.Spec.DeletionStrategy.OnFailure = &rayv1.DeletionPolicy{Policy: onFailure}
		}
	}
}

func jobAll(fs ...func(*rayv1.RayJob)) func(*rayv1.RayJob) {
	return func(j *rayv1.RayJob) {
		for _, f := range fs {
			f(j)
		}
	}
}

func autoscaling(j *rayv1.RayJob) { j.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true) }
func shutdown(j *rayv1.RayJob)    { j.Spec.ShutdownAfterJobFinishes = true }

// TestRayJobKubeRayCases follows the cases of KubeRay v1.7's TestValidateRayJobSpec,
// TestValidateRayJobSpecWithFeatureGate and TestValidateRayJobMetadata: where KubeRay
// refuses, raygate refuses at the field paths below; where it accepts, raygate accepts.
func TestRayJobKubeRayCases(t *testing.T) {
	cluster := ptr.To(rayv1.DeleteCluster)
	workers := ptr.To(rayv1.DeleteWorkers)
	none := ptr.To(rayv1.DeleteNone)
	cases := map[string]struct {
		mutate func(*rayv1.RayJob)
		want   field.ErrorList
	}{
		"one of rayClusterSpec and clusterSelector": {
			mutate: func(j *rayv1.RayJob) { j.Spec.RayClusterSpec = nil },
			want:   field.ErrorList{field.Required(p("spec.rayClusterSpec"), "")},
		},
		"suspend without shutdownAfterJobFinishes": {
			mutate: func(j *rayv1.RayJob) { j.Spec.Suspend = true },
			want:   field.ErrorList{field.Forbidden(p("spec.suspend"), "")},
		},
		"suspend with shutdownAfterJobFinishes": {mutate: jobAll(shutdown, func(j *rayv1.RayJob) { j.Spec.Suspend = true })},
		"suspend with clusterSelector (and no ray.io/cluster key)": {
			mutate: jobAll(shutdown, func(j *rayv1.RayJob) {
				j.Spec.Suspend, j.Spec.RayClusterSpec, j.Spec.ClusterSelector = true, nil, map[string]string{"key": "value"}
			}),
			want: field.ErrorList{field.Required(p("spec.clusterSelector[ray.io/cluster]"), ""), field.Forbidden(p("spec.suspend"), "")},
		},
		"runtimeEnvYAML that is not a mapping": {
			mutate: func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "invalid_yaml_str" },
			want:   field.ErrorList{field.Invalid(p("spec.runtimeEnvYAML"), nil, "")},
		},
		"negative backoffLimit": {
			mutate: func(j *rayv1.RayJob) { j.Spec.BackoffLimit = ptr.To[int32](-1) },
			want:   field.ErrorList{field.Invalid(p("spec.backoffLimit"), nil, "")},
		},
		"backoffLimit in InteractiveMode": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Spec.BackoffLimit = rayv1.InteractiveMode, ptr.To[int32](1)
			},
			want: field.ErrorList{field.Forbidden(p("spec.backoffLimit"), "")},
		},
		"backoffLimit 0 in InteractiveMode": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Spec.BackoffLimit, j.Spec.Entrypoint = rayv1.InteractiveMode, ptr.To[int32](0), ""
			},
		},
		"backoffLimit unset in InteractiveMode": {
			mutate: func(j *rayv1.RayJob) { j.Spec.SubmissionMode, j.Spec.Entrypoint = rayv1.InteractiveMode, "" },
		},
		"ttlSecondsAfterFinished without shutdownAfterJobFinishes": {
			mutate: func(j *rayv1.RayJob) { j.Spec.TTLSecondsAfterFinished = 5 },
			want:   field.ErrorList{field.Forbidden(p("spec.ttlSecondsAfterFinished"), "")},
		},
		"ttlSecondsAfterFinished with shutdownAfterJobFinishes": {mutate: func(j *rayv1.RayJob) { j.Spec.ShutdownAfterJobFinishes, j.Spec.TTLSecondsAfterFinished = true, 5 }},
		"negative ttlSecondsAfterFinished": {
			mutate: func(j *rayv1.RayJob) { j.Spec.ShutdownAfterJobFinishes, j.Spec.TTLSecondsAfterFinished = true, -5 },
			want:   field.ErrorList{field.Invalid(p("spec.ttlSecondsAfterFinished"), nil, "")},
		},
		"SidecarMode": {mutate: func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode }},
		"SidecarMode with a submitter template": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Spec.SubmitterPodTemplate = rayv1.SidecarMode, &corev1.PodTemplateSpec{}
			},
			want: field.ErrorList{field.Forbidden(p("spec.submitterPodTemplate"), "")},
		},
		"SidecarMode with a submitter config": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Spec.SubmitterConfig = rayv1.SidecarMode, &rayv1.SubmitterConfig{BackoffLimit: ptr.To[int32](1)}
			},
			want: field.ErrorList{field.Forbidden(p("spec.submitterConfig"), "")},
		},
		"SidecarMode with a head that restarts": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode = rayv1.SidecarMode
				j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
			want: field.ErrorList{field.Forbidden(p("spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy"), "")},
		},
		"SidecarMode with clusterSelector": {
			mutate: jobAll(onSelector, func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode }),
			want:   field.ErrorList{field.Forbidden(p("spec.clusterSelector"), "")},
		},
		"an empty clusterSelector is no selector": {
			mutate: func(j *rayv1.RayJob) { j.Spec.RayClusterSpec, j.Spec.ClusterSelector = nil, map[string]string{} },
			want:   field.ErrorList{field.Required(p("spec.rayClusterSpec"), "")},
		},
		"clusterSelector naming no cluster": {
			mutate: jobAll(onSelector, func(j *rayv1.RayJob) { j.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey] = "" }),
			want:   field.ErrorList{field.Required(p("spec.clusterSelector[ray.io/cluster]"), "")},
		},
		"clusterSelector naming a cluster": {mutate: onSelector},
		"backoffLimit with clusterSelector": {
			mutate: jobAll(onSelector, func(j *rayv1.RayJob) { j.Spec.BackoffLimit = ptr.To[int32](1) }),
			want:   field.ErrorList{field.Forbidden(p("spec.backoffLimit"), "")},
		},
		"Kubernetes-delegated token authentication": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
			},
			want: field.ErrorList{field.Forbidden(p("spec.rayClusterSpec.authOptions.enableK8sTokenAuth"), "")},
		},
		// TestValidateRayJobSpecWithFeatureGate (legacy policies).
		"legacy DeleteCluster with clusterSelector": {
			mutate: jobAll(onSelector, legacy(cluster, cluster)),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.onSuccess.policy"), ""),
				field.Forbidden(p("spec.deletionStrategy.onFailure.policy"), "")},
		},
		"legacy DeleteWorkers with clusterSelector": {
			mutate: jobAll(onSelector, legacy(workers, workers)),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.onSuccess.policy"), ""),
				field.Forbidden(p("spec.deletionStrategy.onFailure.policy"), "")},
		},
		"legacy DeleteWorkers with the autoscaler": {
			mutate: jobAll(autoscaling, legacy(workers, workers)),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.onSuccess.policy"), ""),
				field.Forbidden(p("spec.deletionStrategy.onFailure.policy"), "")},
		},
		"legacy DeleteCluster":                {mutate: jobAll(shutdown, legacy(cluster, cluster))},
		"no deletion strategy, with shutdown": {mutate: shutdown},
		"legacy DeleteNone with shutdownAfterJobFinishes": {
			mutate: jobAll(shutdown, legacy(none, none)),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.onSuccess.policy"), ""),
				field.Forbidden(p("spec.deletionStrategy.onFailure.policy"), "")},
		},
		"legacy onSuccess unset": {
			mutate: jobAll(shutdown, legacy(nil, none)),
			want: field.ErrorList{field.Required(p("spec.deletionStrategy.onSuccess"), ""),
				field.Forbidden(p("spec.deletionStrategy.onFailure.policy"), "")},
		},
		"legacy onSuccess.policy unset": {
			mutate: jobAll(shutdown, legacy(nil, none), func(j *rayv1.RayJob) { j.Spec.DeletionStrategy.OnSuccess = &rayv1.DeletionPolicy{} }),
			want: field.ErrorList{field.Required(p("spec.deletionStrategy.onSuccess.policy"), ""),
				field.Forbidden(p("spec.deletionStrategy.onFailure.policy"), "")},
		},
		"legacy onFailure unset": {
			mutate: jobAll(shutdown, legacy(none, nil)),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.onSuccess.policy"), ""),
				field.Required(p("spec.deletionStrategy.onFailure"), "")},
		},
		"legacy onFailure.policy unset": {
			mutate: jobAll(shutdown, legacy(none, nil), func(j *rayv1.RayJob) { j.Spec.DeletionStrategy.OnFailure = &rayv1.DeletionPolicy{} }),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.onSuccess.policy"), ""),
				field.Required(p("spec.deletionStrategy.onFailure.policy"), "")},
		},
		"a head without containers": {
			mutate: func(j *rayv1.RayJob) { j.Spec.RayClusterSpec.HeadGroupSpec = rayv1.HeadGroupSpec{} },
			want:   field.ErrorList{field.Required(p("spec.rayClusterSpec.headGroupSpec.template.spec.containers"), "")},
		},
		// TestValidateRayJobSpecWithFeatureGate (deletion rules).
		"a deletion rule": {mutate: rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10))},
		"deletion rules with shutdownAfterJobFinishes": {
			mutate: jobAll(shutdown, rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10))),
			want:   field.ErrorList{field.Forbidden(p("spec.deletionStrategy.deletionRules"), "")},
		},
		"deletion rules with legacy onSuccess": {
			mutate: jobAll(rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10)), func(j *rayv1.RayJob) {
				j.Spec.DeletionStrategy.OnSuccess = &rayv1.DeletionPolicy{Policy: cluster}
			}),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.deletionRules"), "")},
		},
		"an empty deletion strategy": {
			mutate: func(j *rayv1.RayJob) { j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{} },
			want:   field.ErrorList{field.Required(p("spec.deletionStrategy"), "")},
		},
		"no deletion rules": {
			mutate: rules(),
			want:   field.ErrorList{field.Required(p("spec.deletionStrategy"), "")},
		},
		"a duplicate rule": {
			mutate: rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10), rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 20)),
			want:   field.ErrorList{field.Duplicate(p("spec.deletionStrategy.deletionRules[1]"), nil)},
		},
		"a negative ttlSeconds": {
			mutate: rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, -10)),
			want:   field.ErrorList{field.Invalid(p("spec.deletionStrategy.deletionRules[0].condition.ttlSeconds"), nil, "")},
		},
		"DeleteWorkers rule with clusterSelector": {
			mutate: jobAll(onSelector, rules(rule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10))),
			want:   field.ErrorList{field.Forbidden(p("spec.deletionStrategy.deletionRules[0].policy"), "")},
		},
		"DeleteCluster rule with clusterSelector": {
			mutate: jobAll(onSelector, rules(rule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 10))),
			want:   field.ErrorList{field.Forbidden(p("spec.deletionStrategy.deletionRules[0].policy"), "")},
		},
		"DeleteWorkers rule with the autoscaler": {
			mutate: jobAll(autoscaling, rules(rule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10))),
			want:   field.ErrorList{field.Forbidden(p("spec.deletionStrategy.deletionRules[0].policy"), "")},
		},
		"the cluster deleted before its workers": {
			mutate: rules(rule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 20), rule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 10)),
			want:   field.ErrorList{field.Invalid(p("spec.deletionStrategy.deletionRules[1].condition.ttlSeconds"), nil, "")},
		},
		"the RayJob deleted before its cluster": {
			mutate: rules(rule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 20), rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10)),
			want:   field.ErrorList{field.Invalid(p("spec.deletionStrategy.deletionRules[1].condition.ttlSeconds"), nil, "")},
		},
		"staged deletion rules": {
			mutate: rules(rule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10), rule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 20),
				rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 30), rule(rayv1.DeleteSelf, rayv1.JobStatusFailed, 0)),
		},
		"rules on a failed deployment": {mutate: rules(deploymentRule(rayv1.DeleteCluster, 10), deploymentRule(rayv1.DeleteSelf, 20))},
		"a condition on both statuses": {
			mutate: rules(rayv1.DeletionRule{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{
				JobStatus: ptr.To(rayv1.JobStatusFailed), JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed), TTLSeconds: 10}}),
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy.deletionRules[0].condition.jobDeploymentStatus"), "")},
		},
		"a condition on no status": {
			mutate: rules(rayv1.DeletionRule{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{TTLSeconds: 10}}),
			want:   field.ErrorList{field.Required(p("spec.deletionStrategy.deletionRules[0].condition"), "")},
		},
		"a duplicate rule on a failed deployment": {
			mutate: rules(deploymentRule(rayv1.DeleteCluster, 10), deploymentRule(rayv1.DeleteCluster, 20)),
			want:   field.ErrorList{field.Duplicate(p("spec.deletionStrategy.deletionRules[1]"), nil)},
		},
		"rules on both kinds of status": {mutate: rules(rule(rayv1.DeleteWorkers, rayv1.JobStatusFailed, 10), deploymentRule(rayv1.DeleteCluster, 20))},
		"the cluster deleted before its workers on a failed deployment": {
			mutate: rules(deploymentRule(rayv1.DeleteWorkers, 20), deploymentRule(rayv1.DeleteCluster, 10)),
			want:   field.ErrorList{field.Invalid(p("spec.deletionStrategy.deletionRules[1].condition.ttlSeconds"), nil, "")},
		},
		// TestValidateRayJobMetadata.
		"a name of 48 characters": {
			mutate: func(j *rayv1.RayJob) { j.Name = strings.Repeat("j", 48) },
			want:   field.ErrorList{field.Invalid(p("metadata.name"), nil, "")},
		},
		"a name that is not a DNS-1035 label": {
			mutate: func(j *rayv1.RayJob) { j.Name = strings.Repeat("1", 47) },
			want:   field.ErrorList{field.Invalid(p("metadata.name"), nil, "")},
		},
		"a name of 47 characters": {mutate: func(j *rayv1.RayJob) { j.Name = strings.Repeat("j", 47) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := RayJob(job(tc.mutate), features.Static{})
			diffErrors(t, tc.want, errs)
		})
	}
}

// TestRayJobRules covers what raygate checks beyond KubeRay.
func TestRayJobRules(t *testing.T) {
	template := func(c corev1.Container, policy corev1.RestartPolicy) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) {
			j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{c}}}
		}
	}
	submitter := corev1.Container{Name: "submitter", Image: "rayproject/ray:2.52.0"}
	custom := corev1.Container{Name: "submitter", Image: "quay.io/kuberay/submitter:v1.5.1", Command: []string{"/submitter"}}
	cases := map[string]struct {
		mutate func(*rayv1.RayJob)
		gates  features.Gates
		want   field.ErrorList
	}{
		"the deletion strategy with its feature gate off": {
			mutate: rules(rule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 10)), gates: features.Static{features.RayJobDeletionPolicy: false},
			want: field.ErrorList{field.Forbidden(p("spec.deletionStrategy"), "")},
		},
		"an unknown submission mode": {
			mutate: func(j *rayv1.RayJob) { j.Spec.SubmissionMode = "ByPigeon" },
			want:   field.ErrorList{field.NotSupported[string](p("spec.submissionMode"), "", nil)},
		},
		"both rayClusterSpec and clusterSelector": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
			},
			want: field.ErrorList{field.Forbidden(p("spec.rayClusterSpec"), "")},
		},
		"a clusterSelector naming no valid cluster": {
			mutate: jobAll(onSelector, func(j *rayv1.RayJob) { j.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey] = "Not A Name" }),
			want:   field.ErrorList{field.Invalid(p("spec.clusterSelector[ray.io/cluster]"), nil, "")},
		},
		"a submitter template in HTTPMode": {
			mutate: jobAll(template(submitter, corev1.RestartPolicyNever), func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.HTTPMode }),
			want:   field.ErrorList{field.Forbidden(p("spec.submitterPodTemplate"), "")},
		},
		"a submitter config in InteractiveMode": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Spec.Entrypoint, j.Spec.SubmitterConfig = rayv1.InteractiveMode, "", &rayv1.SubmitterConfig{}
			},
			want: field.ErrorList{field.Forbidden(p("spec.submitterConfig"), "")},
		},
		"no entrypoint in K8sJobMode": {
			mutate: func(j *rayv1.RayJob) { j.Spec.Entrypoint = "  " },
			want:   field.ErrorList{field.Required(p("spec.entrypoint"), "")},
		},
		"no entrypoint in HTTPMode": {
			mutate: func(j *rayv1.RayJob) { j.Spec.SubmissionMode, j.Spec.Entrypoint = rayv1.HTTPMode, "" },
			want:   field.ErrorList{field.Required(p("spec.entrypoint"), "")},
		},
		"no entrypoint with a submitter of the user's own": {
			mutate: jobAll(template(custom, corev1.RestartPolicyNever), func(j *rayv1.RayJob) { j.Spec.Entrypoint = "" }),
		},
		"no entrypoint with a template running the default command": {
			mutate: jobAll(template(submitter, corev1.RestartPolicyNever), func(j *rayv1.RayJob) { j.Spec.Entrypoint = "" }),
			want:   field.ErrorList{field.Required(p("spec.entrypoint"), "")},
		},
		"a submitter template without containers": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
			},
			want: field.ErrorList{field.Required(p("spec.submitterPodTemplate.spec.containers"), "")},
		},
		"a submitter without image": {
			mutate: template(corev1.Container{Name: "s"}, corev1.RestartPolicyOnFailure),
			want:   field.ErrorList{field.Required(p("spec.submitterPodTemplate.spec.containers[0].image"), "")},
		},
		"a submitter template without restart policy": {
			mutate: template(submitter, ""),
			want:   field.ErrorList{field.Required(p("spec.submitterPodTemplate.spec.restartPolicy"), "")},
		},
		"a submitter template that restarts always": {
			mutate: template(submitter, corev1.RestartPolicyAlways),
			want:   field.ErrorList{field.NotSupported[string](p("spec.submitterPodTemplate.spec.restartPolicy"), "", nil)},
		},
		"a negative submitter backoffLimit": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmitterConfig = &rayv1.SubmitterConfig{BackoffLimit: ptr.To[int32](-1)}
			},
			want: field.ErrorList{field.Invalid(p("spec.submitterConfig.backoffLimit"), nil, "")},
		},
		"a head container named like the sidecar": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode = rayv1.SidecarMode
				head := &j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
				head.Containers = append(head.Containers, corev1.Container{Name: rayv1.SubmitterContainerName, Image: "busybox"})
			},
			want: field.ErrorList{field.Forbidden(p("spec.rayClusterSpec.headGroupSpec.template.spec.containers[1].name"), "")},
		},
		"a runtime environment that is a list": {
			mutate: func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "- pip\n" },
			want:   field.ErrorList{field.Invalid(p("spec.runtimeEnvYAML"), nil, "")},
		},
		"a runtime environment that is not YAML": {
			mutate: func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "pip: [\n" },
			want:   field.ErrorList{field.Invalid(p("spec.runtimeEnvYAML"), nil, "")},
		},
		"a null runtime environment": {mutate: func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "null\n" }},
		"a runtime environment that expands past the bounds": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.RuntimeEnvYAML = "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
					"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
			},
			want: field.ErrorList{field.Invalid(p("spec.runtimeEnvYAML"), nil, "")},
		},
		"a runtime environment over its size": {
			mutate: func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "a: " + strings.Repeat("x", MaxRuntimeEnvYAMLBytes) },
			want:   field.ErrorList{field.TooLong(p("spec.runtimeEnvYAML"), nil, 0)},
		},
		"an entrypoint over its size": {
			mutate: func(j *rayv1.RayJob) { j.Spec.Entrypoint = strings.Repeat("x", MaxEntrypointBytes+1) },
			want:   field.ErrorList{field.TooLong(p("spec.entrypoint"), nil, 0)},
		},
		"metadata over its size": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.Metadata = map[string]string{"k": strings.Repeat("v", MaxJobMetadataBytes)}
			},
			want: field.ErrorList{field.TooLong(p("spec.metadata"), nil, 0)},
		},
		"a submit command over Linux's argument limit": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.Entrypoint = strings.Repeat("x", MaxEntrypointBytes)
				j.Spec.RuntimeEnvYAML = "a: " + strings.Repeat("y", MaxRuntimeEnvYAMLBytes-10)
			},
			want: field.ErrorList{field.TooLong(p("spec.entrypoint"), nil, 0)},
		},
		"a long payload with a submitter of the user's own": {
			mutate: jobAll(template(custom, corev1.RestartPolicyNever), func(j *rayv1.RayJob) {
				j.Spec.Entrypoint = strings.Repeat("x", MaxEntrypointBytes)
				j.Spec.RuntimeEnvYAML = "a: " + strings.Repeat("y", MaxRuntimeEnvYAMLBytes-10)
			}),
		},
		"metadata on a Ray without --metadata-json": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.Metadata, j.Spec.RayClusterSpec.RayVersion = map[string]string{"a": "b"}, "2.5.0"
			},
			want: field.ErrorList{field.Forbidden(p("spec.metadata"), "")},
		},
		"metadata with a rayVersion that is not a version": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.Metadata, j.Spec.RayClusterSpec.RayVersion = map[string]string{"a": "b"}, "latest"
			},
			want: field.ErrorList{field.Invalid(p("spec.rayClusterSpec.rayVersion"), nil, "")},
		},
		"metadata in HTTPMode is not given to the CLI": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.SubmissionMode, j.Spec.Metadata, j.Spec.RayClusterSpec.RayVersion = rayv1.HTTPMode, map[string]string{"a": "b"}, "2.5.0"
			},
		},
		"a jobId the shell would split": {
			mutate: func(j *rayv1.RayJob) { j.Spec.JobId = "my job; rm -rf /" },
			want:   field.ErrorList{field.Invalid(p("spec.jobId"), nil, "")},
		},
		"a jobId over its length": {
			mutate: func(j *rayv1.RayJob) { j.Spec.JobId = strings.Repeat("a", MaxJobIDLength+1) },
			want:   field.ErrorList{field.TooLong(p("spec.jobId"), nil, 0)},
		},
		"negative and non-finite entrypoint resources": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.EntrypointNumCpus, j.Spec.EntrypointNumGpus = -1, float32(math.NaN())
				j.Spec.EntrypointResources = `{"r": -1}`
			},
			want: field.ErrorList{field.Invalid(p("spec.entrypointNumCpus"), nil, ""), field.Invalid(p("spec.entrypointNumGpus"), nil, ""),
				field.Invalid(p("spec.entrypointResources"), nil, "")},
		},
		"entrypoint resources that are not an object": {
			mutate: func(j *rayv1.RayJob) { j.Spec.EntrypointResources = "[1]" },
			want:   field.ErrorList{field.Invalid(p("spec.entrypointResources"), nil, "")},
		},
		"entrypoint resources as Ray takes them": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.EntrypointNumCpus, j.Spec.EntrypointResources = 2, `{"resource1": 1, "TPU": 0.5}`
			},
		},
		"zero deadlines": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.ActiveDeadlineSeconds, j.Spec.PreRunningDeadlineSeconds = ptr.To[int32](0), ptr.To[int32](0)
			},
			want: field.ErrorList{field.Invalid(p("spec.activeDeadlineSeconds"), nil, ""),
				field.Invalid(p("spec.preRunningDeadlineSeconds"), nil, "")},
		},
		"an upgrade strategy on the job's cluster": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.RayClusterSpec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
			},
			want: field.ErrorList{field.Forbidden(p("spec.rayClusterSpec.upgradeStrategy"), "")},
		},
		"the RayCluster rules apply to the job's cluster": {
			mutate: func(j *rayv1.RayJob) {
				j.Spec.RayClusterSpec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](5)
				j.Spec.RayClusterSpec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](2)
			},
			want: field.ErrorList{field.Invalid(p("spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas"), nil, "")},
		},
		"a generated name with room for the suffix": {
			mutate: func(j *rayv1.RayJob) { j.Name, j.GenerateName = "", "rayjob-sample-" },
		},
		"managedBy another controller": {
			mutate: func(j *rayv1.RayJob) { j.Spec.ManagedBy = ptr.To("someone-else") },
			want:   field.ErrorList{field.NotSupported[string](p("spec.managedBy"), "", nil)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = features.Static{}
			}
			errs, _ := RayJob(job(tc.mutate), gates)
			diffErrors(t, tc.want, errs)
		})
	}
}
