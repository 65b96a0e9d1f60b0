package raycluster

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// redisCleanupScript deletes the cluster's keys with Ray's own helper, so it understands
// whatever layout the Ray version in the image wrote. The address may be a list (the first
// entry counts) and carry a scheme (rediss:// for TLS) and credentials.
const redisCleanupScript = `python -c "` +
	`from ray._private.gcs_utils import cleanup_redis_storage; ` +
	`from urllib.parse import urlparse; ` +
	`import os, sys; ` +
	`address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; ` +
	`address = address if '://' in address else 'redis://' + address; ` +
	`parsed = urlparse(address); ` +
	`kwargs = dict(host=parsed.hostname, port=parsed.port, password=os.getenv('REDIS_PASSWORD', parsed.password or ''), ` +
	`use_ssl=parsed.scheme == 'rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')); ` +
	`kwargs.update(username=os.getenv('REDIS_USERNAME', parsed.username)) if os.getenv('REDIS_USERNAME') else None; ` +
	`sys.exit(0 if cleanup_redis_storage(**kwargs) else 1)"`

// redisCleanupDeadline bounds one attempt of the Job (KubeRay's five minutes); the deletion
// timeout bounds the whole cleanup.
const redisCleanupDeadline = int64(300)

// redisCleanupJob is the Job that deletes a deleted cluster's keys from Redis: the head pod
// as it would be built (image, env, credentials, volumes, scheduling), reduced to its Ray
// container running the cleanup once. rc is the defaulted cluster. The head's Ray container
// reaches its own GCS at 127.0.0.1, so the cluster's DNS domain is not in it; the operator's
// settings s give it the admin's default environment, labels and annotations (its sidecars
// are dropped with every container but Ray's) and the login shell, as KubeRay's.
func redisCleanupJob(rc *rayv1.RayCluster, s raypod.Settings) *batchv1.Job {
	pod := raypod.HeadPod(rc, "", s)
	pod.Labels[rayv1.NodeTypeLabelKey] = string(rayv1.RedisCleanupNode)
	ray := pod.Spec.Containers[rayv1.RayContainerIndex]
	ray.Command = s.Shell()
	ray.Args = []string{redisCleanupScript}
	// No Ray processes run, so there is nothing to probe or expose.
	ray.LivenessProbe, ray.ReadinessProbe, ray.StartupProbe = nil, nil, nil
	ray.Ports = nil
	ray.Env = append(ray.Env,
		// Keep retrying a Redis that is briefly unreachable for a minute.
		corev1.EnvVar{Name: "RAY_redis_db_connect_retries", Value: "120"},
		corev1.EnvVar{Name: "RAY_redis_db_connect_wait_milliseconds", Value: "500"})
	// Small fixed resources: the cleanup needs little, and must not ask for the head's GPUs.
	fixed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	ray.Resources = corev1.ResourceRequirements{Limits: fixed, Requests: fixed.DeepCopy()}
	pod.Spec.Containers = []corev1.Container{ray}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	delete(pod.Annotations, rayv1.HashWithoutReplicasAndWorkersToDeleteKey)

	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            rayspec.RedisCleanupJobName(rc.Name),
			Namespace:       rc.Namespace,
			Labels:          pod.Labels,
			Annotations:     pod.Annotations,
			OwnerReferences: pod.OwnerReferences,
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(redisCleanupDeadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
				Spec:       pod.Spec,
			},
		},
	}
}

// jobFinished reports whether the Job completed or failed.
func jobFinished(j *batchv1.Job) (complete, failed bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobFailed:
			failed = true
		}
	}
	return complete, failed
}
