package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

func TestServiceRef(t *testing.T) {
	for host, want := range map[string]types.NamespacedName{
		"rj-head-svc":                            {Namespace: "pods-ns", Name: "rj-head-svc"},
		"rj-head-svc.team-a":                     {Namespace: "team-a", Name: "rj-head-svc"},
		"rj-head-svc.team-a.svc":                 {Namespace: "team-a", Name: "rj-head-svc"},
		"rj-head-svc.team-a.svc.cluster.local":   {Namespace: "team-a", Name: "rj-head-svc"},
		"rj-head-svc.team-a.svc.cluster.local.":  {Namespace: "team-a", Name: "rj-head-svc"},
		"rj-head-svc.svc.cluster.local":          {Namespace: "pods-ns", Name: "rj-head-svc"},
		"custom-name.other.svc.corp.example.com": {Namespace: "other", Name: "custom-name"},
	} {
		if got := serviceRef(host, "pods-ns"); got != want {
			t.Errorf("serviceRef(%q) = %v, want %v", host, got, want)
		}
	}
}

// A RayJob's head Service and a running head pod of its cluster, and a second cluster
// whose head is not up yet.
func submitterWorld() []client.Object {
	headSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rj-head-svc"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Selector: map[string]string{"ray.io/cluster": "rj-raycluster-x7k2p", "ray.io/node-type": "head"}}}
	labelled := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "labelled", Labels: map[string]string{"ray.io/cluster": "other-cluster"}}}
	plain := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "plain"}}
	head := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rj-raycluster-x7k2p-head",
		Labels: map[string]string{"ray.io/cluster": "rj-raycluster-x7k2p", "ray.io/node-type": "head"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.64.0.9"}}
	pendingHead := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "other-cluster-head",
		Labels: map[string]string{"ray.io/cluster": "other-cluster", "ray.io/node-type": "head"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rj-raycluster-x7k2p"}, Data: map[string][]byte{"auth_token": []byte("t0ken")}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "settings"}, Data: map[string]string{"MODE": "fast", "LEVEL": "3"}}
	return []client.Object{headSvc, labelled, plain, head, pendingHead, secret, cm}
}

func newTestSubmitters(t *testing.T) *Submitters {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(submitterWorld()...).Build()
	reg := raysim.NewRegistry(raysim.Options{})
	t.Cleanup(reg.Close)
	return &Submitters{c: c, api: c, reg: reg, opts: SubmitterOptions{Poll: 10 * time.Millisecond}}
}

func TestClusterFor(t *testing.T) {
	s := newTestSubmitters(t)
	ctx := context.Background()
	for addr, want := range map[string]string{
		"http://rj-head-svc.team-a.svc.cluster.local:8265": "team-a/rj-raycluster-x7k2p",
		"http://rj-head-svc:8265":                          "team-a/rj-raycluster-x7k2p",
		"http://10.96.0.10:8265":                           "team-a/rj-raycluster-x7k2p",
		"http://127.64.0.9:8265":                           "team-a/rj-raycluster-x7k2p",
		"http://labelled.team-a:8265":                      "team-a/other-cluster",
		"http://plain:8265":                                "error: selects no RayCluster",
		"http://missing.team-a.svc:8265":                   "error: no Service team-a/missing",
		"http://10.1.2.3:8265":                             "error: no head pod or Service has the IP",
		"::not a url":                                      "error: names no host",
	} {
		got, err := s.clusterFor(ctx, "team-a", addr)
		if strings.HasPrefix(want, "error: ") {
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(want, "error: ")) {
				t.Errorf("clusterFor(%q) = %v, %v; want an error with %q", addr, got, err, want)
			}
			continue
		}
		if err != nil || got.String() != want {
			t.Errorf("clusterFor(%q) = %v, %v; want %s", addr, got, err, want)
		}
	}
	// The dashboard answers only once the cluster's head pod runs.
	if u, err := s.dashboardFor(ctx, "team-a", "http://rj-head-svc.team-a.svc.cluster.local:8265"); err != nil || !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Errorf("dashboardFor = %q, %v", u, err)
	}
	if _, err := s.dashboardFor(ctx, "team-a", "http://labelled.team-a:8265"); err == nil || !strings.Contains(err.Error(), "is not running") {
		t.Errorf("dashboardFor a cluster whose head is pending: %v", err)
	}
}

