package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestRayCluster(t *testing.T) {
	v2 := func(rc *rayv1.RayCluster) {
		rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
		rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
	}
	worker := func(rc *rayv1.RayCluster) *rayv1.WorkerGroupSpec { return &rc.Spec.WorkerGroupSpecs[0] }
	cases := map[string]struct {
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"valid": {},
		"valid with autoscaler v2 and idle timeout": {mutate: func(rc *rayv1.RayCluster) {
			v2(rc)
			worker(rc).IdleTimeoutSeconds = ptr.To[int32](30)
			rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}},

		// Names.
		"name not DNS-1035": {
			mutate: func(rc *rayv1.RayCluster) { rc.Name = "1cluster" },
			want:   field.ErrorList{field.Invalid(p("metadata.name"), nil, "")},
		},
		"name with a dot": {
			mutate: func(rc *rayv1.RayCluster) { rc.Name = "my.cluster" },
			want:   field.ErrorList{field.Invalid(p("metadata.name"), nil, "")},
		},
		"longest name that fits": {mutate: func(rc *rayv1.RayCluster) { rc.Name = strings.Repeat("c", 53) }},
		"name one over": {
			mutate: func(rc *rayv1.RayCluster) { rc.Name = strings.Repeat("c", 54) },
			want:   field.ErrorList{field.Invalid(p("metadata.name"), nil, "")},
		},
		"generateName prefix too long": {
			mutate: func(rc *rayv1.RayCluster) { rc.Name, rc.GenerateName = "", strings.Repeat("c", 49) },
			want:   field.ErrorList{field.Invalid(p("metadata.generateName"), nil, "")},
		},
		"generateName that fits": {mutate: func(rc *rayv1.RayCluster) { rc.Name, rc.GenerateName = "", strings.Repeat("c", 48) }},

		// Pod templates.
		"head without containers": {
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.Containers = nil },
			want:   field.ErrorList{field.Required(p("spec.headGroupSpec.template.spec.containers"), "")},
		},
		"head Ray container without image": {
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = "" },
			want:   field.ErrorList{field.Required(p("spec.headGroupSpec.template.spec.containers[0].image"), "")},
		},
		"sidecar without image is not the Ray container's business": {mutate: func(rc *rayv1.RayCluster) {
			worker(rc).Template.Spec.Containers = append(worker(rc).Template.Spec.Containers, corev1.Container{Name: "sidecar"})
		}},
		"worker without containers": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).Template.Spec.Containers = nil },
			want:   field.ErrorList{field.Required(p("spec.workerGroupSpecs[0].template.spec.containers"), "")},
		},
		"worker group without name": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).GroupName = "" },
			want:   field.ErrorList{field.Required(p("spec.workerGroupSpecs[0].groupName"), "")},
		},
		"worker group name not DNS-1123": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).GroupName = "GPU_workers" },
			want:   field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].groupName"), nil, "")},
		},
		"upper-case worker group name (pod names are lower-cased)": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).GroupName = "GPU-Workers" },
		},
		"upper-case worker group name with an underscore": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).GroupName = "GPU_Workers" },
			want:   field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].groupName"), nil, "")},
		},
		"worker group name over 63 characters": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).GroupName = strings.Repeat("G", 64) },
			want:   field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].groupName"), nil, "")},
		},
		"duplicate worker group names": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, builders.WorkerGroup("gpu", 1), builders.WorkerGroup("workers", 1))
			},
			want: field.ErrorList{field.Duplicate(p("spec.workerGroupSpecs[2].groupName"), nil)},
		},
		"negative minReplicas": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).MinReplicas = ptr.To[int32](-1) },
			want:   field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].minReplicas"), nil, "")},
		},
		"maxReplicas below minReplicas": {
			mutate: func(rc *rayv1.RayCluster) {
				worker(rc).MinReplicas, worker(rc).MaxReplicas = ptr.To[int32](5), ptr.To[int32](2)
			},
			want: field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].maxReplicas"), nil, "")},
		},
		"min equals max": {mutate: func(rc *rayv1.RayCluster) {
			worker(rc).MinReplicas, worker(rc).MaxReplicas, worker(rc).Replicas = ptr.To[int32](3), ptr.To[int32](3), ptr.To[int32](3)
		}},
		"negative numOfHosts": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).NumOfHosts = -2 },
			want:   field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].numOfHosts"), nil, "")},
		},
		"negative replicas": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).Replicas = ptr.To[int32](-1) },
			want:   field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].replicas"), nil, "")},
		},
		"replicas above max is clamped": {
			mutate:   func(rc *rayv1.RayCluster) { worker(rc).Replicas = ptr.To[int32](15) },
			warnings: []string{"spec.workerGroupSpecs[0].replicas: 15 is outside [minReplicas 0, maxReplicas 10] and will be clamped to 10"},
		},
		"replicas below min is clamped": {
			mutate: func(rc *rayv1.RayCluster) {
				worker(rc).MinReplicas, worker(rc).Replicas = ptr.To[int32](3), ptr.To[int32](1)
			},
			warnings: []string{"spec.workerGroupSpecs[0].replicas: 1 is outside [minReplicas 3, maxReplicas 10] and will be clamped to 3"},
		},
		"replicas 0 is the stored default and means minReplicas": {
			mutate: func(rc *rayv1.RayCluster) {
				worker(rc).MinReplicas, worker(rc).Replicas = ptr.To[int32](3), ptr.To[int32](0)
			},
		},
		"Ray resources in rayStartParams and resources": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0"}
				rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "0"}
				worker(rc).RayStartParams = map[string]string{"num-gpus": "1", "memory": "100"}
				worker(rc).Resources = map[string]string{"GPU": "1"}
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.resources"), ""),
				field.Forbidden(p("spec.workerGroupSpecs[0].resources"), ""),
			},
		},
		"Ray resources in one place each": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0", "dashboard-host": "0.0.0.0"}
			worker(rc).Resources = map[string]string{"GPU": "1"}
		}},
		"labels in rayStartParams": {
			mutate: func(rc *rayv1.RayCluster) { worker(rc).RayStartParams = map[string]string{"labels": "a=b"} },
			want:   field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].rayStartParams[labels]"), "")},
		},
		"ports in rayStartParams that are not ports": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"dashboard-port": "65536", "port": "6379 ", "metrics-export-port": "8080"}
				worker(rc).RayStartParams = map[string]string{"min-worker-port": "0", "max-worker-port": "-1", "num-cpus": "1"}
			},
			want: field.ErrorList{
				field.Invalid(p("spec.headGroupSpec.rayStartParams[port]"), nil, ""),
				field.Invalid(p("spec.headGroupSpec.rayStartParams[dashboard-port]"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].rayStartParams[min-worker-port]"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].rayStartParams[max-worker-port]"), nil, ""),
			},
		},
		"a ServiceAccount name the API server refuses (KubeRay's vLLM placeholder)": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName = "$KSA_NAME"
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.ServiceAccountName = "ray-workers"
			},
			want: field.ErrorList{field.Invalid(p("spec.headGroupSpec.template.spec.serviceAccountName"), nil, "")},
		},
		"invalid Ray node labels": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Labels = map[string]string{"bad key": "v", "zone": "not valid!"}
			},
			want: field.ErrorList{
				field.Invalid(p("spec.headGroupSpec.labels"), nil, ""),
				field.Invalid(p("spec.headGroupSpec.labels[zone]"), nil, ""),
			},
		},

		// Autoscaler.
		"autoscaler v2 with head restartPolicy Always": {
			mutate: func(rc *rayv1.RayCluster) {
				v2(rc)
				rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
				worker(rc).Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			},
			want: field.ErrorList{
				field.Invalid(p("spec.headGroupSpec.template.spec.restartPolicy"), nil, ""),
				field.Invalid(p("spec.workerGroupSpecs[0].template.spec.restartPolicy"), nil, ""),
			},
		},
		"autoscaler v2 chosen by rayVersion: a warning, as KubeRay checks only an explicit version": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
				worker(rc).Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			},
			warnings: []string{
				"spec.headGroupSpec.template.spec.restartPolicy is Always while autoscaler v2 runs because of rayVersion 2.52.0 (Ray's default from 2.47.0), " +
					"not autoscalerOptions.version, so raygate leaves the policy as it is: autoscaler v2 replaces a Ray pod whose node died, " +
					"and a container the kubelet restarts in place can leave it tracking a node that no longer exists; use Never, or choose the autoscaler with autoscalerOptions.version",
				"spec.workerGroupSpecs[0].template.spec.restartPolicy is OnFailure while autoscaler v2 runs because of rayVersion 2.52.0 (Ray's default from 2.47.0), " +
					"not autoscalerOptions.version, so raygate leaves the policy as it is: autoscaler v2 replaces a Ray pod whose node died, " +
					"and a container the kubelet restarts in place can leave it tracking a node that no longer exists; use Never, or choose the autoscaler with autoscalerOptions.version",
			},
		},
		"autoscaler v2 chosen by the head's RAY_enable_autoscaler_v2: a warning": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.RayVersion = "2.40.0"
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: AutoscalerV2EnvVar, Value: "true"}}
				worker(rc).Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
			warnings: []string{
				"spec.workerGroupSpecs[0].template.spec.restartPolicy is Always while autoscaler v2 runs because of RAY_enable_autoscaler_v2 in the head container, " +
					"not autoscalerOptions.version, so raygate leaves the policy as it is: autoscaler v2 replaces a Ray pod whose node died, " +
					"and a container the kubelet restarts in place can leave it tracking a node that no longer exists; use Never, or choose the autoscaler with autoscalerOptions.version",
			},
		},
		"restartPolicy Never is quiet with implicit autoscaler v2": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}},
		"autoscaler v1 may restart pods": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV1)}
			rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}},
		"restartPolicy is free without the autoscaler": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}},
		"idleTimeoutSeconds without autoscaler v2": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.RayVersion = "2.40.0"
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				worker(rc).IdleTimeoutSeconds = ptr.To[int32](60)
			},
			want: field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].idleTimeoutSeconds"), "")},
		},
		"negative idleTimeoutSeconds": {
			mutate: func(rc *rayv1.RayCluster) { v2(rc); worker(rc).IdleTimeoutSeconds = ptr.To[int32](-1) },
			want:   field.ErrorList{field.Invalid(p("spec.workerGroupSpecs[0].idleTimeoutSeconds"), nil, "")},
		},
		"negative autoscalerOptions.idleTimeoutSeconds, with or without the autoscaler": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{IdleTimeoutSeconds: ptr.To[int32](-5)}
			},
			want: field.ErrorList{field.Invalid(p("spec.autoscalerOptions.idleTimeoutSeconds"), nil, "")},
		},
		"autoscalerOptions.idleTimeoutSeconds 0": {mutate: func(rc *rayv1.RayCluster) {
			v2(rc)
			rc.Spec.AutoscalerOptions.IdleTimeoutSeconds = ptr.To[int32](0)
		}},
		"the generated autoscaler command variable in autoscalerOptions.env": {
			mutate: func(rc *rayv1.RayCluster) {
				v2(rc)
				rc.Spec.AutoscalerOptions.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "KUBERAY_GEN_AUTOSCALER_START_CMD", Value: "sleep infinity"}}
			},
			want: field.ErrorList{field.Forbidden(p("spec.autoscalerOptions.env[1]"), "")},
		},
		"priority with Ray 2.56 and implicit autoscaler v2": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.RayVersion = "2.56.0"
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			worker(rc).Priority = ptr.To[int32](10)
		}},
		"priority with Ray 2.56 and explicit autoscaler v2": {mutate: func(rc *rayv1.RayCluster) {
			v2(rc)
			rc.Spec.RayVersion = "2.56.1"
			worker(rc).Priority = ptr.To[int32](-3)
		}},
		"priority 0 is the default, allowed on any Ray": {mutate: func(rc *rayv1.RayCluster) { worker(rc).Priority = ptr.To[int32](0) }},
		"priority on Ray older than 2.56": {
			mutate: func(rc *rayv1.RayCluster) { v2(rc); worker(rc).Priority = ptr.To[int32](10) },
			want:   field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].priority"), "")},
		},
		"priority without rayVersion": {
			mutate: func(rc *rayv1.RayCluster) { v2(rc); rc.Spec.RayVersion = ""; worker(rc).Priority = ptr.To[int32](1) },
			want:   field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].priority"), "")},
		},
		"priority with an unparsable rayVersion": {
			mutate: func(rc *rayv1.RayCluster) {
				v2(rc)
				rc.Spec.RayVersion = "nightly"
				worker(rc).Priority = ptr.To[int32](1)
			},
			want: field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].priority"), "")},
		},
		"priority without the autoscaler": {
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.RayVersion = "2.56.0"; worker(rc).Priority = ptr.To[int32](1) },
			want:   field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].priority"), "")},
		},
		"priority with autoscaler v1": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.RayVersion = "2.56.0"
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV1)}
				worker(rc).Priority = ptr.To[int32](1)
			},
			want: field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].priority"), "")},
		},
		"suspended worker group with the autoscaler": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				worker(rc).Suspend = ptr.To(true)
			},
			want: field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].suspend"), "")},
		},
		"suspended worker group without the autoscaler": {mutate: func(rc *rayv1.RayCluster) { worker(rc).Suspend = ptr.To(true) }},
		"autoscaler v2 env var without the autoscaler": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: AutoscalerV2EnvVar, Value: "true"}}
			},
			want: field.ErrorList{field.Invalid(p("spec.headGroupSpec.template.spec.containers[0].env[1].value"), nil, "")},
		},
		"autoscaler version given twice": {
			mutate: func(rc *rayv1.RayCluster) {
				v2(rc)
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: AutoscalerV2EnvVar, Value: "1"}}
			},
			want: field.ErrorList{field.Forbidden(p("spec.headGroupSpec.template.spec.containers[0].env[0]"), "")},
		},

		// Upgrade strategy.
		"Recreate": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
		}},
		"unknown upgrade type": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterUpgradeType("Rolling"))}
			},
			want: field.ErrorList{field.NotSupported[string](p("spec.upgradeStrategy.type"), nil, nil)},
		},
		"upgrade strategy on a cluster owned by a RayService": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayService", Name: "svc", UID: "u"}}
				rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterUpgradeNone)}
			},
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"upgrade strategy on a cluster labelled as a RayService's": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: "RayService"}
				rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
			},
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"owner of another group is not a RayService": {mutate: func(rc *rayv1.RayCluster) {
			rc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "RayService", Name: "x", UID: "u"}}
			rc.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
		}},

		// A field behind a gate that is off, and one that needs another (enableK8sTokenAuth
		// needs mode token).
		"refused KubeRay fields": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.AuthOptions = &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)}
				rc.Spec.TLSOptions = &rayv1.TLSOptions{}
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.tlsOptions"), ""),
				field.Forbidden(p("spec.authOptions.enableK8sTokenAuth"), ""),
			},
			warnings: []string{"spec.authOptions.mode is not set: authentication stays off (as under KubeRay, only mode: token turns it on); set mode: token to require a token"},
		},
		"GCS fault tolerance through the head's env and rayStartParams": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"redis-username": "ray"}
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{
					{Name: "A", Value: "1"}, {Name: "RAY_REDIS_ADDRESS", Value: "redis:6379"}, {Name: "REDIS_USERNAME", Value: "ray"}}
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.rayStartParams[redis-username]"), ""),
				field.Forbidden(p("spec.headGroupSpec.template.spec.containers[0].env[1]"), ""),
				field.Forbidden(p("spec.headGroupSpec.template.spec.containers[0].env[2]"), ""),
			},
		},
		"Redis settings of workers and an empty redis-username are KubeRay's too": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"redis-username": ""}
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_REDIS_ADDRESS", Value: "redis:6379"}}
		}},
		"enableIngress false is harmless": {mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(false) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := RayCluster(cluster(tc.mutate), gateOff)
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestClusterNameErrorSaysWhichDerivedNameAndTheLimit(t *testing.T) {
	errs, _ := RayCluster(cluster(func(rc *rayv1.RayCluster) { rc.Name = strings.Repeat("c", 60) }), gateOff)
	if len(errs) != 1 {
		t.Fatalf("want one error (no second, conflicting 63-character limit), got %v", errs)
	}
	want := `metadata.name: Invalid value: "` + strings.Repeat("c", 60) + `": must be no more than 53 characters: the derived name "` +
		strings.Repeat("c", 60) + `-serve-svc" would be 70 characters, over the Kubernetes limit of 63`
	if errs[0].Error() != want {
		t.Errorf("got  %s\nwant %s", errs[0].Error(), want)
	}
}

func TestTLSGateWording(t *testing.T) {
	errs, _ := RayCluster(cluster(func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{} }), gateOff)
	want := "spec.tlsOptions: Forbidden: the RayClusterMTLS feature gate is off; enable it with --feature-gates=RayClusterMTLS=true on the manager, or the Helm value featureGates.RayClusterMTLS=true"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want %q", errs, want)
	}
}

