package admission

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// kubeRaySampleRejections are the RayCluster and RayService objects of KubeRay's samples
// that raygate refuses, with a fragment of the reason kubectl prints: Service types beyond
// ClusterIP, which the platform admin allows (policy.allowedServiceTypes; ClusterIP only by
// default, so a tenant cannot expose a cluster outside without the admin's say), and a
// sample that is a template to fill in ($KSA_NAME for the pods' ServiceAccount), whose pods
// the API server refuses as written (the pods' dry-run; it was admitted before, and its pods
// refused at creation). Everything else in the samples, GCS fault tolerance and token
// authentication included, must be admitted unchanged.
var kubeRaySampleRejections = map[string]string{
	"ray-cluster.custom-head-service.yaml RayCluster/custom-head-svc":    "Service type LoadBalancer is not allowed here",
	"ray-cluster.separate-ingress.yaml RayCluster/raycluster-ingress":    "Service type NodePort is not allowed here",
	"ray-service.custom-serve-service.yaml RayService/rayservice-sample": "Service type LoadBalancer is not allowed here",
	"vllm/ray-service.vllm-tpu-v6e-singlehost.yaml RayService/vllm-tpu":  `spec.rayClusterConfig.headGroupSpec.template.spec.serviceAccountName: Invalid value: "$KSA_NAME"`,
}

var _ = Describe("KubeRay's sample manifests", func() {
	It("apply unchanged through the webhooks, but for Service types the admin has not allowed", func(ctx context.Context) {
		dir, err := tools.Path("kuberay-samples")
		Expect(err).NotTo(HaveOccurred())
		var files []string
		Expect(filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
				files = append(files, path)
			}
			return err
		})).To(Succeed())
		Expect(files).NotTo(BeEmpty())

		rejected := map[string]string{}
		var admitted []string
		for _, file := range files {
			b, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
				var head struct {
					APIVersion string `json:"apiVersion"`
					Kind       string `json:"kind"`
					Metadata   struct {
						Name      string `json:"name"`
						Namespace string `json:"namespace"`
					} `json:"metadata"`
				}
				Expect(yaml.Unmarshal([]byte(doc), &head)).To(Succeed(), file)
				if head.APIVersion != "ray.io/v1" || (head.Kind != "RayCluster" && head.Kind != "RayService") {
					continue
				}
				if ns := head.Metadata.Namespace; ns != "" && ns != "default" {
					_, _, _ = env.Kubectl(ctx, "", "create", "namespace", ns) // exists after the first
				}
				rel, err := filepath.Rel(dir, file)
				Expect(err).NotTo(HaveOccurred())
				key := fmt.Sprintf("%s %s/%s", rel, head.Kind, head.Metadata.Name)
				_, stderr, err := env.Kubectl(ctx, doc, "apply", "--dry-run=server", "-f", "-")
				if err != nil {
					rejected[key] = strings.TrimSpace(stderr)
				} else {
					admitted = append(admitted, key)
				}
			}
		}
		sort.Strings(admitted)
		AddReportEntry("KubeRay samples", fmt.Sprintf("%d RayCluster/RayService objects from %d files: %d admitted, %d refused",
			len(admitted)+len(rejected), len(files), len(admitted), len(rejected)))
		GinkgoWriter.Printf("refused:\n")
		for k, v := range rejected {
			GinkgoWriter.Printf("  %s: %s\n", k, v)
		}

		Expect(keysOf(rejected)).To(ConsistOf(keysOf(kubeRaySampleRejections)), "refused samples: %v", rejected)
		for k, want := range kubeRaySampleRejections {
			Expect(rejected[k]).To(ContainSubstring(want), k)
		}
		Expect(len(admitted)+len(rejected)).To(Equal(47), "KubeRay v1.5.1's samples (config/samples and its folders) hold 47 RayClusters and RayServices")
	})
})

func keysOf(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
