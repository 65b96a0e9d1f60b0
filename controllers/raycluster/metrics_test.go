package raycluster_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

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
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	m.Bind(newStore(up, coming, bare, foreign))
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
// replicas of one installation never report a cluster twice. The cache is read while its
// manager runs, and no longer once it stops.
func TestMetricsReadTheCacheWhileTheManagerLeads(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m, reg := registered(t)
	src := m.Source(newStore(clusterAt("a", "1", created, nil)))
	if le, ok := src.(manager.LeaderElectionRunnable); !ok || !le.NeedLeaderElection() {
		t.Fatal("the cache source must start only once the manager leads")
	}
	if got := clusterNames(t, reg); len(got) != 0 {
		t.Fatalf("before the manager leads: clusters %v; want none", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(clusterNames(t, reg), []string{"a"}) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("while the manager leads: clusters %v; want a", clusterNames(t, reg))
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := clusterNames(t, reg); len(got) != 0 {
		t.Fatalf("once the manager stopped: clusters %v; want none", got)
	}
}

// Managers started in one process (the integration suites start several, some against
// another API server) bind their caches in turn. One that stops releases its cache, and the
// scrape reads the newest still bound, not a stopped manager's cache, which no longer follows
// its API server.
func TestMetricsFollowTheNewestRunningManager(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m, reg := registered(t)
	releaseSuite := m.Bind(newStore(clusterAt("suite", "1", created, nil)))
	releaseOther := m.Bind(newStore(clusterAt("other", "2", created, nil)))
	if got := clusterNames(t, reg); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("a second manager started: clusters %v; want the newest manager's", got)
	}
	releaseOther()
	if got := clusterNames(t, reg); !slices.Equal(got, []string{"suite"}) {
		t.Fatalf("the second manager stopped: clusters %v; want the first manager's again", got)
	}
	releaseSuite()
	if got := clusterNames(t, reg); len(got) != 0 {
		t.Fatalf("every manager stopped: clusters %v; want none", got)
	}
}

func registered(t *testing.T) (*raycluster.Metrics, *prometheus.Registry) {
	t.Helper()
	m, reg := raycluster.NewMetrics(), prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// clusterNames are the clusters kuberay_cluster_info reports.
func clusterNames(t *testing.T, reg prometheus.Gatherer) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != "kuberay_cluster_info" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "name" {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	return out
}

type failingList struct{ client.Reader }

func (failingList) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("cache not synced")
}

// A scrape that cannot read the cache fails visibly instead of reporting no clusters.
func TestMetricsReportAFailedRead(t *testing.T) {
	m := raycluster.NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	m.Bind(failingList{})
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "cache not synced") {
		t.Fatalf("Gather error = %v; want the read's failure", err)
	}
}
