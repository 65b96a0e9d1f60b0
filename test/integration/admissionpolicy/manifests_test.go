package admissionpolicy

import (
	"fmt"
	"strings"
)

const (
	rayImage = "rayproject/ray:2.52.0"
	limits   = "resources:\n  limits: {cpu: \"1\", memory: 2Gi}"
)

// pod is a pod spec with one container; extra is more YAML of the container (e.g. limits).
func pod(container, image, extra string) string {
	c := fmt.Sprintf("- name: %s\n  image: %s\n", container, image)
	if extra != "" {
		c += indent(extra, 2) + "\n"
	}
	return "containers:\n" + c
}

// rayCluster is a RayCluster manifest with the given head and worker pod specs.
func rayCluster(name, namespace, head, worker string) string {
	return fmt.Sprintf("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s",
		name, namespace, indent(clusterSpec(head, worker), 2)+"\n")
}

// rayService is a RayService manifest whose cluster has the given head and worker pod specs.
func rayService(name, namespace, head, worker string) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayService
metadata:
  name: %s
  namespace: %s
spec:
  serveConfigV2: |
    applications:
    - name: fruit
      route_prefix: /fruit
      import_path: fruit.deployment_graph
  rayClusterConfig:
%s
`, name, namespace, indent(clusterSpec(head, worker), 4))
}

// rayJob is a K8sJobMode RayJob manifest whose cluster has the given head and worker pod
// specs and, when submitter is not empty, a submitterPodTemplate with that pod spec.
func rayJob(name, namespace, head, worker, submitter string) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: %s
  namespace: %s
spec:
  entrypoint: python -c "print(1)"
%s  rayClusterSpec:
%s
`, name, namespace, submitterTemplate(submitter), indent(clusterSpec(head, worker), 4))
}

// rayJobOnCluster is a K8sJobMode RayJob that runs on an existing RayCluster (clusterSelector),
// with a submitterPodTemplate of the given pod spec.
func rayJobOnCluster(name, namespace, cluster, submitter string) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: %s
  namespace: %s
spec:
  entrypoint: python -c "print(1)"
  clusterSelector:
    ray.io/cluster: %s
%s`, name, namespace, cluster, submitterTemplate(submitter))
}

func submitterTemplate(podSpec string) string {
	if podSpec == "" {
		return ""
	}
	return "  submitterPodTemplate:\n    spec:\n      restartPolicy: Never\n" + indent(podSpec, 6) + "\n"
}

func clusterSpec(head, worker string) string {
	return fmt.Sprintf(`headGroupSpec:
  rayStartParams: {}
  template:
    spec:
%s
workerGroupSpecs:
- groupName: workers
  replicas: 1
  minReplicas: 0
  maxReplicas: 2
  rayStartParams: {}
  template:
    spec:
%s`, indent(head, 6), indent(worker, 6))
}

// withAutoscaler adds the in-tree autoscaler with the given autoscalerOptions YAML to a
// RayCluster manifest.
func withAutoscaler(manifest, options string) string {
	return strings.Replace(manifest, "spec:\n  headGroupSpec:", "spec:\n  enableInTreeAutoscaling: true\n  autoscalerOptions:\n"+indent(options, 4)+"\n  headGroupSpec:", 1)
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}
