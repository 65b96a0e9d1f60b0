package localmode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// Sample file names in config/samples.
const (
	IncrementalSample = "ray_v1_rayservice_incremental.yaml"
	InvalidSample     = "rayservice_invalid.yaml"
	RayJobSample      = "ray_v1_rayjob.yaml"
	// RayJobSampleName is the name of the RayJob in RayJobSample.
	RayJobSampleName = "rayjob-sample"
)

// SamplePath is the path of a file in config/samples of this checkout.
func SamplePath(name string) string {
	return filepath.Join(tools.RepoRoot(), "config", "samples", name)
}

// ReadRayService reads a RayService manifest (a sample).
func ReadRayService(path string) (*rayv1.RayService, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var svc rayv1.RayService
	if err := yaml.UnmarshalStrict(b, &svc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if svc.Namespace == "" {
		svc.Namespace = "default"
	}
	return &svc, nil
}

// WaitReady waits until the RayService is Ready with no upgrade in progress, calling report
// with a one-line summary of its progress whenever that changes.
func WaitReady(ctx context.Context, c client.Client, key types.NamespacedName, report func(since time.Duration, line string)) (*rayv1.RayService, error) {
	start, last := time.Now(), ""
	for {
		var svc rayv1.RayService
		err := c.Get(ctx, key, &svc)
		if err == nil {
			var pods corev1.PodList
			if name := currentCluster(&svc); name != "" {
				_ = c.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{rayv1.ClusterLabelKey: name})
			}
			if line := Progress(&svc, pods.Items); line != last {
				report(time.Since(start), line)
				last = line
			}
			if Ready(&svc) {
				return &svc, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for RayService %s to be Ready (last seen: %s): %w", key, last, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Ready: the Ready condition is true, for the current generation, and no upgrade runs.
func Ready(svc *rayv1.RayService) bool {
	return meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.RayServiceReady)) &&
		svc.Status.ObservedGeneration == svc.Generation &&
		svc.Status.PendingServiceStatus.RayClusterName == ""
}

// currentCluster is the cluster being brought up (pending), else the serving one.
func currentCluster(svc *rayv1.RayService) string {
	if n := svc.Status.PendingServiceStatus.RayClusterName; n != "" {
		return n
	}
	return svc.Status.ActiveServiceStatus.RayClusterName
}

// Progress summarises how far a RayService is from serving: its cluster, how many of the
// cluster's pods are ready, the Serve applications' statuses and the Ready condition.
func Progress(svc *rayv1.RayService, pods []corev1.Pod) string {
	name := currentCluster(svc)
	if name == "" {
		return "waiting for raygate to create a RayCluster"
	}
	ready := 0
	for i := range pods {
		if rayspec.Serving(&pods[i]) {
			ready++
		}
	}
	parts := []string{fmt.Sprintf("RayCluster %s: %d/%d pods ready", name, ready, len(pods))}
	st := svc.Status.ActiveServiceStatus
	if svc.Status.PendingServiceStatus.RayClusterName != "" {
		st = svc.Status.PendingServiceStatus
	}
	if len(st.Applications) > 0 {
		apps := make([]string, 0, len(st.Applications))
		for n, a := range st.Applications {
			apps = append(apps, n+" "+a.Status)
		}
		slices.Sort(apps)
		parts = append(parts, "Serve: "+strings.Join(apps, ", "))
	}
	if c := meta.FindStatusCondition(svc.Status.Conditions, string(rayv1.RayServiceReady)); c != nil {
		parts = append(parts, fmt.Sprintf("Ready=%s (%s)", c.Status, c.Reason))
	}
	return strings.Join(parts, "; ")
}
