package plan

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

func TestRelease(t *testing.T) {
	retrying := storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusRetrying, func(j *rayv1.RayJob) {
		j.Status.JobStatus, j.Status.Reason, j.Status.Message = rayv1.JobStatusFailed, rayv1.AppFailed, "Traceback"
		j.Status.RayJobStatusInfo.EndTime, j.Status.JobStatusCheckFailureStartTime = at(0), at(0)
	})
	suspending := storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusSuspending)
	rc := ownCluster(retrying, true)
	going := rc.DeepCopy()
	going.DeletionTimestamp = at(0)
	sub := submitterJob(retrying, batchv1.JobFailed, t0)
	for _, tc := range []struct {
		name string
		job  *rayv1.RayJob
		obs  Observed
		set  func(*Settings)
		want expect
	}{
		{name: "deletes the cluster and the submitter", job: retrying, obs: Observed{Cluster: rc, Submitter: sub},
			want: expect{ds: rayv1.JobDeploymentStatusRetrying, effects: []string{"DeleteCluster", "DeleteSubmitter"}, noWake: true}},
		{name: "waits for them to go", job: retrying, obs: Observed{Cluster: going}, want: expect{ds: rayv1.JobDeploymentStatusRetrying, effects: []string{}}},
		{name: "never deletes a cluster it does not control", job: retrying, obs: Observed{Cluster: foreignCluster(storedCluster)},
			want: expect{ds: rayv1.JobDeploymentStatusNew, effects: []string{}}},
		{name: "gone: a new attempt", job: retrying, set: func(s *Settings) { s.BatchScheduler = true },
			want: expect{ds: rayv1.JobDeploymentStatusNew, js: js(rayv1.JobStatusNew), effects: []string{"BatchSchedulerHook"}, soon: true}},
		{name: "suspending, gone: Suspended", job: suspending, want: expect{ds: rayv1.JobDeploymentStatusSuspended, events: []string{EventSuspended}, noWake: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputsFor(tc.job, time.Minute, tc.obs)
			if tc.set != nil {
				tc.set(&in.Settings)
			}
			p := Decide(in)
			tc.want.check(t, p)
			if st := p.Status; st.JobDeploymentStatus != tc.job.Status.JobDeploymentStatus &&
				(st.JobId != "" || st.RayClusterName != "" || st.DashboardURL != "" || st.Message != "" || st.Reason != "" || st.RayJobStatusInfo.EndTime != nil || st.JobStatusCheckFailureStartTime != nil) {
				t.Errorf("the attempt is not forgotten: %+v", st)
			}
		})
	}
}

func TestSettleRetries(t *testing.T) {
	job := runningJob(rayv1.HTTPMode, rayv1.JobStatusRunning, func(j *rayv1.RayJob) {
		j.Spec.BackoffLimit = ptr.To[int32](2)
		j.Status.Failed = ptr.To[int32](1)
	})
	obs := withService(job, Observed{Jobs: view(found(10*time.Second, rayv1.JobStatusFailed, "x"), nil)})
	p := Decide(inputsFor(job, time.Minute, obs))
	expect{ds: rayv1.JobDeploymentStatusRetrying, reason: rayv1.AppFailed, events: []string{EventRetrying}, soon: true}.check(t, p)
	if *p.Status.Failed != 2 || p.Status.EndTime != nil || p.Metrics.Execution == nil || p.Metrics.Execution.RetryCount != 1 || p.Metrics.Execution.Seconds != 60 {
		t.Errorf("status %+v; execution %+v", p.Status, p.Metrics.Execution)
	}
	job.Status.Failed = ptr.To[int32](2)
	p = Decide(inputsFor(job, time.Minute, obs))
	expect{ds: rayv1.JobDeploymentStatusFailed, events: []string{EventFailed}}.check(t, p)
	if *p.Status.Failed != 3 || !p.Status.EndTime.Equal(at(time.Minute)) || p.Metrics.Execution.DeploymentStatus != rayv1.JobDeploymentStatusFailed {
		t.Errorf("status %+v", p.Status)
	}
}

func TestSuspended(t *testing.T) {
	job := storedJob(rayv1.K8sJobMode, rayv1.JobDeploymentStatusSuspended, func(j *rayv1.RayJob) { j.Spec.Suspend = true })
	p := Decide(inputsFor(job, time.Minute, Observed{}))
	if !sameStatus(p, job) || !p.empty() || p.Wake.Soon || !p.Wake.At.IsZero() {
		t.Fatalf("a suspended job: %+v", p)
	}
	job.Spec.Suspend = false
	expect{ds: rayv1.JobDeploymentStatusNew, events: []string{EventResumed}, soon: true}.check(t, Decide(inputsFor(job, time.Minute, Observed{})))
}