func TestContainerEnv(t *testing.T) {
	s := newTestSubmitters(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rj-abcde", UID: "uid-1", Labels: map[string]string{"app": "x"}},
		Status: corev1.PodStatus{PodIP: "127.64.0.20"}}
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}, Prefix: "CM_"},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}}},
		Env: []corev1.EnvVar{
			{Name: "RAY_DASHBOARD_ADDRESS", Value: "rj-head-svc.team-a.svc.cluster.local:8265"},
			{Name: "ADDR", Value: "http://$(RAY_DASHBOARD_ADDRESS)/x $$(KEEP) $(UNDEFINED)"},
			{Name: "RAY_AUTH_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "rj-raycluster-x7k2p"}, Key: "auth_token"}}},
			{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "LEVEL"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: ptr.To(true)}}},
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		},
	}
	env, err := s.containerEnv(context.Background(), pod, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CM_MODE": "fast", "CM_LEVEL": "3", "RAY_DASHBOARD_ADDRESS": "rj-head-svc.team-a.svc.cluster.local:8265",
		"ADDR": "http://rj-head-svc.team-a.svc.cluster.local:8265/x $(KEEP) $(UNDEFINED)", "RAY_AUTH_TOKEN": "t0ken", "LEVEL": "3",
		"POD": "rj-abcde", "IP": "127.64.0.20", "APP": "x",
	}
	if len(env) != len(want) {
		t.Errorf("env = %v", env)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "REQ", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}})
	if _, err := s.containerEnv(context.Background(), pod, c); err == nil || !strings.Contains(err.Error(), "variable REQ") {
		t.Errorf("a required missing Secret: %v", err)
	}
}

func TestFinishedAndRestartedStatus(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-job-submitter"}, {Name: "sidecar"}}}}
	running := corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "ray-job-submitter", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "sidecar", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}}
	started := metav1.NewTime(time.Unix(1000, 0))
	for _, tc := range []struct {
		code   int
		phase  corev1.PodPhase
		reason string
	}{{0, corev1.PodSucceeded, "Completed"}, {1, corev1.PodFailed, "Error"}} {
		st := *running.DeepCopy()
		finishedStatus(pod, &st, raysim.SubmitterResult{ExitCode: tc.code, Output: "Job 'x' done"}, started)
		if st.Phase != tc.phase {
			t.Errorf("exit %d: phase %s", tc.code, st.Phase)
		}
		sub, side := st.ContainerStatuses[0].State.Terminated, st.ContainerStatuses[1].State.Terminated
		if sub == nil || sub.ExitCode != int32(tc.code) || sub.Reason != tc.reason || sub.Message != "Job 'x' done" || !sub.StartedAt.Equal(&started) ||
			side == nil || side.ExitCode != 0 || st.ContainerStatuses[0].Ready {
			t.Errorf("exit %d: container statuses %+v", tc.code, st.ContainerStatuses)
		}
		for _, c := range st.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionFalse {
				t.Errorf("exit %d: Ready = %s", tc.code, c.Status)
			}
		}
		if len(st.Conditions) != 3 {
			t.Errorf("exit %d: conditions %+v", tc.code, st.Conditions)
		}
	}
	st := *running.DeepCopy()
	restartedStatus(pod, raysim.SubmitterResult{ExitCode: 1, Output: "boom"}, started, 2)(&st)
	cs := st.ContainerStatuses[0]
	if st.Phase != corev1.PodRunning || cs.RestartCount != 2 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil ||
		cs.LastTerminationState.Terminated.ExitCode != 1 || st.ContainerStatuses[1].RestartCount != 0 {
		t.Errorf("restarted: %+v", st)
	}
}

func TestSubmitterPodsHoldsWhatIsSubmitterPodRecognises(t *testing.T) {
	held := SubmitterPods()
	if held.Labels["ray.io/originated-from-crd"] != raysim.RayJobKind || len(held.ContainerNames) != 1 || held.ContainerNames[0] != raysim.SubmitterContainerName {
		t.Errorf("SubmitterPods = %+v", held)
	}
}
