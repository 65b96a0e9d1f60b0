package raysim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/dashboard"
)

func submit(t *testing.T, c *dashboard.HTTPClient, id string) {
	t.Helper()
	got, err := c.SubmitJob(context.Background(), dashboard.JobSubmission{Entrypoint: "python /home/ray/samples/sample_code.py", SubmissionID: id})
	if err != nil || got != id {
		t.Fatalf("SubmitJob(%s) = %q, %v", id, got, err)
	}
}

func jobInfo(t *testing.T, c *dashboard.HTTPClient, id string) *dashboard.JobInfo {
	t.Helper()
	info, err := c.GetJobInfo(context.Background(), id)
	if err != nil {
		t.Fatalf("GetJobInfo(%s): %v", id, err)
	}
	return info
}

func TestJobPendingRunningSucceeded(t *testing.T) {
	clk := &fakeClock{t: time.UnixMilli(1_700_000_000_123)}
	_, c := start(t, Options{Now: clk.Now, Jobs: JobOptions{PendingDelay: 2 * time.Second, RunDelay: 5 * time.Second}})
	ctx := context.Background()
	_, err := c.SubmitJob(ctx, dashboard.JobSubmission{
		Entrypoint: "python /home/ray/samples/sample_code.py", SubmissionID: "rayjob-sample-x7k2p",
		RuntimeEnv: []byte(`{"pip":["requests==2.26.0"]}`), Metadata: map[string]string{"owner": "team-a"}, EntrypointNumCPUs: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	info := jobInfo(t, c, "rayjob-sample-x7k2p")
	if info.Status != dashboard.JobStatusPending || info.StartTime != 1_700_000_000_123 || info.EndTime != 0 || info.JobID != "" ||
		!strings.HasPrefix(info.Message, "Job has not started yet") || info.Metadata["owner"] != "team-a" || string(info.RuntimeEnv) != `{"pip":["requests==2.26.0"]}` {
		t.Fatalf("pending: %+v", info)
	}
	if logs, err := c.GetJobLogs(ctx, "rayjob-sample-x7k2p"); err != nil || logs.Tail != "" {
		t.Fatalf("logs while pending = %+v, %v", logs, err)
	}
	clk.Add(2 * time.Second)
	info = jobInfo(t, c, "rayjob-sample-x7k2p")
	if info.Status != dashboard.JobStatusRunning || info.JobID == "" || info.EndTime != 0 || info.Message != "Job is currently running." {
		t.Fatalf("running: %+v", info)
	}
	// Ray also finds a job by its core job id once it runs.
	if byCore := jobInfo(t, c, info.JobID); byCore.SubmissionID != "rayjob-sample-x7k2p" {
		t.Fatalf("by core id: %+v", byCore)
	}
	clk.Add(5 * time.Second)
	info = jobInfo(t, c, "rayjob-sample-x7k2p")
	if info.Status != dashboard.JobStatusSucceeded || info.EndTime != 1_700_000_007_123 || info.Message != "Job finished successfully." ||
		info.DriverExitCode == nil || *info.DriverExitCode != 0 || info.ErrorType != "" {
		t.Fatalf("succeeded: %+v", info)
	}
	logs, err := c.GetJobLogs(ctx, "rayjob-sample-x7k2p")
	if err != nil || !strings.Contains(logs.Tail, "running python /home/ray/samples/sample_code.py\n") || !strings.HasSuffix(logs.Tail, "exited\n") {
		t.Fatalf("logs = %+v, %v", logs, err)
	}
}

func TestJobSubmittedTwiceIsRefusedAsRayDoes(t *testing.T) {
	s, c := start(t, Options{})
	submit(t, c, "j-1")
	_, err := c.SubmitJob(context.Background(), dashboard.JobSubmission{Entrypoint: "other", SubmissionID: "j-1"})
	if !dashboard.IsJobAlreadyExists(err) {
		t.Fatalf("second submission: err = %v, want already exists", err)
	}
	var e *dashboard.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusInternalServerError {
		t.Fatalf("err = %v, want Ray's HTTP 500", err)
	}
	posts := s.JobSubmissionsFor("j-1")
	if len(posts) != 2 || !posts[0].Accepted || posts[1].Accepted || posts[1].HTTPStatus != 500 || posts[1].Request.Entrypoint != "other" {
		t.Fatalf("posts = %+v", posts)
	}
	if info := jobInfo(t, c, "j-1"); info.Entrypoint != "python /home/ray/samples/sample_code.py" {
		t.Fatalf("the first submission must stand: %+v", info)
	}
}

func TestJobWithoutSubmissionIDGetsRaysKind(t *testing.T) {
	s, c := start(t, Options{})
	id, err := c.SubmitJob(context.Background(), dashboard.JobSubmission{Entrypoint: "echo hi"})
	if err != nil || !strings.HasPrefix(id, "raysubmit_") || len(id) != len("raysubmit_")+16 {
		t.Fatalf("id = %q, %v", id, err)
	}
	if posts := s.JobSubmissions(); len(posts) != 1 || posts[0].SubmissionID != id || !posts[0].Accepted {
		t.Fatalf("posts = %+v", posts)
	}
}

func TestJobOutcomes(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	opts := Options{Now: clk.Now, Jobs: JobOptions{PendingDelay: time.Second, RunDelay: time.Second,
		Outcome: func(_ types.NamespacedName, j dashboard.JobSubmission) JobOutcome {
			switch {
			case strings.Contains(j.Entrypoint, "fail"):
				return JobOutcome{Status: dashboard.JobStatusFailed, Logs: "Traceback (most recent call last):\nValueError: boom\n"}
			case strings.Contains(j.Entrypoint, "hang-running"):
				return JobOutcome{Status: dashboard.JobStatusRunning}
			case strings.Contains(j.Entrypoint, "hang-pending"):
				return JobOutcome{Status: dashboard.JobStatusPending, Message: "waiting for 8 GPUs"}
			}
			return JobOutcome{}
		}}}
	s, c := start(t, opts)
	for _, id := range []string{"fail", "hang-running", "hang-pending", "ok"} {
		if _, err := c.SubmitJob(context.Background(), dashboard.JobSubmission{Entrypoint: "python " + id + ".py", SubmissionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	s.SetJobOutcome("scripted", JobOutcome{Status: dashboard.JobStatusFailed, Message: "OOM killed"})
	submit(t, c, "scripted")
	clk.Add(time.Hour)
	want := map[string]dashboard.JobStatus{"fail": "FAILED", "hang-running": "RUNNING", "hang-pending": "PENDING", "ok": "SUCCEEDED", "scripted": "FAILED"}
	for id, st := range want {
		if info := jobInfo(t, c, id); info.Status != st {
			t.Errorf("%s: status %s, want %s", id, info.Status, st)
		}
	}
	failed := jobInfo(t, c, "fail")
	if !strings.Contains(failed.Message, "failed with exit code 1") || !strings.Contains(failed.Message, "ValueError: boom") ||
		failed.ErrorType != "JOB_ENTRYPOINT_COMMAND_ERROR" || failed.DriverExitCode == nil || *failed.DriverExitCode != 1 {
		t.Errorf("failed job: %+v", failed)
	}
	if m := jobInfo(t, c, "scripted").Message; m != "OOM killed" {
		t.Errorf("scripted message = %q", m)
	}
	if m := jobInfo(t, c, "hang-pending").Message; m != "waiting for 8 GPUs" {
		t.Errorf("hanging message = %q", m)
	}
	// A hanging job is released on demand.
	if err := s.SetJobStatus("hang-running", dashboard.JobStatusSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	if info := jobInfo(t, c, "hang-running"); info.Status != dashboard.JobStatusSucceeded || info.EndTime != uint64(clk.Now().UnixMilli()) || info.Message != "Job finished successfully." {
		t.Errorf("released: %+v", info)
	}
	if err := s.SetJobStatus("nope", dashboard.JobStatusFailed, ""); err == nil {
		t.Error("SetJobStatus of an unknown job must fail")
	}
	if err := s.SetJobStatus("ok", "DONE", ""); err == nil {
		t.Error("SetJobStatus to a word Ray does not use must fail")
	}
	if got := s.JobStatuses(); len(got) != 5 || got["hang-pending"] != dashboard.JobStatusPending {
		t.Errorf("JobStatuses = %v", got)
	}
}

func TestJobStopDeleteAndList(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s, c := start(t, Options{Now: clk.Now, Jobs: JobOptions{RunDelay: time.Minute}})
	ctx := context.Background()
	submit(t, c, "a")
	submit(t, c, "b")
	var e *dashboard.Error
	if _, err := c.DeleteJob(ctx, "a"); !errors.As(err, &e) || e.StatusCode != http.StatusInternalServerError {
		t.Fatalf("deleting a running job: %v", err)
	}
	if info := jobInfo(t, c, "a"); info.Status != dashboard.JobStatusRunning {
		t.Fatalf("a refused delete changed the job: %+v", info)
	}
	if stopped, err := c.StopJob(ctx, "a"); err != nil || !stopped {
		t.Fatalf("stop = %v, %v", stopped, err)
	}
	if info := jobInfo(t, c, "a"); info.Status != dashboard.JobStatusStopped || info.EndTime == 0 || info.Message != "Job was intentionally stopped." {
		t.Fatalf("after stop: %+v", info)
	}
	if stopped, err := c.StopJob(ctx, "a"); err != nil || stopped {
		t.Fatalf("second stop = %v, %v; want false", stopped, err)
	}
	if _, err := c.StopJob(ctx, "zzz"); !dashboard.IsJobNotFound(err) {
		t.Fatalf("stop unknown: %v", err)
	}
	jobs, err := c.ListJobs(ctx)
	if err != nil || len(jobs) != 2 || jobs[0].SubmissionID != "a" || jobs[1].SubmissionID != "b" || jobs[1].Status != dashboard.JobStatusRunning {
		t.Fatalf("list = %+v, %v", jobs, err)
	}
	if deleted, err := c.DeleteJob(ctx, "a"); err != nil || !deleted {
		t.Fatalf("delete = %v, %v", deleted, err)
	}
	if _, err := c.GetJobInfo(ctx, "a"); !dashboard.IsJobNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := c.DeleteJob(ctx, "a"); !dashboard.IsJobNotFound(err) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := c.GetJobLogs(ctx, "a"); !dashboard.IsJobNotFound(err) {
		t.Fatalf("logs after delete: %v", err)
	}
	// A head restart without GCS fault tolerance forgets the jobs, not the record.
	s.Restart()
	if jobs, err := c.ListJobs(ctx); err != nil || len(jobs) != 0 {
		t.Fatalf("after restart: %+v, %v", jobs, err)
	}
	if n := len(s.JobSubmissions()); n != 2 {
		t.Fatalf("%d posts kept, want 2", n)
	}
}

func TestJobSubmissionsAreValidatedAsRayDoes(t *testing.T) {
	s, c := start(t, Options{})
	cases := []struct {
		body   string
		status int
		text   string
	}{
		{`{"entrypoint":"x","submission_id":"a","nope":1}`, 400, "unexpected keyword argument 'nope'"},
		{`{"submission_id":"a"}`, 400, "missing 1 required positional argument: 'entrypoint'"},
		{`{"entrypoint":3}`, 400, "entrypoint must be a string, got <class 'float'>"},
		{`{"entrypoint":"x","runtime_env":"pip"}`, 400, "runtime_env must be a dict"},
		{`{"entrypoint":"x","metadata":{"a":1}}`, 400, "metadata values must be strings"},
		{`{"entrypoint":"x","entrypoint_num_cpus":-1}`, 400, "must be a non-negative number"},
		{`{"entrypoint":"x","entrypoint_resources":{"TPU":"4"}}`, 400, "values must be numbers"},
		{`{"entrypoint":"x","entrypoint_memory":1.5}`, 400, "non-negative integer"},
		{`not json`, 500, "JSONDecodeError"},
		{`[]`, 500, "JSONDecodeError"},
	}
	for _, tc := range cases {
		resp, err := http.Post(s.URL()+dashboard.JobsPath, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.text) {
			t.Errorf("POST %s = %d %q, want %d with %q", tc.body, resp.StatusCode, b, tc.status, tc.text)
		}
	}
	if posts := s.JobSubmissions(); len(posts) != len(cases) || posts[0].Accepted || posts[0].SubmissionID != "" {
		t.Errorf("posts = %+v", posts)
	}
	if jobs, _ := c.ListJobs(context.Background()); len(jobs) != 0 {
		t.Errorf("invalid submissions created %d jobs", len(jobs))
	}
	// The deprecated job_id names the submission when submission_id is absent.
	resp, err := http.Post(s.URL()+dashboard.JobsPath, "application/json", strings.NewReader(`{"entrypoint":"x","job_id":"old-style"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if info := jobInfo(t, c, "old-style"); info.Entrypoint != "x" {
		t.Errorf("job_id: %+v", info)
	}
}

func TestJobsFaults(t *testing.T) {
	ctx := context.Background()
	s, c := start(t, Options{})

	s.SetJobsFault(JobsFault{RefuseSubmissions: http.StatusServiceUnavailable})
	_, err := c.SubmitJob(ctx, dashboard.JobSubmission{Entrypoint: "x", SubmissionID: "refused"})
	var e *dashboard.Error
	if !errors.As(err, &e) || e.StatusCode != 503 || !strings.Contains(err.Error(), "No available agent") || dashboard.IsJobAlreadyExists(err) {
		t.Fatalf("refused: %v", err)
	}
	if _, err := c.GetJobInfo(ctx, "refused"); !dashboard.IsJobNotFound(err) {
		t.Fatalf("a refused submission created a job: %v", err)
	}

	// The answer is lost but the job exists: asking before submitting again finds it.
	s.SetJobsFault(JobsFault{LoseSubmitAnswers: true})
	if _, err := c.SubmitJob(ctx, dashboard.JobSubmission{Entrypoint: "x", SubmissionID: "lost"}); err == nil || dashboard.IsJobAlreadyExists(err) {
		t.Fatalf("lost answer: %v", err)
	}
	s.SetJobsFault(JobsFault{})
	if info := jobInfo(t, c, "lost"); info.SubmissionID != "lost" {
		t.Fatalf("lost: %+v", info)
	}
	if _, err := c.SubmitJob(ctx, dashboard.JobSubmission{Entrypoint: "x", SubmissionID: "lost"}); !dashboard.IsJobAlreadyExists(err) {
		t.Fatalf("resubmitting a lost-answer job: %v", err)
	}
	if posts := s.JobSubmissionsFor("lost"); len(posts) != 2 || !posts[0].Accepted || posts[0].HTTPStatus != 500 {
		t.Fatalf("lost posts = %+v", posts)
	}

	s.SetJobsFault(JobsFault{Errors: true})
	for name, call := range map[string]func() error{
		"submit": func() error {
			_, err := c.SubmitJob(ctx, dashboard.JobSubmission{Entrypoint: "x", SubmissionID: "e"})
			return err
		},
		"get":  func() error { _, err := c.GetJobInfo(ctx, "lost"); return err },
		"list": func() error { _, err := c.ListJobs(ctx); return err },
	} {
		if err := call(); !errors.As(err, &e) || e.StatusCode != 500 {
			t.Errorf("%s under Errors: %v", name, err)
		}
	}

	s.SetJobsFault(JobsFault{Delay: time.Minute})
	c.Timeout = 100 * time.Millisecond
	if _, err := c.GetJobInfo(ctx, "lost"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow answer: %v", err)
	}
	s.SetJobsFault(JobsFault{})
	c.Timeout = 0

	// The dashboard-wide faults and outages apply to the Jobs API too.
	s.SetFault(Fault{Mode: FaultRedirect, Location: "http://127.0.0.1:1/elsewhere"})
	if _, err := c.GetJobInfo(ctx, "lost"); !errors.As(err, &e) || e.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("redirect fault: %v", err)
	}
	s.SetFault(Fault{})
	s.SetUnavailable(true)
	if _, err := c.GetJobInfo(ctx, "lost"); !errors.As(err, &e) || e.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GCS down: %v", err)
	}
	if resp, err := http.Get(s.URL() + GCSHealthPath); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("gcs_healthz while down: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	s.SetUnavailable(false)
	resp, err := http.Get(s.URL() + GCSHealthPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "success" {
		t.Errorf("gcs_healthz = %d %q", resp.StatusCode, b)
	}
}

func TestJobsAPIRequiresTheToken(t *testing.T) {
	s, c := start(t, Options{RequireToken: func(types.NamespacedName) string { return "t0ken" }})
	if _, err := c.ListJobs(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("without token: %v", err)
	}
	c.Token = "t0ken"
	submit(t, c, "j-1")
	if s.Unauthorized() != 1 {
		t.Fatalf("unauthorized = %d", s.Unauthorized())
	}
}

func TestJobsThroughRegistry(t *testing.T) {
	r := NewRegistry(Options{})
	defer r.Close()
	front := newTestServer(t, &http.Server{Handler: r.Handler(), ReadHeaderTimeout: time.Second})
	a := types.NamespacedName{Namespace: "team-a", Name: "rayjob-abc"}
	c := dashboard.New(front+"/team-a/rayjob-abc", nil)
	submit(t, c, "rayjob-1")
	if info := jobInfo(t, c, "rayjob-1"); info.Status != dashboard.JobStatusSucceeded {
		t.Fatalf("info = %+v", info)
	}
	all := r.JobSubmissions()
	if len(all) != 1 || len(all[a]) != 1 || all[a][0].SubmissionID != "rayjob-1" {
		t.Fatalf("JobSubmissions = %+v", all)
	}
	if got, ok := r.Server(a).Job("rayjob-1"); !ok || got.Status != dashboard.JobStatusSucceeded {
		t.Fatalf("Job = %+v, %v", got, ok)
	}
}

func TestJobsAPIMethodsAndPaths(t *testing.T) {
	s, _ := start(t, Options{})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPut, "/api/jobs/", 405},
		{http.MethodPost, "/api/jobs/x", 405},
		{http.MethodGet, "/api/jobs/x/stop", 405},
		{http.MethodGet, "/api/jobs/x/other", 404},
		{http.MethodGet, "/api/jobs/x", 404},
		{http.MethodGet, "/api/version", 200},
		{http.MethodPost, "/api/gcs_healthz", 405},
		{http.MethodGet, "/api/jobsx", 404},
	} {
		req, _ := http.NewRequest(tc.method, s.URL()+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
		}
	}
}
