package rayjob

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
)

func TestMetrics(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(reg); err != nil {
		t.Fatalf("registering again (a restarted manager): %v", err)
	}
	job := &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "u1"}}
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusRunning
	m.Observe(job)
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusRetrying
	m.Observe(job)
	m.Record(job, plan.MetricFacts{Execution: &plan.Execution{DeploymentStatus: rayv1.JobDeploymentStatusRetrying, RetryCount: 0, Seconds: 42}})
	m.Record(job, plan.MetricFacts{})

	want := `
# HELP kuberay_job_deployment_status The RayJob's current deployment status
# TYPE kuberay_job_deployment_status gauge
kuberay_job_deployment_status{deployment_status="Retrying",name="train",namespace="ml",uid="u1"} 1
# HELP kuberay_job_execution_duration_seconds Duration from when the RayJob CR’s JobDeploymentStatus transitions from Initializing to either the Retrying state or a terminal state, such as Complete or Failed. The Retrying state indicates that the CR previously failed and that spec.backoffLimit is enabled.
# TYPE kuberay_job_execution_duration_seconds gauge
kuberay_job_execution_duration_seconds{job_deployment_status="Retrying",name="train",namespace="ml",retry_count="0",uid="u1"} 42
# HELP kuberay_job_info Metadata information about RayJob custom resources
# TYPE kuberay_job_info gauge
kuberay_job_info{name="train",namespace="ml",uid="u1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}

	// The same name under a new uid: the old series go.
	again := job.DeepCopy()
	again.UID = "u2"
	m.Observe(again)
	if n := testutil.CollectAndCount(m.execution); n != 0 {
		t.Errorf("%d execution series of the old uid", n)
	}
	if n := testutil.CollectAndCount(m.info); n != 1 {
		t.Errorf("%d info series", n)
	}
	m.Forget("ml", "train")
	if n := testutil.CollectAndCount(m.info) + testutil.CollectAndCount(m.deploymentStatus); n != 0 {
		t.Errorf("%d series after Forget", n)
	}
}
