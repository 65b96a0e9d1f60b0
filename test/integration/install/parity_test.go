package install

import (
	"context"
	"slices"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kustomizeOnly are the objects only config/default renders, each with the reason: Helm
// installs into a namespace that exists (--create-namespace), kustomize creates its own.
var kustomizeOnly = map[string]string{
	"Namespace//raygate-system": "kustomize creates the namespace with the restricted Pod Security labels",
}

// comparable drops what legitimately differs between the two renderings: the labels and
// annotations each tool adds (helm.sh/chart, managed-by, version; the chart's
// default-container annotation is kept in both pod templates and compared there).
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	c.SetLabels(nil)
	c.SetAnnotations(keepAnnotations(c.GetAnnotations()))
	if c.GetKind() == "Deployment" {
		unstructured.RemoveNestedField(c.Object, "spec", "template", "metadata", "labels")
	}
	if len(c.GetLabels()) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "labels")
	}
	if len(c.GetAnnotations()) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	}
	return c.Object
}

// keepAnnotations keeps the annotations that change behaviour (the CA injection).
func keepAnnotations(a map[string]string) map[string]string {
	out := map[string]string{}
	if v, ok := a["cert-manager.io/inject-ca-from"]; ok {
		out["cert-manager.io/inject-ca-from"] = v
	}
	return out
}

func ids(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

var _ = Describe("the kustomize install and the chart", func() {
	It("render the same objects with the same specs (chart defaults, release raygate in raygate-system)", func(ctx context.Context) {
		out := kustomizeDefault(ctx)
		kust := parse(out)
		chart := render("--include-crds")

		kustByID, chartByID := map[string]map[string]any{}, map[string]map[string]any{}
		for _, u := range kust {
			id := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
			if _, only := kustomizeOnly[id]; only {
				continue
			}
			kustByID[id] = comparable(u)
		}
		for _, u := range chart {
			chartByID[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = comparable(u)
		}
		Expect(ids(kustByID)).To(Equal(ids(chartByID)), "the same kinds, namespaces and names")
		for _, id := range ids(chartByID) {
			Expect(kustByID[id]).To(Equal(chartByID[id]), "%s differs between config/default and the chart", id)
		}
		for id := range kustomizeOnly {
			Expect(slices.ContainsFunc(kust, func(u *unstructured.Unstructured) bool {
				return u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName() == id
			})).To(BeTrue(), "kustomizeOnly names %s, which config/default no longer renders", id)
		}
	})
})