func TestFinished(t *testing.T) {
	done := func(status rayv1.JobStatus, edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
		ds := rayv1.JobDeploymentStatusComplete
		if status != rayv1.JobStatusSucceeded {
			ds = rayv1.JobDeploymentStatusFailed
		}
		return storedJob(rayv1.K8sJobMode, ds, append([]func(*rayv1.RayJob){func(j *rayv1.RayJob) {
			j.Status.JobStatus, j.Status.EndTime = status, at(0)
		}}, edit...)...)
	}
	shutdown := func(ttl int32) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) { j.Spec.ShutdownAfterJobFinishes, j.Spec.TTLSecondsAfterFinished = true, ttl }
	}
	rules := func(rs ...rayv1.DeletionRule) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) { j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: rs} }
	}
	onStatus := func(p rayv1.DeletionPolicyType, s rayv1.JobStatus, ttl int32) rayv1.DeletionRule {
		return rayv1.DeletionRule{Policy: p, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(s), TTLSeconds: ttl}}
	}
	onFailed := func(p rayv1.DeletionPolicyType, ttl int32) rayv1.DeletionRule {
		return rayv1.DeletionRule{Policy: p, Condition: rayv1.DeletionCondition{JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed), TTLSeconds: ttl}}
	}
	legacy := func(success, failure rayv1.DeletionPolicyType) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) {
			j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{OnSuccess: &rayv1.DeletionPolicy{Policy: ptr.To(success)}, OnFailure: &rayv1.DeletionPolicy{Policy: ptr.To(failure)}}
		}
	}
	rc := ownCluster(done(rayv1.JobStatusSucceeded), true)
	suspended := rc.DeepCopy()
	for i := range suspended.Spec.WorkerGroupSpecs {
		suspended.Spec.WorkerGroupSpecs[i].Suspend = ptr.To(true)
	}
	for _, tc := range []struct {
		name  string
		job   *rayv1.RayJob
		rc    *rayv1.RayCluster
		now   time.Duration
		gates features.Static
		self  bool
		want  expect
	}{
		{name: "no deletion settings: nothing, and no wake-up", job: done(rayv1.JobStatusSucceeded), rc: rc, now: time.Hour, want: expect{effects: []string{}, noWake: true}},
		{name: "shutdown: waits for the TTL", job: done(rayv1.JobStatusSucceeded, shutdown(60)), rc: rc, now: time.Second, want: expect{effects: []string{}, wakeAt: time.Minute}},
		{name: "shutdown: deletes the cluster at the TTL", job: done(rayv1.JobStatusSucceeded, shutdown(60)), rc: rc, now: time.Minute, want: expect{effects: []string{"DeleteCluster"}, noWake: true}},
		{name: "shutdown: the cluster is gone already", job: done(rayv1.JobStatusSucceeded, shutdown(60)), now: time.Minute, want: expect{effects: []string{}}},
		{name: "shutdown, DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", job: done(rayv1.JobStatusFailed, shutdown(0)), rc: rc, self: true, want: expect{effects: []string{"DeleteRayJob"}}},
		{name: "shutdown never deletes a cluster the job does not control", job: done(rayv1.JobStatusSucceeded, shutdown(0)), rc: foreignCluster(storedCluster), want: expect{effects: []string{}}},
		{name: "clusterSelector: nothing is deleted", job: done(rayv1.JobStatusSucceeded, shutdown(0), func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec, j.Spec.ClusterSelector = nil, map[string]string{rayv1.RayJobClusterSelectorKey: storedCluster}
		}), rc: rc, want: expect{effects: []string{}}},
		{name: "no end time recorded: recorded now, the TTLs count from it", job: done(rayv1.JobStatusSucceeded, shutdown(0), func(j *rayv1.RayJob) { j.Status.EndTime = nil }),
			rc: rc, want: expect{effects: []string{}, soon: true}},
		{name: "rules: the one due", job: done(rayv1.JobStatusSucceeded, rules(onStatus(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10), onStatus(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 20))),
			rc: rc, now: 10 * time.Second, want: expect{effects: []string{"SuspendWorkers"}, wakeAt: 20 * time.Second}},
		{name: "rules: a done one is not repeated", job: done(rayv1.JobStatusSucceeded, rules(onStatus(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10), onStatus(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 20))),
			rc: suspended, now: 11 * time.Second, want: expect{effects: []string{}, wakeAt: 20 * time.Second}},
		{name: "rules: overdue together, the most impactful first, the next soon", job: done(rayv1.JobStatusSucceeded, rules(onStatus(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10), onStatus(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 20))),
			rc: rc, now: time.Hour, want: expect{effects: []string{"DeleteRayJob"}, soon: true}},
		{name: "rules: on the deployment status", job: done(rayv1.JobStatusRunning, rules(onFailed(rayv1.DeleteCluster, 5))), rc: rc, now: 5 * time.Second,
			want: expect{effects: []string{"DeleteCluster"}}},
		{name: "rules: another status matches none", job: done(rayv1.JobStatusFailed, rules(onStatus(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0))), rc: rc, now: time.Hour,
			want: expect{effects: []string{}, noWake: true}},
		{name: "rules, gate off: shutdownAfterJobFinishes (false here) applies", job: done(rayv1.JobStatusSucceeded, rules(onStatus(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0))),
			rc: rc, gates: gateOff, want: expect{effects: []string{}, noWake: true}},
		{name: "legacy: onSuccess after ttlSecondsAfterFinished", job: done(rayv1.JobStatusSucceeded, legacy(rayv1.DeleteWorkers, rayv1.DeleteCluster), func(j *rayv1.RayJob) { j.Spec.TTLSecondsAfterFinished = 30 }),
			rc: rc, now: 30 * time.Second, want: expect{effects: []string{"SuspendWorkers"}}},
		{name: "legacy: a job that never reported FAILED has no onFailure", job: done(rayv1.JobStatusPending, legacy(rayv1.DeleteCluster, rayv1.DeleteCluster)), rc: rc,
			now: time.Hour, want: expect{effects: []string{}}},
		{name: "legacy, gate off: shutdownAfterJobFinishes", job: done(rayv1.JobStatusFailed, legacy(rayv1.DeleteNone, rayv1.DeleteNone), shutdown(0)), rc: rc, gates: gateOff,
			want: expect{effects: []string{"DeleteCluster"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputsFor(tc.job, tc.now, Observed{Cluster: tc.rc})
			if tc.gates != nil {
				in.Settings.Gates = tc.gates
			}
			in.Settings.DeleteRayJobAfterJobFinishes = tc.self
			tc.want.check(t, Decide(in))
		})
	}
}