func TestAutoscalerV2(t *testing.T) {
	env := func(v string) []corev1.EnvVar { return []corev1.EnvVar{{Name: AutoscalerV2EnvVar, Value: v}} }
	cases := []struct {
		name        string
		autoscaling bool
		version     *rayv1.AutoscalerVersion
		rayVersion  string
		env         []corev1.EnvVar
		want        bool
	}{
		{name: "autoscaling off", version: ptr.To(rayv1.AutoscalerVersionV2), rayVersion: "2.52.0"},
		{name: "explicit v2", autoscaling: true, version: ptr.To(rayv1.AutoscalerVersionV2), rayVersion: "2.9.0", want: true},
		{name: "explicit v1 beats rayVersion", autoscaling: true, version: ptr.To(rayv1.AutoscalerVersionV1), rayVersion: "2.52.0"},
		{name: "rayVersion 2.47.0", autoscaling: true, rayVersion: "2.47.0", want: true},
		{name: "rayVersion 2.46.1", autoscaling: true, rayVersion: "2.46.1"},
		{name: "rayVersion unset", autoscaling: true},
		{name: "rayVersion unparsable", autoscaling: true, rayVersion: "nightly"},
		{name: "env var on", autoscaling: true, rayVersion: "2.40.0", env: env("1"), want: true},
		{name: "env var off beats rayVersion", autoscaling: true, rayVersion: "2.52.0", env: env("0")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := builders.ClusterSpec()
			spec.EnableInTreeAutoscaling = ptr.To(tc.autoscaling)
			spec.RayVersion = tc.rayVersion
			spec.HeadGroupSpec.Template.Spec.Containers[0].Env = tc.env
			if tc.version != nil {
				spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: tc.version}
			}
			if got := AutoscalerV2(&spec); got != tc.want {
				t.Errorf("AutoscalerV2 = %v, want %v", got, tc.want)
			}
		})
	}
	if AutoscalerV2(nil) {
		t.Error("nil spec")
	}
}

