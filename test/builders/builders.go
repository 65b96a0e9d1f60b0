// Package builders makes RayCluster, RayService and RayJob objects for tests with a fluent API:
//
//	builders.RayService("svc", "ns").Incremental(20, 5, 10, "istio").Obj()
//
// The defaults are realistic (rayproject/ray image, resources, one worker group) and valid,
// so a test states only what it is about.
package builders

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// DefaultImage is the Ray image of built objects.
const DefaultImage = "rayproject/ray:2.52.0"

// DefaultServeConfig is a serve config with one application.
const DefaultServeConfig = `applications:
  - name: fruit
    route_prefix: /fruit
    import_path: fruit.deployment_graph
    deployments:
      - name: MangoStand
        num_replicas: 2
`

func container(name string, cpu, mem string) corev1.Container {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return corev1.Container{Name: name, Image: DefaultImage, Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}}
}

// ClusterSpec is a RayCluster spec with a head and one worker group "workers" of 1 replica.
func ClusterSpec() rayv1.RayClusterSpec {
	return rayv1.RayClusterSpec{
		RayVersion: "2.52.0",
		HeadGroupSpec: rayv1.HeadGroupSpec{
			RayStartParams: map[string]string{},
			Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container("ray-head", "1", "2Gi")}}},
		},
		WorkerGroupSpecs: []rayv1.WorkerGroupSpec{WorkerGroup("workers", 1)},
	}
}

// WorkerGroup is a worker group with replicas in [0, 10].
func WorkerGroup(name string, replicas int32) rayv1.WorkerGroupSpec {
	return rayv1.WorkerGroupSpec{
		GroupName:      name,
		Replicas:       ptr.To(replicas),
		MinReplicas:    ptr.To[int32](0),
		MaxReplicas:    ptr.To[int32](10),
		NumOfHosts:     1,
		RayStartParams: map[string]string{},
		Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container("ray-worker", "1", "1Gi")}}},
	}
}

// RayClusterWrapper builds a RayCluster.
type RayClusterWrapper struct{ rayv1.RayCluster }

// RayCluster starts a RayCluster with ClusterSpec.
func RayCluster(name, namespace string) *RayClusterWrapper {
	return &RayClusterWrapper{rayv1.RayCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayClusterKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       ClusterSpec(),
	}}
}

// Obj returns the built object.
func (w *RayClusterWrapper) Obj() *rayv1.RayCluster { return w.DeepCopy() }

// Spec replaces the whole spec.
func (w *RayClusterWrapper) Spec(s rayv1.RayClusterSpec) *RayClusterWrapper {
	w.RayCluster.Spec = s
	return w
}

// WorkerGroups replaces the worker groups.
func (w *RayClusterWrapper) WorkerGroups(groups ...rayv1.WorkerGroupSpec) *RayClusterWrapper {
	w.RayCluster.Spec.WorkerGroupSpecs = groups
	return w
}

// Image sets the image of every Ray container.
func (w *RayClusterWrapper) Image(image string) *RayClusterWrapper {
	setImage(&w.RayCluster.Spec, image)
	return w
}

// Autoscaling turns the in-tree autoscaler on.
func (w *RayClusterWrapper) Autoscaling() *RayClusterWrapper {
	w.RayCluster.Spec.EnableInTreeAutoscaling = ptr.To(true)
	return w
}

// Suspend sets spec.suspend.
func (w *RayClusterWrapper) Suspend(on bool) *RayClusterWrapper {
	w.RayCluster.Spec.Suspend = ptr.To(on)
	return w
}

// Recreate sets the Recreate upgrade strategy.
func (w *RayClusterWrapper) Recreate() *RayClusterWrapper {
	w.RayCluster.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
	return w
}

// Annotation sets an annotation.
func (w *RayClusterWrapper) Annotation(k, v string) *RayClusterWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

func setImage(s *rayv1.RayClusterSpec, image string) {
	s.HeadGroupSpec.Template.Spec.Containers[0].Image = image
	for i := range s.WorkerGroupSpecs {
		s.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = image
	}
}

