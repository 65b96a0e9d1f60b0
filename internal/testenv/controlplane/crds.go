package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CRDInstallTimeout bounds the wait for installed CRDs to be served. The ray.io CRDs serve
// v1 and a deprecated v1alpha1 copy (about 1 MB of schema each): on a loaded two-core
// machine the API server takes longer than envtest's 10 s default to publish them.
const CRDInstallTimeout = 2 * time.Minute

// crdFiles lists the CRD files of paths as envtest reads a CRD directory (.json, .yaml and
// .yml files); a path may also be one file (the Gateway API CRDs an older API server
// accepts are listed file by file). A missing directory is an error, so a suite never runs
// without its CRDs.
func crdFiles(paths []string) ([]string, error) {
	var files []string
	for _, dir := range paths {
		if st, err := os.Stat(dir); err == nil && !st.IsDir() {
			files = append(files, dir)
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("reading CRD directory: %w", err)
		}
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".json", ".yaml", ".yml":
				if !e.IsDir() {
					files = append(files, filepath.Join(dir, e.Name()))
				}
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD file in %v", paths)
	}
	return files, nil
}

// readCRDs parses the CRDs of files, one file per goroutine: the ray.io files are megabytes
// of YAML each.
func readCRDs(files []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	perFile := make([][]*apiextensionsv1.CustomResourceDefinition, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			opts := envtest.CRDInstallOptions{Paths: []string{f}, ErrorIfPathMissing: true}
			errs[i] = envtest.ReadCRDFiles(&opts)
			perFile[i] = opts.CRDs
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("reading CRDs: %w", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, c := range perFile {
		crds = append(crds, c...)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRD in %v", files)
	}
	return crds, nil
}

// installCRDs creates every CRD at once and waits until all are served. The API server
// takes seconds to check and publish each large schema (the ray.io CRDs); one after
// another, as envtest installs them, that was the largest part of a suite's set-up.
func installCRDs(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, crd := range crds {
		wg.Go(func() { errs[i] = envtest.CreateCRDs(cfg, []*apiextensionsv1.CustomResourceDefinition{crd}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return waitForCRDs(cfg, crds)
}

// waitForCRDs waits until the API server serves every CRD's resources.
func waitForCRDs(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	opts := envtest.CRDInstallOptions{MaxTime: CRDInstallTimeout, PollInterval: 100 * time.Millisecond}
	if err := envtest.WaitForCRDs(cfg, crds, opts); err != nil {
		return fmt.Errorf("waiting for the CRDs to be served: %w", err)
	}
	return nil
}
