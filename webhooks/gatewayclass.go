package webhooks

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/validation"
)

// lookup reads the API server directly, within a timeout, for an admission check.
type lookup struct {
	reader  client.Reader
	timeout time.Duration
}

// bounded is ctx with the lookup's timeout; ok is false when there is no reader.
func (l lookup) bounded(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	if l.reader == nil {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	return ctx, cancel, true
}

// gatewayClassLookup finds out whether a GatewayClass exists, for a warning only: any
// failure other than "not found" or "no such API" is logged and produces no warning, so
// admission never depends on it.
type gatewayClassLookup struct{ lookup }

func (l gatewayClassLookup) state(ctx context.Context, name string) validation.GatewayClassState {
	ctx, cancel, ok := l.bounded(ctx)
	defer cancel()
	if !ok {
		return validation.GatewayClassUnknown
	}
	err := l.reader.Get(ctx, client.ObjectKey{Name: name}, &gatewayv1.GatewayClass{})
	switch {
	case err == nil:
		return validation.GatewayClassFound
	case meta.IsNoMatchError(err):
		return validation.GatewayAPINotInstalled
	case apierrors.IsNotFound(err):
		return validation.GatewayClassNotFound
	default:
		outOfTime(ctx, err, fmt.Sprintf("whether GatewayClass %q exists", name))
		logf.FromContext(ctx).Info("could not look up GatewayClass; no warning given", "gatewayClass", name, "error", err.Error())
		return validation.GatewayClassUnknown
	}
}
