package batchscheduler

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/batchscheduler/volcano"
)

func TestNew(t *testing.T) {
	for _, name := range Names() {
		s, err := New(name)
		if err != nil || s.Name() != name {
			t.Errorf("New(%q) = %v, %v", name, s, err)
		}
	}
	if s, err := New(""); s != nil || err != nil {
		t.Errorf(`New("") = %v, %v; want off`, s, err)
	}
	if _, err := New("slurm"); err == nil || !strings.Contains(err.Error(), "volcano, scheduler-plugins, yunikorn, kai-scheduler") {
		t.Errorf("New(slurm): %v", err)
	}
}

func TestLabelWarnings(t *testing.T) {
	path := field.NewPath("metadata", "labels")
	tests := []struct {
		name       string
		labels     map[string]string
		configured string
		want       []string // substrings, one per warning, in order
	}{
		{name: "volcano sample on volcano", labels: map[string]string{"ray.io/scheduler-name": "volcano", "volcano.sh/queue-name": "q"}, configured: "volcano"},
		{name: "volcano sample without a batch scheduler", labels: map[string]string{"ray.io/scheduler-name": "volcano", "volcano.sh/queue-name": "q"},
			want: []string{`metadata.labels[ray.io/scheduler-name] is for the volcano batch scheduler, but raygate runs without one`, `metadata.labels[volcano.sh/queue-name] is for the volcano`}},
		{name: "gang label on volcano", labels: map[string]string{"ray.io/gang-scheduling-enabled": "true"}, configured: "volcano",
			want: []string{"is for the scheduler-plugins or yunikorn batch scheduler, but raygate runs with --batch-scheduler=volcano"}},
		{name: "gang label on yunikorn", labels: map[string]string{"ray.io/gang-scheduling-enabled": "true", "yunikorn.apache.org/queue": "root.q"}, configured: "yunikorn"},
		{name: "gang label on scheduler-plugins", labels: map[string]string{"ray.io/gang-scheduling-enabled": "true"}, configured: "scheduler-plugins"},
		{name: "yunikorn label on volcano", labels: map[string]string{"yunikorn.apache.org/queue": "root.q"}, configured: "volcano",
			want: []string{"metadata.labels[yunikorn.apache.org/queue] is for the yunikorn batch scheduler, but raygate runs with --batch-scheduler=volcano"}},
		{name: "unknown scheduler name", labels: map[string]string{"ray.io/scheduler-name": "slurm"}, configured: "volcano",
			want: []string{"metadata.labels[ray.io/scheduler-name]: raygate has no slurm integration"}},
		{name: "bad tier", labels: map[string]string{"volcano.sh/network-topology-mode": "hard", "volcano.sh/network-topology-highest-tier-allowed": "x"}, configured: "volcano",
			want: []string{`"x" is not an integer`}},
		{name: "kai without queue", configured: "kai-scheduler", want: []string{"metadata.labels[kai.scheduler/queue] is not set"}},
		{name: "unrelated labels", labels: map[string]string{"app": "x"}},
		{name: "empty scheduler name", labels: map[string]string{"ray.io/scheduler-name": ""}, configured: "volcano"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LabelWarnings(tt.labels, path, tt.configured)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %d warnings", got, len(tt.want))
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func sample() *rayv1.RayCluster {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Resources: corev1.ResourceRequirements{Requests: rl}}}}}
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"volcano.sh/queue-name": "q"}},
		Spec: rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{Template: tmpl}, WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
			GroupName: "w", Replicas: ptr.To[int32](1), MinReplicas: ptr.To[int32](0), MaxReplicas: ptr.To[int32](3), NumOfHosts: 1, Template: tmpl,
		}}},
	}
}

func readPodGroup(t *testing.T, c client.Client) *unstructured.Unstructured {
	t.Helper()
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(volcano.PodGroupKind)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "ray-c-pg"}, pg); err != nil {
		t.Fatal(err)
	}
	return pg
}

func TestSyncCreatesThenUpdatesOnScale(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).Build()
	s := &Syncer{Scheduler: volcano.Scheduler{}, Client: c, Reader: c, APIReader: c, Installed: true}
	rc := sample()
	if r, err := s.Sync(ctx, rc); err != nil || r != (Result{Created, "ray-c-pg"}) {
		t.Fatalf("first Sync: %v, %v", r, err)
	}
	pg := readPodGroup(t, c)
	if !metav1.IsControlledBy(pg, rc) || pg.GetLabels()[rayv1.KubernetesCreatedByLabelKey] != rayv1.ComponentName || pg.GetLabels()[rayv1.ClusterLabelKey] != "c" {
		t.Errorf("owner %v, labels %v", pg.GetOwnerReferences(), pg.GetLabels())
	}
	if r, err := s.Sync(ctx, rc); err != nil || r.Action != Unchanged {
		t.Fatalf("second Sync: %v, %v", r, err)
	}
	rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
	if r, err := s.Sync(ctx, rc); err != nil || r.Action != Updated {
		t.Fatalf("Sync after a scale-up: %v, %v", r, err)
	}
	if m, _, _ := unstructured.NestedInt64(readPodGroup(t, c).Object, "spec", "minMember"); m != 4 {
		t.Errorf("minMember = %d, want 4", m)
	}
}

func TestSyncLeavesForeignPodGroupAlone(t *testing.T) {
	ctx := context.Background()
	foreign := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"minMember": int64(1)}}}
	foreign.SetGroupVersionKind(volcano.PodGroupKind)
	foreign.SetNamespace("ns")
	foreign.SetName("ray-c-pg")
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(foreign).Build()
	s := &Syncer{Scheduler: volcano.Scheduler{}, Client: c, Reader: c, APIReader: c, Installed: true}
	if r, err := s.Sync(ctx, sample()); err != nil || r.Action != Unchanged {
		t.Fatalf("Sync: %v, %v", r, err)
	}
	if m, _, _ := unstructured.NestedInt64(readPodGroup(t, c).Object, "spec", "minMember"); m != 1 {
		t.Errorf("a PodGroup the cluster does not own was changed: minMember %d", m)
	}
}

func TestSyncWithoutTheCRD(t *testing.T) {
	s := &Syncer{Scheduler: volcano.Scheduler{}, Installed: false}
	_, err := s.Sync(context.Background(), sample())
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "podgroups.scheduling.volcano.sh is not served") {
		t.Errorf("err = %v", err)
	}
	if s.Owned() != nil {
		t.Error("a kind that is not served must not be watched")
	}
}