// RayServiceWrapper builds a RayService.
type RayServiceWrapper struct{ rayv1.RayService }

// RayService starts a RayService with ClusterSpec and DefaultServeConfig (strategy unset:
// defaulting makes it NewCluster).
func RayService(name, namespace string) *RayServiceWrapper {
	return &RayServiceWrapper{rayv1.RayService{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayServiceKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       rayv1.RayServiceSpec{ServeConfigV2: DefaultServeConfig, RayClusterSpec: ClusterSpec()},
	}}
}

// Obj returns the built object.
func (w *RayServiceWrapper) Obj() *rayv1.RayService { return w.DeepCopy() }

// Strategy sets upgradeStrategy.type.
func (w *RayServiceWrapper) Strategy(t rayv1.RayServiceUpgradeType) *RayServiceWrapper {
	if w.Spec.UpgradeStrategy == nil {
		w.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{}
	}
	w.Spec.UpgradeStrategy.Type = ptr.To(t)
	return w
}

// Incremental sets the NewClusterWithIncrementalUpgrade strategy with its options and turns
// the autoscaler on (which the strategy needs).
func (w *RayServiceWrapper) Incremental(maxSurge, step, interval int32, gatewayClass string) *RayServiceWrapper {
	w.Strategy(rayv1.NewClusterWithIncrementalUpgrade)
	w.Spec.UpgradeStrategy.ClusterUpgradeOptions = &rayv1.ClusterUpgradeOptions{
		MaxSurgePercent: ptr.To(maxSurge), StepSizePercent: ptr.To(step), IntervalSeconds: ptr.To(interval), GatewayClassName: gatewayClass,
	}
	w.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
	return w
}

// ServeConfig sets serveConfigV2.
func (w *RayServiceWrapper) ServeConfig(yaml string) *RayServiceWrapper {
	w.Spec.ServeConfigV2 = yaml
	return w
}

// ClusterSpec replaces rayClusterConfig.
func (w *RayServiceWrapper) ClusterSpec(s rayv1.RayClusterSpec) *RayServiceWrapper {
	w.Spec.RayClusterSpec = s
	return w
}

// Image sets the image of every Ray container of rayClusterConfig.
func (w *RayServiceWrapper) Image(image string) *RayServiceWrapper {
	setImage(&w.Spec.RayClusterSpec, image)
	return w
}

// DeletionDelay sets rayClusterDeletionDelaySeconds.
func (w *RayServiceWrapper) DeletionDelay(seconds int32) *RayServiceWrapper {
	w.Spec.RayClusterDeletionDelaySeconds = ptr.To(seconds)
	return w
}

// ServeConfigOfSize returns a valid serve config of exactly size bytes (size ≥ 64):
// applications of eight deployments each, as a large multi-application config looks,
// padded with a trailing comment line.
func ServeConfigOfSize(size int) string {
	var b strings.Builder
	b.WriteString("proxy_location: EveryNode\napplications:\n")
	for i := 0; ; i++ {
		app := serveApplication(i)
		if b.Len()+len(app)+len("#\n") > size {
			break
		}
		b.WriteString(app)
	}
	b.WriteString("#" + strings.Repeat("x", size-b.Len()-len("#\n")) + "\n")
	return b.String()
}

func serveApplication(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: app-%04d\n    route_prefix: /app-%04d\n    import_path: serving.app_%04d:app\n", i, i, i)
	b.WriteString("    runtime_env:\n      env_vars: {MODEL_ID: meta-llama/Llama-3.1-8B-Instruct, LOG_LEVEL: info}\n    deployments:\n")
	for d := range 8 {
		fmt.Fprintf(&b, "      - name: Stage%d\n        num_replicas: %d\n        max_ongoing_requests: 64\n        ray_actor_options: {num_cpus: 1, num_gpus: 0}\n        user_config: {batch_size: 16, timeout_s: 30}\n", d, d+1)
	}
	return b.String()
}
