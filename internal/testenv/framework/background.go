package framework

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rayscheme "github.com/raygate/raygate/apis/scheme"
)

// background is the controller-runtime manager a test helper (fake kubelet, simulated Ray
// listeners) runs its controllers in: no metrics or probe listener, started in the
// background and stopped with the helper.
type background struct {
	ctrl.Manager
	cancel context.CancelFunc
	done   chan struct{}
}

func newBackground(cfg *rest.Config) (*background, error) {
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{
		Scheme:                 rayscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	return &background{Manager: mgr}, nil
}

// start runs the manager until stop and waits for its caches; what names the helper in the
// error.
func (b *background) start(what string) error {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	go func() {
		defer close(b.done)
		_ = b.Start(ctx)
	}()
	if !b.GetCache().WaitForCacheSync(ctx) {
		cancel()
		<-b.done
		return fmt.Errorf("%s: cache did not sync", what)
	}
	return nil
}

// stop stops the manager and waits for it to exit.
func (b *background) stop() {
	b.cancel()
	<-b.done
}
