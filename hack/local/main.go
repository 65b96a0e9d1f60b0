// Command local runs raygate on an embedded control plane (etcd + kube-apiserver built from
// Go modules) so it can be tried without a Kubernetes cluster. `make run` starts it.
package main

import (
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "raygate local:", err)
		os.Exit(1)
	}
}

func run() error {
	log, err := app.NewLogger("info", "console")
	if err != nil {
		return err
	}
	ctrl.SetLogger(log)
	ctx := ctrl.SetupSignalHandler()

	fmt.Println("starting a local control plane (etcd + kube-apiserver)...")
	env, err := controlplane.Start(controlplane.Options{GatewayAPI: true})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()

	opts := app.DefaultOptions()
	opts.MetricsAddr = "0"
	opts.ProbeAddr = "127.0.0.1:8081"
	opts.EnableWebhooks = false
	fmt.Printf("\nraygate is running. In another terminal:\n\n  export KUBECONFIG=%s\n  %s/kubectl get rayclusters,rayservices -A\n\nCtrl-C stops everything.\n\n", env.Kubeconfig, env.AssetsDir)
	return app.Run(ctx, env.Config, opts)
}
