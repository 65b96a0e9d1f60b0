package webhooks

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/raygate/raygate/internal/validation"
)

// NamespaceMetadata is how the webhooks read a namespace: labels only, from a metadata-only
// informer, so the cache holds no more of each namespace than its metadata.
func NamespaceMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return m
}

// namespaceLookup reads what admission checks the pods against: the namespace's Pod
// Security labels and its ResourceQuotas. A failed read is logged and skips that check
// (the API server still enforces both when raygate creates the pods), so admission never
// depends on it.
type namespaceLookup struct {
	reader client.Reader
	// live reads a namespace the cache does not hold yet (one created a moment before the
	// object, as scripts do); nil: none.
	live    client.Reader
	timeout time.Duration
}

func (l namespaceLookup) facts(ctx context.Context, name string) *validation.Namespace {
	if l.reader == nil || name == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	ns := &validation.Namespace{Name: name}
	meta := NamespaceMetadata()
	err := l.reader.Get(ctx, client.ObjectKey{Name: name}, meta)
	if apierrors.IsNotFound(err) && l.live != nil {
		err = l.live.Get(ctx, client.ObjectKey{Name: name}, meta)
	}
	if err != nil {
		outOfTime(ctx, err, "the Pod Security labels of the namespace")
		logf.FromContext(ctx).Info("could not read the namespace's labels; Pod Security not checked", "error", err.Error())
	} else {
		ns.Labels, ns.LabelsKnown = meta.Labels, true
	}
	var quotas corev1.ResourceQuotaList
	if err := l.reader.List(ctx, &quotas, client.InNamespace(name)); err != nil {
		outOfTime(ctx, err, "the ResourceQuotas of the namespace")
		logf.FromContext(ctx).Info("could not list the namespace's ResourceQuotas; quotas not checked", "error", err.Error())
	} else {
		ns.Quotas = quotas.Items
	}
	return ns
}
