package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/raygate/raygate/internal/validation"
)

// sharedGatewayLookup reads the Gateway a RayService attaches its routes to, for warnings
// only: a Gateway that is missing, unreadable or whose listeners would not admit the routes
// is the Gateway owner's to change, and the controller reports its real answer.
type sharedGatewayLookup struct{ lookup }

func (l sharedGatewayLookup) get(ctx context.Context, ref types.NamespacedName) (validation.SharedGatewayState, *gatewayv1.Gateway) {
	ctx, cancel, ok := l.bounded(ctx)
	defer cancel()
	if !ok {
		return validation.SharedGatewayUnknown, nil
	}
	gw := &gatewayv1.Gateway{}
	err := l.reader.Get(ctx, ref, gw)
	switch {
	case err == nil:
		return validation.SharedGatewayFound, gw
	case apierrors.IsNotFound(err):
		return validation.SharedGatewayNotFound, nil
	default:
		outOfTime(ctx, err, fmt.Sprintf("the listeners of Gateway %s", ref))
		logf.FromContext(ctx).Info("could not read the shared Gateway; allowedRoutes not checked", "gateway", ref.String(), "error", err.Error())
		return validation.SharedGatewayUnreadable, nil
	}
}
