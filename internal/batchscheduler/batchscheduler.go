// Package batchscheduler hands RayCluster pods to a batch scheduler (Volcano,
// scheduler-plugins' coscheduling, YuniKorn, KAI), chosen with the operator's --batch-scheduler flag,
// as KubeRay's batch scheduler integrations do. Before creating a cluster's pods, the
// RayCluster controller has the cluster's PodGroup created or updated (Syncer.Sync); each
// pod it builds is then marked for the scheduler (Scheduler.DecoratePod).
//
// The decisions (the PodGroup of a cluster, what a pod gets) are pure functions of the
// scheduler packages; this package only reads and writes the PodGroups. PodGroups are
// handled as unstructured objects, so raygate depends on no scheduler's Go module.
package batchscheduler

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler/kai"
	"github.com/raygate/raygate/internal/batchscheduler/schedulerplugins"
	"github.com/raygate/raygate/internal/batchscheduler/volcano"
	"github.com/raygate/raygate/internal/batchscheduler/yunikorn"
)

// Scheduler is one batch scheduler integration. Its methods are pure.
type Scheduler interface {
	// Name is the --batch-scheduler value.
	Name() string
	// PodGroupKind is the kind of the PodGroups it creates; zero when it creates none.
	PodGroupKind() schema.GroupVersionKind
	// DesiredPodGroup is the PodGroup a defaulted cluster needs (name, namespace, spec), or
	// nil when it needs none.
	DesiredPodGroup(rc *rayv1.RayCluster) (*unstructured.Unstructured, error)
	// UpdatePodGroup brings an existing PodGroup up to date with the cluster (after a scale)
	// and reports whether it changed it.
	UpdatePodGroup(current *unstructured.Unstructured, rc *rayv1.RayCluster) bool
	// DecoratePod marks a pod raygate built for the cluster for the scheduler:
	// schedulerName, group labels and annotations.
	DecoratePod(rc *rayv1.RayCluster, pod *corev1.Pod)
}

// Names are the supported --batch-scheduler values ("" turns the integration off).
func Names() []string {
	return []string{volcano.Name, schedulerplugins.Name, yunikorn.Name, kai.Name}
}

// New returns the integration a --batch-scheduler value names: nil for "", an error for a
// name raygate does not support.
func New(name string) (Scheduler, error) {
	switch name {
	case "":
		return nil, nil
	case volcano.Name:
		return volcano.Scheduler{}, nil
	case schedulerplugins.Name:
		return schedulerplugins.Scheduler{}, nil
	case yunikorn.Name:
		return yunikorn.Scheduler{}, nil
	case kai.Name:
		return kai.Scheduler{}, nil
	}
	return nil, fmt.Errorf("--batch-scheduler %q is not supported; use one of %s (or leave it empty)", name, strings.Join(Names(), ", "))
}

// Valid reports whether name is a --batch-scheduler value.
func Valid(name string) bool { return name == "" || slices.Contains(Names(), name) }

// PodGroupResource is the CRD name of a PodGroup kind (podgroups.<group>), for messages.
func PodGroupResource(gvk schema.GroupVersionKind) string {
	return "podgroups." + gvk.Group
}
