// Command image builds the operator image with ko, without a container engine or a registry
// on the network (`make image`): it writes an OCI layout and a tarball for one arch
// (hack/internal/koimage says how).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/raygate/raygate/hack/internal/koimage"
)

func main() {
	ko := flag.String("ko", "", "path of the ko binary (hack/tools.sh path ko)")
	repo := flag.String("repo", koimage.DefaultRepository, "image repository the image is named for")
	version := flag.String("version", "dev", "version stamped into the binary and tagged")
	out := flag.String("out", "bin/image", "directory of the OCI layout; the tarball is <out>.tar")
	arch := flag.String("arch", runtime.GOARCH, "GOARCH of the image")
	flag.Parse()
	if *ko == "" {
		log.Fatal("--ko is required")
	}
	start := time.Now()
	res, err := koimage.Build(context.Background(), koimage.Options{
		Ko: *ko, Repo: *repo, Version: *version, Archs: []string{*arch}, Layout: *out, Tarball: *out + ".tar",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("image %s:%s@%s (OCI layout %s, tarball %s.tar) built in %s\n", *repo, *version, res.Descriptor.Digest, *out, *out, time.Since(start).Round(time.Second))
}
