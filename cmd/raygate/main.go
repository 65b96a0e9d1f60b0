// Command raygate runs the raygate operator: admission webhooks and controllers for
// RayCluster and RayService.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/version"
)

func main() {
	os.Exit(run())
}

func run() int {
	opts := app.DefaultOptions()
	opts.ReadEnvironment() // before the flags, which override POD_NAMESPACE
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	opts.BindFlags(fs)
	if err := fs.Parse(app.KubeRayArgs(fs, os.Args[1:])); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	notices, err := opts.Resolve(fs) // KubeRay's flag names and --config
	if err == nil {
		err = opts.Validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log, logs, err := opts.Logger()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer func() { _ = logs.Close() }()
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	for _, n := range notices {
		log.Info(n.Message, n.KeysAndValues...)
	}

	cfg, err := opts.RESTConfig()
	if err != nil {
		log.Error(err, "no Kubernetes configuration")
		return 1
	}
	log.Info("starting raygate", "version", version.Version, "watchNamespaces", opts.WatchNamespaces, "webhooks", opts.EnableWebhooks)
	if err := app.Run(ctrl.SetupSignalHandler(), cfg, opts); err != nil {
		log.Error(err, "manager stopped")
		return 1
	}
	return 0
}
