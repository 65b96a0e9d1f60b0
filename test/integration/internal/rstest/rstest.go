// Package rstest reads and changes RayServices, namespaces and events for the integration
// suites that run RayServices, so each suite asserts the same way on what users see.
package rstest

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raygatectl"
)

// NewNamespace creates a namespace named prefix plus a random suffix.
func NewNamespace(ctx context.Context, c client.Client, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	gomega.Expect(c.Create(ctx, ns)).To(gomega.Succeed())
	return ns.Name
}

// Get reads a RayService.
func Get(ctx context.Context, c client.Client, ns, name string) *rayv1.RayService {
	svc := &rayv1.RayService{}
	gomega.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc)).To(gomega.Succeed())
	return svc
}

// ActiveName is the RayService's active cluster, to poll.
func ActiveName(ctx context.Context, c client.Client, ns, name string) func() string {
	return func() string { return Get(ctx, c, ns, name).Status.ActiveServiceStatus.RayClusterName }
}

// ClusterNames are a namespace's RayClusters not being deleted, sorted, to poll.
func ClusterNames(ctx context.Context, c client.Client, ns string) func() []string {
	return func() []string {
		var list rayv1.RayClusterList
		gomega.Expect(c.List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
		var out []string
		for _, rc := range list.Items {
			if rc.DeletionTimestamp == nil {
				out = append(out, rc.Name)
			}
		}
		slices.Sort(out)
		return out
	}
}

// PendingName is the RayService's pending cluster, to poll.
func PendingName(ctx context.Context, c client.Client, ns, name string) func() string {
	return func() string { return Get(ctx, c, ns, name).Status.PendingServiceStatus.RayClusterName }
}

// Condition is "Status/Reason" of a RayService condition ("" without it), to poll.
func Condition(ctx context.Context, c client.Client, ns, name string, t rayv1.RayServiceConditionType) func() string {
	return func() string {
		cond := meta.FindStatusCondition(Get(ctx, c, ns, name).Status.Conditions, string(t))
		if cond == nil {
			return ""
		}
		return string(cond.Status) + "/" + cond.Reason
	}
}

// ConditionMessage is the message of a RayService condition ("" without it).
func ConditionMessage(ctx context.Context, c client.Client, ns, name string, t rayv1.RayServiceConditionType) string {
	cond := meta.FindStatusCondition(Get(ctx, c, ns, name).Status.Conditions, string(t))
	if cond == nil {
		return ""
	}
	return cond.Message
}

// WaitServing waits until the RayService is Ready on an active cluster with no upgrade under
// way and returns the active cluster's name.
func WaitServing(ctx context.Context, c client.Client, ns, name string) string {
	gomega.Eventually(Condition(ctx, c, ns, name, rayv1.RayServiceReady)).Should(gomega.Equal("True/NonZeroServeEndpoints"))
	gomega.Eventually(PendingName(ctx, c, ns, name)).Should(gomega.BeEmpty())
	active := ActiveName(ctx, c, ns, name)()
	gomega.Expect(active).To(gomega.HavePrefix(name + "-"))
	return active
}

// Update changes a RayService, retrying on conflicts.
func Update(ctx context.Context, c client.Client, ns, name string, change func(*rayv1.RayService)) {
	gomega.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc := Get(ctx, c, ns, name)
		change(svc)
		return c.Update(ctx, svc)
	})).To(gomega.Succeed())
}

// SetImage sets the image of every Ray container of a RayService's cluster spec.
func SetImage(svc *rayv1.RayService, image string) {
	s := &svc.Spec.RayClusterSpec
	s.HeadGroupSpec.Template.Spec.Containers[0].Image = image
	for i := range s.WorkerGroupSpecs {
		s.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = image
	}
}

// Events lists an object's events, one "Type Reason: note" per line, to poll: the recorder
// writes events asynchronously, after the status of the same pass.
func Events(ctx context.Context, c client.Client, ns, name string) func() string {
	return func() string {
		var list eventsv1.EventList
		gomega.Expect(c.List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				notes = append(notes, e.Type+" "+e.Reason+": "+e.Note)
			}
		}
		return strings.Join(notes, "\n")
	}
}

// Plugin runs kubectl raygate in-process against the API server of kubeconfig, through its
// kubectl connection flags, and logs what a user would see.
func Plugin(ctx context.Context, kubeconfig, ns string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := raygatectl.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--namespace", ns}, args...))
	err := cmd.ExecuteContext(ctx)
	ginkgo.GinkgoWriter.Printf("$ kubectl raygate %s\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	if err != nil {
		ginkgo.GinkgoWriter.Printf("error: %v\n", err)
	}
	return out.String(), err
}
