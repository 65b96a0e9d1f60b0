package rayspec

import (
	"regexp"
	"strings"
)

var migResource = regexp.MustCompile(`^nvidia\.com/mig-\d+g\.\d+gb$`)

// IsGPUResource reports whether a container resource name is a GPU ("nvidia.com/gpu",
// "amd.com/gpu", NVIDIA MIG slices): Ray counts these as num-gpus.
func IsGPUResource(name string) bool {
	return strings.HasSuffix(name, "gpu") || migResource.MatchString(name)
}
