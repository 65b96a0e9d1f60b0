package app

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/capabilities"
)

// podGroupKind is the PodGroup kind of the batch scheduler (empty: none, or one without
// PodGroups), which capability discovery looks for.
func podGroupKind(s batchscheduler.Scheduler) schema.GroupVersionKind {
	if s == nil {
		return schema.GroupVersionKind{}
	}
	return s.PodGroupKind()
}

// reportMissingPodGroups says when the batch scheduler's PodGroup CRD is missing. That is
// not fatal: the clusters report it, and the operator keeps serving the others.
func reportMissingPodGroups(s batchscheduler.Scheduler, caps capabilities.Capabilities) {
	gvk := podGroupKind(s)
	if gvk.Empty() || caps.PodGroup == gvk {
		return
	}
	ctrl.Log.Error(nil, "the batch scheduler's PodGroup CRD is not installed: RayClusters get no pods until it is installed and raygate restarted",
		"batchScheduler", s.Name(), "crd", batchscheduler.PodGroupResource(gvk))
}
