package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// apiServerMinor is the Kubernetes minor of the kube-apiserver in assets, from its
// `--version` ("Kubernetes v1.30.14"): `make test-compat` runs the suites on the oldest
// minor the docs claim, and a few checks depend on it.
func apiServerMinor(assets string) (int, error) {
	out, err := exec.Command(filepath.Join(assets, "kube-apiserver"), "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("asking kube-apiserver its version: %w", err)
	}
	return parseMinor(string(out))
}

var kubernetesVersion = regexp.MustCompile(`v1\.(\d+)\.\d+`)

// parseMinor reads the minor of the first "v1.<minor>.<patch>" in s.
func parseMinor(s string) (int, error) {
	m := kubernetesVersion.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("no Kubernetes version in %q", strings.TrimSpace(s))
	}
	return strconv.Atoi(m[1])
}

// GatewayAPICRDMinMinor is the Kubernetes minor a standard-channel Gateway API CRD file needs
// to be accepted by the API server, 0 when every minor raygate supports takes it.
// TLSRoute's CEL rules call isIP, a CEL function the API server accepts in new CRDs from
// 1.31 (Gateway API v1.5's release notes say so); raygate never uses TLSRoute, so a cluster
// of an older minor installs the channel without it (docs/install.md, Supported versions).
func GatewayAPICRDMinMinor(file string) int {
	switch file {
	case "gateway.networking.k8s.io_tlsroutes.yaml":
		return 31
	}
	return 0
}

// gatewayAPICRDFiles lists the CRD files of dir an API server of this minor accepts, and
// those it skips (GatewayAPICRDMinMinor), both sorted.
func gatewayAPICRDFiles(dir string, minor int) (install, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		if minor < GatewayAPICRDMinMinor(e.Name()) {
			skipped = append(skipped, e.Name())
			continue
		}
		install = append(install, filepath.Join(dir, e.Name()))
	}
	sort.Strings(install)
	sort.Strings(skipped)
	return install, skipped, nil
}
