package batchscheduler

import (
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("raygate --batch-scheduler=yunikorn", func() {
	It("hands a gang-labelled cluster's pods to YuniKorn with its task groups", func(ctx context.Context) {
		startRaygate("yunikorn")
		ns := newNamespace(ctx)
		stderr := apply(ctx, ns, `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: test-yunikorn-0
  labels:
    ray.io/gang-scheduling-enabled: "true"
    yunikorn.apache.org/app-id: test-yunikorn-0
    yunikorn.apache.org/queue: root.test
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          resources:
            requests: {cpu: "1", memory: 2Gi}
  workerGroupSpecs:
  - groupName: worker
    rayStartParams: {}
    replicas: 2
    minReplicas: 1
    maxReplicas: 2
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
          resources:
            requests: {cpu: "1", memory: 1Gi}
`)
		Expect(stderr).NotTo(ContainSubstring("Warning"))
		Eventually(pods(ctx, ns, "test-yunikorn-0")).Should(HaveLen(3))
		for _, p := range pods(ctx, ns, "test-yunikorn-0")() {
			Expect(p.Spec.SchedulerName).To(Equal("yunikorn"), p.Name)
			Expect(p.Labels).To(HaveKeyWithValue("applicationId", "test-yunikorn-0"), p.Name)
			Expect(p.Labels).To(HaveKeyWithValue("queue", "root.test"), p.Name)
			Expect(p.Annotations).To(HaveKeyWithValue("yunikorn.apache.org/task-group-name", p.Labels["ray.io/group"]), p.Name)
			var groups []map[string]any
			Expect(json.Unmarshal([]byte(p.Annotations["yunikorn.apache.org/task-groups"]), &groups)).To(Succeed(), p.Name)
			Expect(groups).To(ConsistOf(
				And(HaveKeyWithValue("name", "headgroup"), HaveKeyWithValue("minMember", BeEquivalentTo(1)),
					HaveKeyWithValue("minResource", Equal(map[string]any{"cpu": "1", "memory": "2Gi"}))),
				And(HaveKeyWithValue("name", "worker"), HaveKeyWithValue("minMember", BeEquivalentTo(1)),
					HaveKeyWithValue("minResource", Equal(map[string]any{"cpu": "1", "memory": "1Gi"}))),
			), p.Name)
		}
	})
})
