package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/validation"
)

// certManagerLookup finds out whether cert-manager's Certificate and Issuer APIs are served,
// by listing at most one of each in the object's namespace. Only "no such API" refuses a TLS
// cluster; any other failure is logged and refuses nothing, so admission never depends on it.
type certManagerLookup struct{ lookup }

func (l certManagerLookup) state(ctx context.Context, namespace string) validation.CertManagerState {
	ctx, cancel, ok := l.bounded(ctx)
	defer cancel()
	if !ok {
		return validation.CertManagerUnknown
	}
	for _, gvk := range []schema.GroupVersionKind{raypod.CertificateGVK, raypod.IssuerGVK} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := l.reader.List(ctx, list, client.InNamespace(namespace), client.Limit(1))
		switch {
		case meta.IsNoMatchError(err):
			return validation.CertManagerNotInstalled
		case err != nil:
			outOfTime(ctx, err, "whether cert-manager is installed")
			logf.FromContext(ctx).Info("could not look up cert-manager's API; not refusing tlsOptions for it", "kind", gvk.Kind, "error", err.Error())
			return validation.CertManagerUnknown
		}
	}
	return validation.CertManagerInstalled
}
