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
	opts := app.DefaultOptions()
	opts.ReadEnvironment() // before the flags, which override POD_NAMESPACE
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	opts.BindFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log, err := app.NewLogger(opts.LogLevel, opts.LogFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "no Kubernetes configuration")
		os.Exit(1)
	}
	log.Info("starting raygate", "version", version.Version, "watchNamespaces", opts.WatchNamespaces, "webhooks", opts.EnableWebhooks)
	if err := app.Run(ctrl.SetupSignalHandler(), cfg, opts); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
