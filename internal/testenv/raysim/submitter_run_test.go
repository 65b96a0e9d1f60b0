package raysim

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/dashboard"
)

// runEnv resolves every address to s.
func runEnv(s *Server) SubmitterEnv {
	return SubmitterEnv{Poll: 10 * time.Millisecond, Resolve: func(context.Context, string) (string, error) { return s.URL(), nil }}
}

func kubeRayScript(t *testing.T) *SubmitterScript {
	t.Helper()
	sc, err := ParseSubmitter([]string{"/bin/bash", "-ce", "--"}, []string{kubeRayK8sJobModeArgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestRunSubmitterK8sJobMode(t *testing.T) {
	s, c := start(t, Options{Jobs: JobOptions{PendingDelay: 20 * time.Millisecond, RunDelay: 50 * time.Millisecond}})
	sc := kubeRayScript(t)
	res := RunSubmitter(context.Background(), sc, runEnv(s))
	if res.ExitCode != 0 || !res.Submitted || res.SubmissionID != "rayjob-sample-abc12" || !strings.Contains(res.Output, "Job 'rayjob-sample-abc12' succeeded") {
		t.Fatalf("result = %+v", res)
	}
	info := jobInfo(t, c, "rayjob-sample-abc12")
	if info.Status != dashboard.JobStatusSucceeded || info.Entrypoint != "echo no quote 'single quote' 'double quote'" || info.Metadata["owner"] != "team-a" {
		t.Fatalf("job = %+v", info)
	}
	// A retried pod finds the job and only follows it: still exactly one submission.
	res = RunSubmitter(context.Background(), sc, runEnv(s))
	if res.ExitCode != 0 || res.Submitted {
		t.Fatalf("rerun = %+v", res)
	}
	if posts := s.JobSubmissionsFor("rayjob-sample-abc12"); len(posts) != 1 {
		t.Fatalf("%d submissions, want exactly 1", len(posts))
	}
}

func TestRunSubmitterExitCodes(t *testing.T) {
	failing := func(_ types.NamespacedName, _ dashboard.JobSubmission) JobOutcome {
		return JobOutcome{Status: dashboard.JobStatusFailed, Logs: "ValueError: boom\n"}
	}
	waiting := func(t *testing.T) *SubmitterScript {
		sc := kubeRayScript(t)
		sc.NoWait, sc.FollowID, sc.CheckID = false, "", ""
		return sc
	}
	cases := []struct {
		name   string
		opts   Options
		script func(t *testing.T) *SubmitterScript
		fault  JobsFault
		want   int
		output string
	}{
		// `ray job logs --follow` exits 0 whatever the job's status; the RayJob reads the
		// status from the Jobs API.
		{name: "K8sJobMode, the job fails", opts: Options{Jobs: JobOptions{Outcome: failing}}, script: kubeRayScript, want: 0, output: "Job 'rayjob-sample-abc12' failed"},
		// A `ray job submit` that waits exits 1 when the job failed.
		{name: "waiting submit, the job fails", opts: Options{Jobs: JobOptions{Outcome: failing}}, script: waiting, want: 1, output: "Status message: Job entrypoint command failed"},
		{name: "waiting submit, the job succeeds", script: waiting, want: 0},
		{name: "the submission is refused", script: kubeRayScript, fault: JobsFault{RefuseSubmissions: http.StatusInternalServerError}, want: 1, output: "No available agent"},
		{name: "the Jobs API fails", script: kubeRayScript, fault: JobsFault{Errors: true}, want: 1, output: "HTTP 500"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := start(t, tc.opts)
			s.SetJobsFault(tc.fault)
			res := RunSubmitter(context.Background(), tc.script(t), runEnv(s))
			if res.ExitCode != tc.want || !strings.Contains(res.Output, tc.output) {
				t.Fatalf("result = %+v, want exit %d and output with %q", res, tc.want, tc.output)
			}
		})
	}
}

func TestRunSubmitterWaitsForTheGCSAndTheDashboard(t *testing.T) {
	s, _ := start(t, Options{})
	s.SetUnavailable(true)
	resolvable := make(chan struct{})
	env := runEnv(s)
	env.Resolve = func(context.Context, string) (string, error) {
		select {
		case <-resolvable:
			return s.URL(), nil
		default:
			return "", errors.New("no such host")
		}
	}
	done := make(chan SubmitterResult, 1)
	go func() { done <- RunSubmitter(context.Background(), kubeRayScript(t), env) }()
	time.Sleep(50 * time.Millisecond)
	close(resolvable)
	time.Sleep(50 * time.Millisecond)
	select {
	case res := <-done:
		t.Fatalf("finished while the GCS was down: %+v", res)
	default:
	}
	if n := len(s.JobSubmissions()); n != 0 {
		t.Fatalf("submitted while the GCS was down (%d)", n)
	}
	s.SetUnavailable(false)
	select {
	case res := <-done:
		if res.ExitCode != 0 || !res.Submitted || !strings.Contains(res.Output, "Waiting for Ray Dashboard GCS") {
			t.Fatalf("result = %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not finish once the GCS was up")
	}
}

func TestRunSubmitterStopsWithItsContext(t *testing.T) {
	s, _ := start(t, Options{Jobs: JobOptions{Outcome: func(types.NamespacedName, dashboard.JobSubmission) JobOutcome {
		return JobOutcome{Status: dashboard.JobStatusRunning}
	}}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if res := RunSubmitter(ctx, kubeRayScript(t), runEnv(s)); res.ExitCode != 137 || !res.Submitted {
		t.Fatalf("result = %+v", res)
	}
	// Without a GCS wait, an address nobody answers for fails at once, as ray does.
	sc := kubeRayScript(t)
	sc.GCSHealthURL = ""
	env := runEnv(s)
	env.Resolve = func(context.Context, string) (string, error) { return "", errors.New("no such host") }
	if res := RunSubmitter(context.Background(), sc, env); res.ExitCode != 1 || !strings.Contains(res.Output, "no such host") {
		t.Fatalf("result = %+v", res)
	}
}
