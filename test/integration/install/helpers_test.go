package install

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/integration/install/internal/installenv"
)

const (
	release   = "raygate"
	releaseNS = "raygate-system"
)

var (
	repoRoot = tools.RepoRoot()
	chartDir = filepath.Join(repoRoot, "charts", "raygate")
)

// runHelm runs Helm 4 and returns stdout; stderr is folded into the error.
func runHelm(args ...string) (string, error) { return runHelmBin(helm, args...) }

// runHelmBin runs the given helm binary (Helm 3 or 4). Renders of the repository's chart are
// remembered for the run (renders): the chart cannot change while the suite runs, and most
// specs only read what the same values render.
func runHelmBin(bin string, args ...string) (string, error) {
	if !cacheable(args) {
		return execHelm(bin, args...)
	}
	key := bin + "\x00" + strings.Join(args, "\x00")
	renders.mu.Lock()
	defer renders.mu.Unlock()
	if r, ok := renders.byArgs[key]; ok {
		return r.out, r.err
	}
	out, err := execHelm(bin, args...)
	renders.byArgs[key] = helmResult{out, err}
	return out, err
}

type helmResult struct {
	out string
	err error
}

// renders remembers what `helm template` printed, or its error, by binary and arguments.
var renders = struct {
	mu     sync.Mutex
	byArgs map[string]helmResult
}{byArgs: map[string]helmResult{}}

// cacheable: renders that only read files of the repository. A spec's temporary chart copy
// may change between two renders, so nothing under the temporary directory is remembered.
func cacheable(args []string) bool {
	if len(args) == 0 || args[0] != "template" {
		return false
	}
	tmp := os.TempDir()
	for _, a := range args {
		if strings.HasPrefix(a, tmp) || strings.Contains(a, "="+tmp) {
			return false
		}
	}
	return true
}

// execHelm runs a helm binary; the suites share it.
var execHelm = installenv.ExecHelm

