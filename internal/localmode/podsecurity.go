package localmode

import (
	"context"
	"fmt"
	"strings"
)

// Pod Security at admission, as `make run` shows it: a namespace that enforces the
// restricted standard, and the RayCluster sample, whose pods that namespace would refuse.
const (
	RestrictedNamespace = "restricted-demo"
	RayClusterSample    = "ray_v1_raycluster.yaml"
	enforceRestricted   = "pod-security.kubernetes.io/enforce=restricted"
)

// ShowPodSecurity creates RestrictedNamespace (labelled to enforce the restricted Pod
// Security Standard) and applies the RayCluster sample to it, which admission refuses,
// naming every field to set. It returns the commands and what kubectl printed, and an error
// if the sample was not refused for its Pod Security.
func ShowPodSecurity(ctx context.Context, s *Session) (string, error) {
	var b strings.Builder
	run := func(args ...string) (string, error) {
		fmt.Fprintf(&b, "$ kubectl %s\n", strings.Join(args, " "))
		stdout, stderr, err := s.Kubectl(ctx, "", args...)
		b.WriteString(stdout + stderr)
		return stderr, err
	}
	// A namespace left by an earlier session of the same environment will do.
	if stderr, err := run("create", "namespace", RestrictedNamespace); err != nil && !strings.Contains(stderr, "AlreadyExists") {
		return b.String(), fmt.Errorf("creating namespace %s: %w: %s", RestrictedNamespace, err, stderr)
	}
	if stderr, err := run("label", "--overwrite", "namespace", RestrictedNamespace, enforceRestricted); err != nil {
		return b.String(), fmt.Errorf("labelling namespace %s: %w: %s", RestrictedNamespace, err, stderr)
	}
	stderr, err := run("apply", "-n", RestrictedNamespace, "-f", SamplePath(RayClusterSample))
	if err == nil || !strings.Contains(stderr, `violates PodSecurity "restricted:latest"`) {
		return b.String(), fmt.Errorf("the RayCluster sample was not refused for its Pod Security in namespace %s: %s", RestrictedNamespace, stderr)
	}
	return b.String(), nil
}
