// Package permissions tests the harness that holds every suite's manager to the Helm
// chart's RBAC (internal/testenv/framework/suite): a manager missing a rule is refused by the
// API server, the refusal is recorded with the rule to add, and the spec it happened in
// fails; the chart's namespace-scoped layout lets a manager work in its namespaces and
// nowhere else; and the chart's operator policy (operatorPolicy), installed here for every
// ServiceAccount a manager runs as, refuses the operator's own token every write raygate
// never makes while raygate's own work goes on.
package permissions

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
)

var (
	harness *suite.Suite
	k8s     client.Client
)

func TestPermissions(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "The chart's RBAC in the suites")
}

var _ = BeforeSuite(func(ctx context.Context) {
	harness = suite.Start(suite.Options{Kubelet: &framework.KubeletOptions{}})
	k8s = harness.Client
	// Every manager here runs under the chart's bound on its own rights, as installed.
	installOperatorPolicies(ctx)
})

func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "perm-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// allowed asks the API server's authorizer whether sa may do verb on a resource in ns.
func allowed(ctx context.Context, sa framework.ServiceAccount, verb, group, resource, ns string) bool {
	GinkgoHelper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: sa.User(), Groups: sa.Groups(),
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource},
	}}
	Expect(k8s.Create(ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}