// template renders a chart directory as release "raygate" in "raygate-system".
func template(dir string, args ...string) string {
	out, err := runHelm(append([]string{"template", release, dir, "--namespace", releaseNS}, args...)...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// render renders the real chart and parses every object.
func render(args ...string) objects { return parse(template(chartDir, args...)) }

// objects are parsed manifests with lookups by kind and name.
type objects []*unstructured.Unstructured

func parse(manifests string) objects {
	var objs objects
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// byID keys the objects by kind, namespace and name, for comparisons that ignore order.
func (o objects) byID() map[string]map[string]any {
	out := make(map[string]map[string]any, len(o))
	for _, u := range o {
		id := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		Expect(out).NotTo(HaveKey(id), "rendered twice")
		out[id] = u.Object
	}
	return out
}

func (o objects) ofKind(kind string) objects {
	var out objects
	for _, u := range o {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

func (o objects) get(kind, name string) *unstructured.Unstructured {
	for _, u := range o.ofKind(kind) {
		if u.GetName() == name {
			return u
		}
	}
	return nil
}

func (o objects) names(kind string) []string {
	var names []string
	for _, u := range o.ofKind(kind) {
		names = append(names, u.GetNamespace()+"/"+u.GetName())
	}
	sort.Strings(names)
	return names
}

func (o objects) yaml() string {
	var b strings.Builder
	for _, u := range o {
		j, err := json.Marshal(u.Object)
		Expect(err).NotTo(HaveOccurred())
		b.WriteString("---\n")
		b.Write(j)
		b.WriteString("\n")
	}
	return b.String()
}

// typed converts an unstructured object into a typed one.
func typed[T any](u *unstructured.Unstructured) *T {
	Expect(u).NotTo(BeNil())
	var t T
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &t)).To(Succeed())
	return &t
}

func (o objects) deployment() *appsv1.Deployment {
	ds := o.ofKind("Deployment")
	Expect(ds).To(HaveLen(1))
	return typed[appsv1.Deployment](ds[0])
}

func (o objects) mutating() []admissionregistrationv1.MutatingWebhook {
	var hooks []admissionregistrationv1.MutatingWebhook
	for _, u := range o.ofKind("MutatingWebhookConfiguration") {
		hooks = append(hooks, typed[admissionregistrationv1.MutatingWebhookConfiguration](u).Webhooks...)
	}
	return hooks
}

func (o objects) validating() []admissionregistrationv1.ValidatingWebhook {
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, u := range o.ofKind("ValidatingWebhookConfiguration") {
		hooks = append(hooks, typed[admissionregistrationv1.ValidatingWebhookConfiguration](u).Webhooks...)
	}
	return hooks
}

// rules returns the rules of every object of a kind (ClusterRole or Role).
func (o objects) rules(kind string) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, u := range o.ofKind(kind) {
		out[u.GetNamespace()+"/"+u.GetName()] = typed[rbacv1.ClusterRole](u).Rules
	}
	return out
}

// generated is what `make manifests` generated from the other packages' markers.
type generated struct {
	clusterRules []rbacv1.PolicyRule // the generated ClusterRole
	ownRules     []rbacv1.PolicyRule // generated Roles (markers with namespace=)
	mutating     []admissionregistrationv1.MutatingWebhook
	validating   []admissionregistrationv1.ValidatingWebhook
}

func readGenerated(rolePath, webhooksPath string) generated {
	var g generated
	for _, u := range parse(readFileOrEmpty(rolePath)) {
		switch u.GetKind() {
		case "ClusterRole":
			g.clusterRules = append(g.clusterRules, typed[rbacv1.ClusterRole](u).Rules...)
		case "Role":
			g.ownRules = append(g.ownRules, typed[rbacv1.Role](u).Rules...)
		}
	}
	objs := parse(readFileOrEmpty(webhooksPath))
	g.mutating, g.validating = objs.mutating(), objs.validating()
	return g
}

var readFileOrEmpty = installenv.ReadFileOrEmpty

// chartWithGenerated copies the chart into a temporary directory with other generated
// files, so the chart's handling of markers that have not landed yet is tested too.
func chartWithGenerated(tmp, role, webhooks string) string {
	dir := filepath.Join(tmp, "raygate")
	Expect(os.CopyFS(dir, os.DirFS(chartDir))).To(Succeed())
	for name, src := range map[string]string{"role.yaml": role, "webhooks.yaml": webhooks} {
		b, err := os.ReadFile(src)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "generated", name), b, 0o644)).To(Succeed())
	}
	return dir
}

func testdataPath(name string) string {
	return filepath.Join(repoRoot, "test", "integration", "install", "testdata", name)
}

// canI asks the API server whether user may do what attrs say, as `kubectl auth can-i
// --as=user` asks it (a SelfSubjectAccessReview sent impersonating user), without a kubectl
// process per question. An error fails the spec rather than reading as "no".
func canI(ctx context.Context, user string, attrs authorizationv1.ResourceAttributes) bool {
	GinkgoHelper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return review.Status.Allowed
}

// access is what canI asks about: verb on group's resource ("pods/status": a subresource) in
// ns ("": in every namespace).
func access(verb, group, resource, ns string) authorizationv1.ResourceAttributes {
	res, sub, _ := strings.Cut(resource, "/")
	return authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: res, Subresource: sub, Namespace: ns}
}

// kustomizeDefault is what `kubectl kustomize config/default` prints, run once: its megabytes
// of CRDs take seconds, and config/ cannot change while the suite runs.
func kustomizeDefault(ctx context.Context) string {
	GinkgoHelper()
	kustomized.once.Do(func() {
		kustomized.out, kustomized.stderr, kustomized.err = env.Kubectl(ctx, "", "kustomize", filepath.Join(repoRoot, "config", "default"))
	})
	Expect(kustomized.err).NotTo(HaveOccurred(), kustomized.stderr)
	return kustomized.out
}

var kustomized struct {
	once        sync.Once
	out, stderr string
	err         error
}