func TestDeadlineStopsTheJob(t *testing.T) {
	job := runningJob(rayv1.HTTPMode, rayv1.JobStatusRunning, func(j *rayv1.RayJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int32](60) })
	p := Decide(inputsFor(job, time.Minute, withService(job, Observed{})))
	expect{ds: rayv1.JobDeploymentStatusFailed, reason: rayv1.DeadlineExceeded, effects: []string{"StopJob"}, events: []string{EventFailed, EventStoppedJob}}.check(t, p)
}

func TestGateOffIsAnnounced(t *testing.T) {
	job := runningJob(rayv1.HTTPMode, rayv1.JobStatusRunning, func(j *rayv1.RayJob) {
		j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: []rayv1.DeletionRule{{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusSucceeded)}}}}
	})
	in := inputsFor(job, time.Minute, withService(job, Observed{Jobs: view(found(59*time.Second, rayv1.JobStatusSucceeded, ""), nil)}))
	in.Settings.Gates = gateOff
	expect{ds: rayv1.JobDeploymentStatusComplete, events: []string{EventCompleted, EventDeletionPolicyFallback}}.check(t, Decide(in))
}

func TestParseSettings(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want Settings
	}{
		{env: nil, want: Settings{}},
		{env: map[string]string{EnvStatusCheckTimeout: "900", EnvTransitionGracePeriod: "60", EnvDeleteRayJobAfterFinish: "TRUE"},
			want: Settings{StatusCheckTimeout: 900 * time.Second, TransitionGracePeriod: time.Minute, DeleteRayJobAfterJobFinishes: true}},
		{env: map[string]string{EnvStatusCheckTimeout: "0", EnvTransitionGracePeriod: "0", EnvDeleteRayJobAfterFinish: "yes"}, want: Settings{TransitionGracePeriod: -1}},
		{env: map[string]string{EnvStatusCheckTimeout: "-5", EnvTransitionGracePeriod: "ten"}, want: Settings{}},
		{env: map[string]string{EnvStatusCheckTimeout: "99999999999999999"}, want: Settings{StatusCheckTimeout: seconds(99999999999999999)}},
	} {
		if got := ParseSettings(env(tc.env)); got != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.env, got, tc.want)
		}
	}
	if d := (Settings{}).withDefaults(); d.StatusCheckTimeout != 300*time.Second || d.TransitionGracePeriod != 300*time.Second || d.SubmitterFinishedTimeout != 30*time.Second {
		t.Errorf("defaults %+v", d)
	}
}

func TestWakeupAfter(t *testing.T) {
	now := t0
	for _, tc := range []struct {
		w    Wakeup
		want time.Duration
	}{
		{Wakeup{}, 0},
		{Wakeup{Soon: true, At: now.Add(time.Hour)}, soonRequeue},
		{Wakeup{At: now.Add(time.Minute)}, time.Minute},
		{Wakeup{At: now.Add(-time.Minute)}, time.Millisecond},
	} {
		if got := tc.w.After(now); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.w, got, tc.want)
		}
	}
}

// gateOff turns RayJobDeletionPolicy off (features.Static leaves unlisted gates at their
// defaults, and this one is on by default).
var gateOff = features.Static{features.RayJobDeletionPolicy: false}
