package kueue

import (
	"fmt"
	"sort"
	"strings"
)

// rayCluster is a RayCluster manifest: a head and `workers` workers, 1 CPU and 2Gi each.
// labels go on the cluster (the queue name, a priority class); spec is more YAML of its spec.
func rayCluster(name, namespace string, workers int, labels map[string]string, spec string) string {
	var meta strings.Builder
	if len(labels) > 0 {
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		meta.WriteString("  labels:\n")
		for _, k := range keys {
			fmt.Fprintf(&meta, "    %s: %s\n", k, labels[k])
		}
	}
	if spec != "" {
		spec = "  " + strings.ReplaceAll(strings.TrimRight(spec, "\n"), "\n", "\n  ") + "\n"
	}
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: %s
  namespace: %s
%sspec:
%s  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          resources:
            requests: {cpu: "1", memory: 2Gi}
            limits: {cpu: "1", memory: 2Gi}
  workerGroupSpecs:
  - groupName: workers
    replicas: %d
    minReplicas: 0
    maxReplicas: 10
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
          resources:
            requests: {cpu: "1", memory: 2Gi}
            limits: {cpu: "1", memory: 2Gi}
`, name, namespace, meta.String(), spec, workers)
}

// queued labels a cluster for a LocalQueue, with an optional WorkloadPriorityClass.
func queued(queue, priority string) map[string]string {
	l := map[string]string{queueLabel: queue}
	if priority != "" {
		l["kueue.x-k8s.io/priority-class"] = priority
	}
	return l
}
