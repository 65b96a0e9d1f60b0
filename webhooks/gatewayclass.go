package webhooks

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/validation"
)

// gatewayClassLookup finds out whether a GatewayClass exists, for a warning only: any
// failure other than "not found" or "no such API" is logged and produces no warning, so
// admission never depends on it.
type gatewayClassLookup struct {
	reader  client.Reader
	timeout time.Duration
}

func (l gatewayClassLookup) state(ctx context.Context, name string) validation.GatewayClassState {
	if l.reader == nil {
		return validation.GatewayClassUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	err := l.reader.Get(ctx, client.ObjectKey{Name: name}, &gatewayv1.GatewayClass{})
	switch {
	case err == nil:
		return validation.GatewayClassFound
	case meta.IsNoMatchError(err):
		return validation.GatewayAPINotInstalled
	case apierrors.IsNotFound(err):
		return validation.GatewayClassNotFound
	default:
		logf.FromContext(ctx).Info("could not look up GatewayClass; no warning given", "gatewayClass", name, "error", err.Error())
		return validation.GatewayClassUnknown
	}
}
