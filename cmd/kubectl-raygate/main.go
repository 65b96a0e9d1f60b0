// Command kubectl-raygate is the kubectl plugin for raygate (`kubectl raygate ...` once it is
// on the PATH): status and why for RayServices, RayJobs and RayClusters; pause, resume, abort
// and promote for a RayService's upgrade; version.
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/raygate/raygate/internal/raygatectl"
)

func main() {
	cmd := raygatectl.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
