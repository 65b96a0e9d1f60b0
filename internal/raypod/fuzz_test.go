package raypod

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
)

// FuzzBuildPods builds the head pod, a worker pod and the head Service of a cluster whose
// integers and rayStartParams a tenant chose: extreme numOfHosts and replica indices, any
// port text, any resource quantity. Building never panics, and every container port it sets
// is a valid port.
func FuzzBuildPods(f *testing.F) {
	f.Add(int32(1), 0, 0, "8265", "6379", "4", "1Gi", false)
	f.Add(int32(math.MaxInt32), math.MaxInt, math.MaxInt, "65536", "-1", "1e30", "9223372036854775807", true)
	f.Add(int32(-3), -1, -7, "0", "abc", "", "-1", true)
	f.Add(int32(64), 77, 63, "08265", " 6379 ", "0.001", "1Ei", false)
	f.Fuzz(func(t *testing.T, hosts int32, index, host int, dashboardPort, gcsPort, cpu, memory string, autoscaling bool) {
		rc := builders.RayCluster("c", "ns").Obj()
		rc.Spec.EnableInTreeAutoscaling = ptr.To(autoscaling)
		rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"dashboard-port": dashboardPort, "port": gcsPort, "num-cpus": cpu}
		g := &rc.Spec.WorkerGroupSpecs[0]
		g.NumOfHosts = hosts
		g.RayStartParams = map[string]string{"num-cpus": cpu, "memory": memory}
		if q, err := resource.ParseQuantity(memory); err == nil {
			g.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q}
		}
		defaulting.RayCluster(rc)

		pods := []*corev1.Pod{
			HeadPod(rc, "hash", Settings{}),
			WorkerPod(rc, g, nil, Settings{}),
			WorkerPod(rc, g, &ReplicaIndex{Index: index, Name: "r", Host: host, MultiHost: hosts > 1}, Settings{}),
		}
		for _, p := range pods {
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				for _, port := range c.Ports {
					if port.ContainerPort < 1 || port.ContainerPort > 65535 {
						t.Fatalf("%s: container %s port %s = %d", p.GenerateName, c.Name, port.Name, port.ContainerPort)
					}
				}
			}
		}
		for _, port := range HeadService(rc).Spec.Ports {
			if port.Port < 1 || port.Port > 65535 {
				t.Fatalf("head Service port %s = %d", port.Name, port.Port)
			}
		}
	})
}
