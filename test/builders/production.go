package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// ProductionRayService is a RayService as a team would run it, for benchmarks: an incremental
// upgrade, a head and three worker groups with probes, env, volumes and resources, two Serve
// applications. Its templates differ from group to group.
func ProductionRayService() *rayv1.RayService {
	svc := RayService("llm-serving", "ml-prod").Incremental(20, 5, 30, "istio").
		ServeConfig(`proxy_location: EveryNode
http_options:
  host: 0.0.0.0
  port: 8000
applications:
  - name: chat
    route_prefix: /chat
    import_path: serving.chat:app
    runtime_env:
      pip: [vllm==0.6.0]
    deployments:
      - name: ChatModel
        num_replicas: 4
        ray_actor_options: {num_gpus: 1}
  - name: embed
    route_prefix: /embed
    import_path: serving.embed:app
    deployments:
      - name: Embedder
        autoscaling_config: {min_replicas: 1, max_replicas: 8}
`).Obj()
	svc.Labels = map[string]string{"app.kubernetes.io/name": "llm-serving", "team": "ml-platform"}
	spec := &svc.Spec.RayClusterSpec
	spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2), IdleTimeoutSeconds: ptr.To[int32](60)}
	spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0", "dashboard-host": "0.0.0.0"}
	spec.HeadGroupSpec.Template.Spec = productionPodSpec("ray-head", "4", "16Gi", "")
	spec.WorkerGroupSpecs = nil
	for _, g := range []struct{ name, cpu, mem, gpu string }{{"cpu", "8", "32Gi", ""}, {"a10g", "8", "48Gi", "1"}, {"h100", "16", "128Gi", "8"}} {
		wg := WorkerGroup(g.name, 2)
		wg.MinReplicas, wg.MaxReplicas = ptr.To[int32](1), ptr.To[int32](20)
		wg.Template.Spec = productionPodSpec("ray-worker", g.cpu, g.mem, g.gpu)
		spec.WorkerGroupSpecs = append(spec.WorkerGroupSpecs, wg)
	}
	return svc
}

func productionPodSpec(name, cpu, mem, gpu string) corev1.PodSpec {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	if gpu != "" {
		rl["nvidia.com/gpu"] = resource.MustParse(gpu)
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/healthz", Port: intstr.FromInt32(8000)}}, PeriodSeconds: 5}
	return corev1.PodSpec{
		ServiceAccountName: "ray",
		Containers: []corev1.Container{{
			Name: name, Image: DefaultImage,
			Ports: []corev1.ContainerPort{{Name: "gcs", ContainerPort: 6379}, {Name: "dashboard", ContainerPort: 8265}, {Name: "serve", ContainerPort: 8000}},
			Env: []corev1.EnvVar{{Name: "HF_HOME", Value: "/models"}, {Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hf"}, Key: "token"}}}},
			Resources:      corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()},
			VolumeMounts:   []corev1.VolumeMount{{Name: "models", MountPath: "/models"}, {Name: "shm", MountPath: "/dev/shm"}},
			ReadinessProbe: probe, LivenessProbe: probe,
		}},
		Volumes: []corev1.Volume{
			{Name: "models", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models"}}},
			{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		},
		Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		NodeSelector: map[string]string{"node.kubernetes.io/instance-type": "g5.2xlarge"},
	}
}