func TestRayClusterToleratesEmptyObjects(t *testing.T) {
	// Not defaulted, no containers, nil everything: errors, never a panic.
	errs, _ := RayCluster(&rayv1.RayCluster{Spec: rayv1.RayClusterSpec{WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{}}}}, gateOff)
	if len(errs) == 0 {
		t.Fatal("an empty cluster must be rejected")
	}
	if errs, _ := RayCluster(nil, gateOff); errs != nil {
		t.Fatal("nil object")
	}
}

// TestKubeRayAutoscalerRulesWording: rules raygate took over from KubeRay, as kubectl prints
// them.
func TestKubeRayAutoscalerRulesWording(t *testing.T) {
	v2 := func(rc *rayv1.RayCluster) {
		rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
		rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
	}
	cases := map[string]struct {
		mutate func(*rayv1.RayCluster)
		want   string
	}{
		"priority on an old Ray": {
			mutate: func(rc *rayv1.RayCluster) { v2(rc); rc.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](10) },
			want:   "spec.workerGroupSpecs[0].priority: Forbidden: needs Ray 2.56.0 or later, whose autoscaler v2 reads it; spec.rayVersion is 2.52.0",
		},
		"priority without autoscaler v2": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.RayVersion = "2.56.0"
				rc.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](10)
			},
			want: "spec.workerGroupSpecs[0].priority: Forbidden: needs autoscaler v2: set enableInTreeAutoscaling: true (and leave autoscalerOptions.version unset or v2)",
		},
		"negative autoscaler idle timeout": {
			mutate: func(rc *rayv1.RayCluster) { v2(rc); rc.Spec.AutoscalerOptions.IdleTimeoutSeconds = ptr.To[int32](-1) },
			want:   "spec.autoscalerOptions.idleTimeoutSeconds: Invalid value: -1: must be greater than or equal to 0",
		},
		"the generated command variable": {
			mutate: func(rc *rayv1.RayCluster) {
				v2(rc)
				rc.Spec.AutoscalerOptions.Env = []corev1.EnvVar{{Name: "KUBERAY_GEN_AUTOSCALER_START_CMD", Value: "x"}}
			},
			want: "spec.autoscalerOptions.env[0]: Forbidden: KUBERAY_GEN_AUTOSCALER_START_CMD is set by raygate to the autoscaler's generated start command, " +
				"which custom args can run as $KUBERAY_GEN_AUTOSCALER_START_CMD; remove it from env",
		},
		"RAY_REDIS_ADDRESS in the head": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_REDIS_ADDRESS", Value: "redis:6379"}}
			},
			want: "spec.headGroupSpec.template.spec.containers[0].env[0]: Forbidden: RAY_REDIS_ADDRESS keeps the GCS in an external Redis, which needs GCS fault tolerance: " +
				"set spec.gcsFaultToleranceOptions.redisAddress instead, so that the cluster is configured for it and the Redis keys are deleted with the cluster",
		},
		"restartPolicy with explicit autoscaler v2": {
			mutate: func(rc *rayv1.RayCluster) {
				v2(rc)
				rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
			want: `spec.headGroupSpec.template.spec.restartPolicy: Invalid value: "Always": must be Never or unset with autoscalerOptions.version v2: autoscaler v2 replaces failed Ray pods itself`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := RayCluster(cluster(tc.mutate), gateOff)
			if len(errs) != 1 || errs[0].Error() != tc.want {
				t.Errorf("got  %v\nwant %s", errs, tc.want)
			}
		})
	}
}

// TestPriorityRuleRatchets: a cluster stored with a priority its Ray cannot use is refused
// only when an update touches what the rule reads (here rayVersion), not on other edits.
func TestPriorityRuleRatchets(t *testing.T) {
	old := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
		rc.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](5)
	})
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "ml"}
	if errs, _ := RayClusterUpdate(old, relabelled, gateOff); len(errs) != 0 {
		t.Errorf("relabelling was refused: %v", errs)
	}
	downgraded := old.DeepCopy()
	downgraded.Spec.RayVersion = "2.50.0"
	errs, _ := RayClusterUpdate(old, downgraded, gateOff)
	diffErrors(t, field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].priority"), "")}, errs)
}
