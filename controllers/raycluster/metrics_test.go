package raycluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/test/builders"
)

func clusterAt(name, uid string, created time.Time, provisioned *metav1.Condition) *rayv1.RayCluster {
	rc := builders.RayCluster(name, "ns").Obj()
	rc.UID = types.UID("uid-" + uid)
	rc.CreationTimestamp = metav1.NewTime(created)
	if provisioned != nil {
		rc.Status.Conditions = []metav1.Condition{*provisioned}
	}
	return rc
}

func provisionedCond(status metav1.ConditionStatus, at time.Time) *metav1.Condition {
	return &metav1.Condition{Type: string(rayv1.RayClusterProvisioned), Status: status, Reason: "r", LastTransitionTime: metav1.NewTime(at)}
}

// The series are made from the cached clusters at each scrape: every cluster raygate
// reconciles, with KubeRay's names and labels, and none of a cluster another controller
// manages.
func TestMetricsAreMadeFromTheCachedClusters(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	up := clusterAt("up", "1", created, provisionedCond(metav1.ConditionTrue, created.Add(42*time.Second)))
	coming := clusterAt("coming", "2", created, provisionedCond(metav1.ConditionFalse, created))
	bare := clusterAt("bare", "3", created, nil) // the conditions gate off
	bare.Labels = map[string]string{rayv1.OriginatedFromCRDLabelKey: "RayService"}
	foreign := clusterAt("foreign", "4", created, provisionedCond(metav1.ConditionTrue, created.Add(time.Second)))
	foreign.Spec.ManagedBy = ptr.To("example.com/other")

	m := raycluster.NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg, newStore(up, coming, bare, foreign), nil); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP kuberay_cluster_condition_provisioned Whether a RayCluster is provisioned (the condition label is true or false).
# TYPE kuberay_cluster_condition_provisioned gauge
kuberay_cluster_condition_provisioned{condition="false",name="bare",namespace="ns",uid="uid-3"} 1
kuberay_cluster_condition_provisioned{condition="false",name="coming",namespace="ns",uid="uid-2"} 1
kuberay_cluster_condition_provisioned{condition="true",name="up",namespace="ns",uid="uid-1"} 1
# HELP kuberay_cluster_info Metadata of RayClusters; owner_kind is RayService, RayJob or None.
# TYPE kuberay_cluster_info gauge
kuberay_cluster_info{name="bare",namespace="ns",owner_kind="RayService",uid="uid-3"} 1
kuberay_cluster_info{name="coming",namespace="ns",owner_kind="None",uid="uid-2"} 1
kuberay_cluster_info{name="up",namespace="ns",owner_kind="None",uid="uid-1"} 1
# HELP kuberay_cluster_provisioned_duration_seconds Seconds from a RayCluster's creation until its RayClusterProvisioned condition last became true.
# TYPE kuberay_cluster_provisioned_duration_seconds gauge
kuberay_cluster_provisioned_duration_seconds{name="up",namespace="ns",uid="uid-1"} 42
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// Only the leader reconciles, so a replica waiting for the lease reports no cluster: the
// replicas of one installation never report a cluster twice.
func TestMetricsWaitForLeadership(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := raycluster.NewMetrics()
	reg := prometheus.NewRegistry()
	elected := make(chan struct{})
	if err := m.Register(reg, newStore(clusterAt("a", "1", created, nil)), elected); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("before the election: %d series, %v; want none", n, err)
	}
	close(elected)
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 2 {
		t.Fatalf("once elected: %d series, %v; want the cluster's info and provisioned", n, err)
	}
}

type failingList struct{ client.Reader }

func (failingList) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("cache not synced")
}

// A scrape that cannot read the cache fails visibly instead of reporting no clusters.
func TestMetricsReportAFailedRead(t *testing.T) {
	m := raycluster.NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg, failingList{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "cache not synced") {
		t.Fatalf("Gather error = %v; want the read's failure", err)
	}
}
