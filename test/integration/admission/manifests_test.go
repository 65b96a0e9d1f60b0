package admission

import (
	"fmt"
	"strings"
)

// The manifests users apply, written as they would write them (KubeRay style).

const clusterConfig = `
  rayClusterConfig:
    rayVersion: "2.52.0"
    enableInTreeAutoscaling: true
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: %[1]s
    workerGroupSpecs:
      - groupName: cpu
        minReplicas: 1
        maxReplicas: 10
        template:
          spec:
            containers:
              - name: ray-worker
                image: %[1]s
`

const serveConfig = `
  serveConfigV2: |
    applications:
      - name: fruit
        route_prefix: /fruit
        import_path: fruit.deployment_graph
`

// rayService is a valid NewCluster RayService (the strategy left to defaulting).
func rayService(name string) string {
	return fmt.Sprintf("apiVersion: ray.io/v1\nkind: RayService\nmetadata:\n  name: %s\nspec:", name) +
		serveConfig + fmt.Sprintf(clusterConfig, "rayproject/ray:2.52.0")
}

// incremental is a valid incremental RayService with the given pacing and image.
func incremental(name, image string, step, interval int) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayService
metadata:
  name: %s
spec:
  upgradeStrategy:
    type: NewClusterWithIncrementalUpgrade
    clusterUpgradeOptions:
      gatewayClassName: istio
      maxSurgePercent: 40
      stepSizePercent: %d
      intervalSeconds: %d
`, name, step, interval) + serveConfig + fmt.Sprintf(clusterConfig, image)
}

// edit replaces one line of a manifest, failing loudly when the line is not there.
func edit(manifest, old, replacement string) string {
	if !strings.Contains(manifest, old) {
		panic(fmt.Sprintf("manifest has no %q", old))
	}
	return strings.Replace(manifest, old, replacement, 1)
}

// threeMistakes has three independent mistakes: Kubernetes-delegated token auth, which
// raygate serves on a RayCluster but, as KubeRay, refuses on a RayService (on a stored object
// too), inverted replica bounds, and a route prefix without its slash.
const threeMistakes = `apiVersion: ray.io/v1
kind: RayService
metadata:
  name: three-mistakes
spec:
  serveConfigV2: |
    applications:
      - name: fruit
        route_prefix: fruit
        import_path: fruit.deployment_graph
  rayClusterConfig:
    rayVersion: "2.52.0"
    authOptions:
      mode: token
      enableK8sTokenAuth: true
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.52.0
    workerGroupSpecs:
      - groupName: cpu
        minReplicas: 5
        maxReplicas: 2
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.52.0
`

// risky is legal but earns every kind of warning.
const risky = `apiVersion: ray.io/v1
kind: RayService
metadata:
  name: risky
spec:
  serviceUnhealthySecondThreshold: 900
  upgradeStrategy:
    type: NewClusterWithIncrementalUpgrade
    clusterUpgradeOptions:
      gatewayClassName: no-such-class
      stepSizePercent: 10
      intervalSeconds: 5
` + serveConfig + `
  rayClusterConfig:
    rayVersion: "2.52.0"
    enableInTreeAutoscaling: true
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.52.0
    workerGroupSpecs:
      - groupName: cpu
        replicas: 12
        minReplicas: 1
        maxReplicas: 10
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.52.0
`

// badCluster is a RayCluster that a RayService owns (by label) with four mistakes.
const badCluster = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: a-cluster-name-that-is-far-too-long-for-its-derived-services
  labels:
    ray.io/originated-from-crd: RayService
    ray.io/originated-from-cr-name: fruit
spec:
  upgradeStrategy:
    type: Recreate
  headGroupSpec:
    rayStartParams:
      num-cpus: "0"
    resources:
      CPU: "0"
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
  workerGroupSpecs:
    - groupName: gpu_workers
      minReplicas: 0
      maxReplicas: 4
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
`
