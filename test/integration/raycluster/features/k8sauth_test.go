package features

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/framework"
)

// k8sAuthSample has the shape of KubeRay's ray-cluster.kubernetes.auth.yaml (smaller
// resources): the RayCluster with authOptions {mode: token, enableK8sTokenAuth: true}, its
// pods' ServiceAccount, and the review rights the user grants that account.
const k8sAuthSample = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: ray-cluster-with-k8s-auth
spec:
  rayVersion: '2.55.0'
  enableInTreeAutoscaling: true
  authOptions:
    mode: 'token'
    enableK8sTokenAuth: true
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        serviceAccountName: ray-cluster-with-k8s-auth
        containers:
        - name: ray-head
          image: rayproject/ray:2.55.0
          resources:
            limits: {cpu: "1", memory: 2Gi}
  workerGroupSpecs:
  - replicas: 1
    minReplicas: 1
    maxReplicas: 5
    groupName: workergroup
    rayStartParams: {}
    template:
      spec:
        serviceAccountName: ray-cluster-with-k8s-auth
        containers:
        - name: ray-worker
          image: rayproject/ray:2.55.0
          resources:
            limits: {cpu: "1", memory: 2Gi}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ray-cluster-with-k8s-auth
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ray-authenticator-%[1]s
rules:
- apiGroups: ["authentication.k8s.io"]
  resources: ["tokenreviews"]
  verbs: ["create"]
- apiGroups: ["authorization.k8s.io"]
  resources: ["subjectaccessreviews"]
  verbs: ["create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ray-authenticator-%[1]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ray-authenticator-%[1]s
subjects:
- kind: ServiceAccount
  name: ray-cluster-with-k8s-auth
  namespace: %[1]s
`

var _ = Describe("Kubernetes-delegated token authentication (authOptions.enableK8sTokenAuth)", func() {
	It("gives every Ray process the mode and the pod's projected ServiceAccount token, and creates no Secret, without --token-authentication", func(ctx context.Context) {
		By("running a manager without --token-authentication: this mode needs no Secret rights")
		Expect(mgr.Stop()).To(Succeed())
		mgr = harness.StartManager(framework.ManagerOptions())
		DeferCleanup(restartManager)

		ns := world.NewNamespace(ctx)
		_, stderr, err := env.Kubectl(ctx, fmt.Sprintf(k8sAuthSample, ns), "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		DeferCleanup(func(ctx context.Context) {
			_, stderr, err := env.Kubectl(ctx, "", "delete", "clusterrolebinding,clusterrole", "ray-authenticator-"+ns)
			Expect(err).NotTo(HaveOccurred(), stderr)
		})
		const name = "ray-cluster-with-k8s-auth"
		world.WaitReady(ctx, ns, name)

		wantEnv := []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}, {Name: "RAY_ENABLE_K8S_TOKEN_AUTH", Value: "true"}}
		wantMount := corev1.VolumeMount{Name: "ray-token", MountPath: "/var/run/secrets/ray.io/serviceaccount", ReadOnly: true}
		head, worker := world.HeadPods(ctx, ns, name)[0], world.WorkerPods(ctx, ns, name, "workergroup")[0]
		rayProcesses := map[string]*corev1.Container{}
		for _, p := range []corev1.Pod{head, worker} {
			Expect(p.Spec.ServiceAccountName).To(Equal(name))
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if c.Name == "ray-head" || c.Name == "ray-worker" || c.Name == "autoscaler" || c.Name == "wait-gcs-ready" {
					rayProcesses[p.Name+"/"+c.Name] = &c
				}
			}

			By("pod " + p.Name + ": one ray-token volume, the ServiceAccount token projected at path token")
			var tokenVolumes []corev1.Volume
			for _, v := range p.Spec.Volumes {
				if v.Name == "ray-token" {
					tokenVolumes = append(tokenVolumes, v)
				}
			}
			Expect(tokenVolumes).To(HaveLen(1))
			Expect(tokenVolumes[0].Projected).NotTo(BeNil())
			sources := tokenVolumes[0].Projected.Sources
			Expect(sources).To(HaveLen(1))
			Expect(sources[0].ServiceAccountToken).NotTo(BeNil())
			Expect(sources[0].ServiceAccountToken.Path).To(Equal("token"))
			Expect(sources[0].ServiceAccountToken.Audience).To(BeEmpty(), "KubeRay sets no audience")
		}
		Expect(rayProcesses).To(HaveLen(4), "head Ray container, autoscaler, worker Ray container, wait-gcs-ready")
		for what, c := range rayProcesses {
			Expect(authEnvOf(*c)).To(ConsistOf(wantEnv[0]), what) // RAY_AUTH_MODE only: no RAY_AUTH_TOKEN
			Expect(c.Env).To(ContainElement(wantEnv[1]), what)
			Expect(c.VolumeMounts).To(ContainElement(wantMount), what)
		}

		By("no Secret in the namespace, and no event about one")
		Consistently(func() []corev1.Secret {
			var list corev1.SecretList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			return list.Items
		}, 2*time.Second).Should(BeEmpty())
		Expect(world.Events(ctx, ns, name)()).NotTo(ContainElement(ContainSubstring("Secret")))
	})
})
