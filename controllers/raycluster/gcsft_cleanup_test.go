package raycluster

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

func cleanupJob(conds ...batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{}
	j.Name = "demo-redis-cleanup"
	for _, c := range conds {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return j
}

func TestPlanRedisCleanup(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before := now.Add(time.Minute) // deadline not reached
	cases := map[string]struct {
		in   cleanupInput
		want string
	}{
		"pods first: all of them": {
			in:   cleanupInput{Deadline: before, Pods: []corev1.Pod{head("h"), worker("w", "g")}, HeadPods: 1},
			want: "delete 2 pods, requeue 2s",
		},
		"head still terminating: wait": {
			in:   cleanupInput{Deadline: before, Pods: []corev1.Pod{head("h", terminating())}, HeadPods: 1},
			want: "wait 2s",
		},
		"a terminating worker does not hold the Job back": {
			in:   cleanupInput{Deadline: before, Pods: []corev1.Pod{worker("w", "g", terminating())}},
			want: "create Job, requeue 2s",
		},
		"no pods, no Job: create it": {in: cleanupInput{Deadline: before}, want: "create Job, requeue 2s"},
		"Job running: wait, never past the deadline": {
			in:   cleanupInput{Deadline: now.Add(500 * time.Millisecond), Job: cleanupJob()},
			want: "wait 500ms",
		},
		"Job complete: release": {
			in:   cleanupInput{Deadline: before, Job: cleanupJob(batchv1.JobComplete)},
			want: "release Normal RedisCleanupCompleted",
		},
		"Job failed: release with a warning": {
			in:   cleanupInput{Deadline: before, Job: cleanupJob(batchv1.JobFailed)},
			want: "release Warning RedisCleanupFailed",
		},
		"Job complete after the deadline still counts as complete": {
			in:   cleanupInput{Deadline: now.Add(-time.Second), Job: cleanupJob(batchv1.JobComplete)},
			want: "release Normal RedisCleanupCompleted",
		},
		"deadline: release whatever the Job does": {
			in:   cleanupInput{Deadline: now, Job: cleanupJob()},
			want: "release Warning ForceDeletedStuckCluster",
		},
		"deadline with the head stuck terminating": {
			in:   cleanupInput{Deadline: now.Add(-time.Hour), Pods: []corev1.Pod{head("h", terminating())}, HeadPods: 1},
			want: "release Warning ForceDeletedStuckCluster",
		},
		"a foreign Job is never taken for ours": {
			in:   cleanupInput{Deadline: before, Job: cleanupJob(batchv1.JobComplete), Foreign: true},
			want: "wait 2s",
		},
		"spec edited while deleting: no Job, release at once": {
			in:   cleanupInput{Deadline: before, Edited: "edited"},
			want: "release Warning RedisCleanupRefused",
		},
		"spec edited while deleting, pods still there: release (the garbage collector deletes them)": {
			in:   cleanupInput{Deadline: before, Edited: "edited", Pods: []corev1.Pod{head("h")}, HeadPods: 1},
			want: "release Warning RedisCleanupRefused",
		},
		"spec edited after the Job was built from the admitted one: the Job runs on": {
			in:   cleanupInput{Deadline: before, Edited: "edited", Job: cleanupJob()},
			want: "wait 2s",
		},
		"spec edited after the Job completed: completed": {
			in:   cleanupInput{Deadline: before, Edited: "edited", Job: cleanupJob(batchv1.JobComplete)},
			want: "release Normal RedisCleanupCompleted",
		},
		"spec edited, a foreign Job by the name: release": {
			in:   cleanupInput{Deadline: before, Edited: "edited", Job: cleanupJob(), Foreign: true},
			want: "release Warning RedisCleanupRefused",
		},
		"unbuildable spec: wait for the deadline": {
			in:   cleanupInput{Deadline: before, Unbuildable: "no container"},
			want: "wait 2s",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.Now = now
			if got := describeCleanup(planRedisCleanup(tc.in)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSpecEditedWhileDeleting(t *testing.T) {
	cases := []struct {
		name                 string
		generation, observed int64
		edited               bool
	}{
		{"deleted after the controller acted on the spec", 4, 3, false},
		{"deleted before the first status write (generation 1 was admitted at create)", 2, 0, false},
		{"deleted before the first status write, then edited", 3, 0, true},
		{"edited once after the deletion", 5, 3, true},
		{"an admitted edit the controller had not acted on when the deletion started", 5, 3, true},
		{"a status written after the deletion started (never by raygate)", 4, 4, false},
	}
	for _, tc := range cases {
		if got := specEditedWhileDeleting(tc.generation, tc.observed); (got != "") != tc.edited {
			t.Errorf("%s: got %q", tc.name, got)
		}
	}
}

func describeCleanup(s cleanupStep) string {
	switch {
	case s.Release:
		return "release " + s.EventType + " " + s.Reason
	case len(s.DeletePods) > 0:
		return "delete " + strconv.Itoa(len(s.DeletePods)) + " pods, requeue " + s.RequeueAfter.String()
	case s.CreateJob:
		return "create Job, requeue " + s.RequeueAfter.String()
	}
	return "wait " + s.RequeueAfter.String()
}

func TestForceReleaseNoteNamesTheKeys(t *testing.T) {
	s := planRedisCleanup(cleanupInput{Now: time.Now(), Deadline: time.Now().Add(-time.Second), StorageNamespace: "team-a"})
	if !strings.Contains(s.Note, `storage namespace "team-a"`) || !strings.Contains(s.Note, rayv1.GCSFTDeletionTimeoutKey) {
		t.Errorf("note: %s", s.Note)
	}
}

func TestRedisCleanupJob(t *testing.T) {
	rc := builders.RayCluster("demo", "ns").Obj()
	rc.UID = types.UID("uid-1")
	rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
	rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379", RedisPassword: &rayv1.RedisCredential{Value: "p"}}
	defaulting.RayCluster(rc)
	j := redisCleanupJob(rc, raypod.Settings{})
	if j.Name != "demo-redis-cleanup" || j.Namespace != "ns" {
		t.Errorf("name %s/%s", j.Namespace, j.Name)
	}
	if len(j.OwnerReferences) != 1 || j.OwnerReferences[0].UID != "uid-1" || j.OwnerReferences[0].Controller == nil || !*j.OwnerReferences[0].Controller {
		t.Errorf("owner: %+v", j.OwnerReferences)
	}
	if j.Labels[rayv1.NodeTypeLabelKey] != string(rayv1.RedisCleanupNode) || j.Labels[rayv1.ClusterLabelKey] != "demo" {
		t.Errorf("labels: %v", j.Labels)
	}
	if *j.Spec.BackoffLimit != 0 || *j.Spec.ActiveDeadlineSeconds != 300 {
		t.Errorf("job spec: %+v", j.Spec)
	}
	ps := j.Spec.Template.Spec
	if len(ps.Containers) != 1 || ps.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("pod: %d containers (autoscaler must go), restartPolicy %s", len(ps.Containers), ps.RestartPolicy)
	}
	c := ps.Containers[0]
	if c.LivenessProbe != nil || c.ReadinessProbe != nil || len(c.Ports) != 0 {
		t.Error("probes or ports left on the cleanup container")
	}
	if !strings.Contains(c.Args[0], "cleanup_redis_storage") {
		t.Errorf("args: %v", c.Args)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for k, v := range map[string]string{raypod.EnvRedisAddress: "redis:6379", raypod.EnvRedisPassword: "p",
		raypod.EnvExternalStorageNamespace: "uid-1", "RAY_redis_db_connect_retries": "120"} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if c.Resources.Limits.Cpu().String() != "200m" {
		t.Errorf("resources: %v", c.Resources)
	}
	if j.Spec.Template.Labels[rayv1.NodeTypeLabelKey] != string(rayv1.RedisCleanupNode) || len(j.Spec.Template.OwnerReferences) != 0 {
		t.Errorf("template metadata: %+v", j.Spec.Template.ObjectMeta)
	}
}

// The operator's pod settings reach the cleanup Job as KubeRay's buildHeadPod gives them:
// the default variables and labels, the login shell; the sidecars go with every container
// but Ray's.
func TestRedisCleanupJobWithOperatorSettings(t *testing.T) {
	rc := builders.RayCluster("demo", "ns").Obj()
	rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
	defaulting.RayCluster(rc)
	s := raypod.Settings{LoginShell: true, Defaults: raypod.PodDefaults{
		HeadSidecars: []corev1.Container{{Name: "log-shipper", Image: "fluent/fluent-bit:3"}},
		Env:          []corev1.EnvVar{{Name: "TEAM", Value: "ml"}},
		Labels:       map[string]string{"cost-center": "ml"},
	}}
	ps := redisCleanupJob(rc, s).Spec.Template
	if len(ps.Spec.Containers) != 1 || ps.Labels["cost-center"] != "ml" {
		t.Errorf("containers %d, labels %v", len(ps.Spec.Containers), ps.Labels)
	}
	c := ps.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/bin/bash", "-cl", "--"}) || !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "TEAM" }) {
		t.Errorf("command %v, env %v", c.Command, c.Env)
	}
}

func TestRedisCleanupWanted(t *testing.T) {
	redis := &rayv1.GcsFaultToleranceOptions{RedisAddress: "r:6379"}
	cases := []struct {
		name        string
		annotations map[string]string
		opts        *rayv1.GcsFaultToleranceOptions
		enabled     bool
		want        bool
	}{
		{"no fault tolerance", nil, nil, true, false},
		{"options", nil, redis, true, true},
		{"legacy annotation", map[string]string{rayv1.FTEnabledKey: "true"}, nil, true, true},
		{"annotation false", map[string]string{rayv1.FTEnabledKey: "false"}, nil, true, false},
		{"cleanup turned off on the operator", nil, redis, false, false},
		{"rocksdb keeps nothing in Redis", nil, &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB}, true, false},
	}
	for _, tc := range cases {
		rc := builders.RayCluster("demo", "ns").Obj()
		rc.Annotations, rc.Spec.GcsFaultToleranceOptions = tc.annotations, tc.opts
		if got := redisCleanupWanted(rc, tc.enabled); got != tc.want {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}
