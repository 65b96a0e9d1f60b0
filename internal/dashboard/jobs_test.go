package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// A GET /api/jobs/<id> answer as Ray 2.x returns it for a job that failed.
const failedJobJSON = `{
  "type": "SUBMISSION", "job_id": "02000000", "submission_id": "rayjob-sample-x7k2p",
  "driver_info": {"id": "02000000", "node_ip_address": "10.244.0.7", "pid": "1234"},
  "status": "FAILED", "entrypoint": "python /home/ray/samples/sample_code.py",
  "message": "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\nTraceback (most recent call last):\n  File \"sample_code.py\", line 3\nValueError: boom",
  "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR", "start_time": 1700000000123, "end_time": 1700000042456,
  "metadata": {"owner": "team-a"}, "runtime_env": {"pip": ["requests==2.26.0"], "env_vars": {"counter_name": "test_counter"}},
  "driver_agent_http_address": "http://10.244.0.7:52365", "driver_node_id": "abc", "driver_exit_code": 1
}`

// rayAlreadyExists is the head's answer to a second submission with the same id: the job
// agent's 400 wrapped in a 500 with both tracebacks.
const rayAlreadyExists = `Traceback (most recent call last):
  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/dashboard/modules/job/job_head.py", line 340, in submit_job
    resp = await job_agent_client.submit_job_internal(submit_request)
RuntimeError: Request failed with status code 400: Traceback (most recent call last):
  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/dashboard/modules/job/job_agent.py", line 45, in submit_job
ValueError: Job with submission_id rayjob-sample-x7k2p already exists. Please use a different submission_id.
.`

// jobServer answers with handler and records the last request.
type jobServer struct {
	*httptest.Server
	method, path, auth, ctype string
	body                      []byte
}

func newJobServer(t *testing.T, handler http.HandlerFunc) *jobServer {
	t.Helper()
	s := &jobServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.method, s.path, s.auth, s.ctype = r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		s.body, _ = io.ReadAll(r.Body)
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestSubmitJobSendsRayFieldNames(t *testing.T) {
	srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"job_id":"rayjob-sample-x7k2p","submission_id":"rayjob-sample-x7k2p"}`)
	})
	c := New(srv.URL, nil)
	c.Token = "s3cret"
	id, err := c.SubmitJob(context.Background(), JobSubmission{
		Entrypoint: "python /home/ray/samples/sample_code.py", SubmissionID: "rayjob-sample-x7k2p",
		RuntimeEnv: json.RawMessage(`{"pip":["requests==2.26.0"]}`), Metadata: map[string]string{"owner": "team-a"},
		EntrypointNumCPUs: 1.5, EntrypointNumGPUs: 1, EntrypointResources: map[string]float64{"TPU": 4},
	})
	if err != nil || id != "rayjob-sample-x7k2p" {
		t.Fatalf("SubmitJob = %q, %v", id, err)
	}
	if srv.method != http.MethodPost || srv.path != JobsPath || srv.ctype != "application/json" || srv.auth != "Bearer s3cret" {
		t.Errorf("request %s %s content-type %q auth %q", srv.method, srv.path, srv.ctype, srv.auth)
	}
	var got map[string]any
	if err := json.Unmarshal(srv.body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"entrypoint": "python /home/ray/samples/sample_code.py", "submission_id": "rayjob-sample-x7k2p",
		"runtime_env": map[string]any{"pip": []any{"requests==2.26.0"}}, "metadata": map[string]any{"owner": "team-a"},
		"entrypoint_num_cpus": 1.5, "entrypoint_num_gpus": 1.0, "entrypoint_resources": map[string]any{"TPU": 4.0},
	}
	if gb, wb := mustJSON(t, got), mustJSON(t, want); gb != wb {
		t.Errorf("body\n got %s\nwant %s", gb, wb)
	}
	// Unset options are left out, as `ray job submit` leaves them out.
	if _, err := c.SubmitJob(context.Background(), JobSubmission{Entrypoint: "echo hi", SubmissionID: "rayjob-sample-x7k2p"}); err != nil {
		t.Fatal(err)
	}
	if string(srv.body) != `{"entrypoint":"echo hi","submission_id":"rayjob-sample-x7k2p"}` {
		t.Errorf("minimal body = %s", srv.body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSubmitJobAnswers(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		sub       JobSubmission
		wantID    string
		exists    bool
		errSubstr string
	}{
		{name: "accepted", status: 200, body: `{"job_id":"j-1","submission_id":"j-1"}`, sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, wantID: "j-1"},
		{name: "id made up by Ray", status: 200, body: `{"job_id":"raysubmit_abc","submission_id":"raysubmit_abc"}`, sub: JobSubmission{Entrypoint: "x"}, wantID: "raysubmit_abc"},
		{name: "old Ray answers job_id only", status: 200, body: `{"job_id":"j-1"}`, sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, wantID: "j-1"},
		{name: "duplicate through the head (500)", status: 500, body: rayAlreadyExists, sub: JobSubmission{Entrypoint: "x", SubmissionID: "rayjob-sample-x7k2p"}, exists: true, errSubstr: "HTTP 500"},
		{name: "duplicate from the agent (400)", status: 400, body: "ValueError: Job with submission_id j-1 already exists. Please use a different submission_id.", sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, exists: true, errSubstr: "HTTP 400"},
		{name: "no agent yet (500)", status: 500, body: "No available agent to submit job, please try again later.", sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, errSubstr: "No available agent"},
		{name: "invalid request (400)", status: 400, body: "TypeError: entrypoint must be a string", sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, errSubstr: "TypeError"},
		{name: "already exists on another status", status: 409, body: alreadyExistsPhrase, sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, errSubstr: "HTTP 409"},
		{name: "answer for another id", status: 200, body: `{"job_id":"other","submission_id":"other"}`, sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, errSubstr: "not the \"j-1\" submitted"},
		{name: "answer without id", status: 200, body: `{}`, sub: JobSubmission{Entrypoint: "x"}, errSubstr: "unusable submission id"},
		{name: "answer with a path in the id", status: 200, body: `{"submission_id":"../../api/serve"}`, sub: JobSubmission{Entrypoint: "x"}, errSubstr: "unusable submission id"},
		{name: "not JSON", status: 200, body: "<html>proxy</html>", sub: JobSubmission{Entrypoint: "x", SubmissionID: "j-1"}, errSubstr: "invalid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			id, err := New(srv.URL, nil).SubmitJob(context.Background(), tc.sub)
			if id != tc.wantID {
				t.Errorf("id = %q, want %q", id, tc.wantID)
			}
			if (err != nil) != (tc.errSubstr != "") || (err != nil && !strings.Contains(err.Error(), tc.errSubstr)) {
				t.Errorf("err = %v, want one containing %q", err, tc.errSubstr)
			}
			if IsJobAlreadyExists(err) != tc.exists {
				t.Errorf("IsJobAlreadyExists = %v, want %v (err %v)", IsJobAlreadyExists(err), tc.exists, err)
			}
			if IsJobNotFound(err) {
				t.Errorf("a submission error is never IsJobNotFound: %v", err)
			}
			var e *Error
			if tc.status >= 300 && !errors.As(err, &e) {
				t.Errorf("err %v is not an *Error", err)
			}
		})
	}
}

func TestSubmitJobRefusesBadInputBeforeSending(t *testing.T) {
	srv := newJobServer(t, func(http.ResponseWriter, *http.Request) { t.Error("nothing may be sent") })
	c := New(srv.URL, nil)
	for _, sub := range []JobSubmission{
		{Entrypoint: "x", SubmissionID: "a/b"},
		{Entrypoint: "x", SubmissionID: strings.Repeat("a", 256)},
		{Entrypoint: "x", SubmissionID: "j-1", RuntimeEnv: json.RawMessage(`["not","an","object"]`)},
		{Entrypoint: "x", SubmissionID: "j-1", RuntimeEnv: json.RawMessage(`{"broken":`)},
	} {
		if _, err := c.SubmitJob(context.Background(), sub); err == nil {
			t.Errorf("SubmitJob(%+v) = nil error", sub)
		}
	}
}

func TestGetJobInfo(t *testing.T) {
	srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, failedJobJSON) })
	info, err := New(srv.URL, nil).GetJobInfo(context.Background(), "rayjob-sample-x7k2p")
	if err != nil {
		t.Fatal(err)
	}
	if srv.method != http.MethodGet || srv.path != "/api/jobs/rayjob-sample-x7k2p" {
		t.Errorf("request %s %s", srv.method, srv.path)
	}
	if info.Status != JobStatusFailed || !info.Status.IsTerminal() || info.UnknownStatus != "" || info.JobID != "02000000" ||
		info.SubmissionID != "rayjob-sample-x7k2p" || info.Type != "SUBMISSION" || info.ErrorType != "JOB_ENTRYPOINT_COMMAND_ERROR" {
		t.Errorf("info = %+v", info)
	}
	if info.StartTime != 1700000000123 || info.EndTime != 1700000042456 {
		t.Errorf("times = %d, %d", info.StartTime, info.EndTime)
	}
	if info.DriverExitCode == nil || *info.DriverExitCode != 1 {
		t.Errorf("driver exit code = %v", info.DriverExitCode)
	}
	if !strings.HasPrefix(info.Message, "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars): Traceback") ||
		strings.ContainsAny(info.Message, "\n\r\t") {
		t.Errorf("message = %q", info.Message)
	}
	if info.Metadata["owner"] != "team-a" || string(info.RuntimeEnv) != `{"pip": ["requests==2.26.0"], "env_vars": {"counter_name": "test_counter"}}` {
		t.Errorf("metadata %v runtime_env %s", info.Metadata, info.RuntimeEnv)
	}
	if s := info.String(); s != "job rayjob-sample-x7k2p: FAILED: "+info.Message {
		t.Errorf("String() = %q", s)
	}
}

func TestGetJobInfoAnswers(t *testing.T) {
	long := strings.Repeat("m", 5000)
	cases := []struct {
		name      string
		status    int
		body      string
		check     func(t *testing.T, info *JobInfo)
		notFound  bool
		errSubstr string
	}{
		{name: "pending, times unset", status: 200, body: `{"type":"SUBMISSION","submission_id":"j-1","status":"PENDING","entrypoint":"x","start_time":1700000000000,"end_time":null,"job_id":null,"message":null,"metadata":null,"runtime_env":null,"driver_exit_code":null}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.Status != JobStatusPending || i.EndTime != 0 || i.JobID != "" || i.Metadata != nil || i.RuntimeEnv != nil || i.DriverExitCode != nil || i.Status.IsTerminal() {
					t.Errorf("info = %+v", i)
				}
			}},
		{name: "asked by core job id", status: 200, body: `{"submission_id":"other","job_id":"j-1","status":"RUNNING"}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.Status != JobStatusRunning {
					t.Errorf("status = %q", i.Status)
				}
			}},
		{name: "unknown status word", status: 200, body: `{"submission_id":"j-1","status":"FINISHED_MAYBE"}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.Status != JobStatusPending || i.UnknownStatus != "FINISHED_MAYBE" || !strings.Contains(i.String(), "PENDING (reported as FINISHED_MAYBE)") {
					t.Errorf("status %q unknown %q", i.Status, i.UnknownStatus)
				}
			}},
		{name: "status with control characters", status: 200, body: `{"submission_id":"j-1","status":"SUCCEEDED\u001b[2J\r\nFAKE","message":"done\u0000\u202e` + long + `"}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.Status != JobStatusPending || i.Status.IsTerminal() || strings.ContainsAny(i.UnknownStatus+i.Message, "\x1b\r\n\x00\u202e") {
					t.Errorf("status %q unknown %q message %q", i.Status, i.UnknownStatus, i.Message[:20])
				}
				if n := utf8.RuneCountInString(i.UnknownStatus); n > 33 {
					t.Errorf("unknown status of %d runes kept", n)
				}
				if n := utf8.RuneCountInString(i.Message); n > maxJobMessage+1 {
					t.Errorf("message of %d runes kept", n)
				}
			}},
		{name: "empty status", status: 200, body: `{"submission_id":"j-1","status":""}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.Status != JobStatusPending || i.UnknownStatus != `""` {
					t.Errorf("status %q unknown %q", i.Status, i.UnknownStatus)
				}
			}},
		{name: "lowercase status is not Ray's", status: 200, body: `{"submission_id":"j-1","status":"succeeded"}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.Status != JobStatusPending || i.UnknownStatus != "succeeded" {
					t.Errorf("status %q unknown %q", i.Status, i.UnknownStatus)
				}
			}},
		{name: "times and exit code out of range", status: 200, body: `{"submission_id":"j-1","status":"FAILED","start_time":-5,"end_time":1e300,"driver_exit_code":99999999999}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.StartTime != 0 || i.EndTime != 0 || i.DriverExitCode != nil {
					t.Errorf("info = %+v", i)
				}
			}},
		{name: "fractional time", status: 200, body: `{"submission_id":"j-1","status":"RUNNING","start_time":1700000000123.7}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.StartTime != 1700000000123 {
					t.Errorf("start = %d", i.StartTime)
				}
			}},
		{name: "oversized runtime_env and odd metadata", status: 200,
			body: `{"submission_id":"j-1","status":"RUNNING","runtime_env":{"pad":"` + strings.Repeat("x", MaxJobRuntimeEnvBytes) + `"},"metadata":{"ok":"v","num":3,"obj":{"a":1},"bad\u0000key":"x","":"empty"}}`,
			check: func(t *testing.T, i *JobInfo) {
				if i.RuntimeEnv != nil || len(i.Metadata) != 1 || i.Metadata["ok"] != "v" {
					t.Errorf("runtime_env %d bytes, metadata %v", len(i.RuntimeEnv), i.Metadata)
				}
			}},
		{name: "dense metadata", status: 200, body: func() string {
			var b strings.Builder
			b.WriteString(`{"submission_id":"j-1","status":"RUNNING","metadata":{`)
			for i := 0; b.Len() < MaxResponseBytes-64; i++ {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(`"k` + strconv.Itoa(i) + `":""`)
			}
			b.WriteString(`}}`)
			return b.String()
		}(),
			check: func(t *testing.T, i *JobInfo) {
				if _, first := i.Metadata["k0"]; len(i.Metadata) != MaxJobMetadata || !first {
					t.Errorf("kept %d metadata entries", len(i.Metadata))
				}
			}},
		{name: "status not a string", status: 200, body: `{"submission_id":"j-1","status":3}`, errSubstr: "invalid JSON"},
		{name: "details of another job", status: 200, body: `{"submission_id":"someone-else","status":"SUCCEEDED"}`, errSubstr: "another job"},
		{name: "not found", status: 404, body: "Job j-1 does not exist", notFound: true, errSubstr: "HTTP 404: Job j-1 does not exist"},
		{name: "server error", status: 500, body: "Traceback ... GCS unavailable", errSubstr: "HTTP 500"},
		{name: "binary garbage", status: 200, body: "\x00\xff\xfe\x1b[31m\x89PNG\r\n\x1a\n", errSubstr: "invalid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			info, err := New(srv.URL, nil).GetJobInfo(context.Background(), "j-1")
			if (err != nil) != (tc.errSubstr != "") || (err != nil && !strings.Contains(err.Error(), tc.errSubstr)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.errSubstr)
			}
			if IsJobNotFound(err) != tc.notFound || IsJobAlreadyExists(err) {
				t.Errorf("IsJobNotFound = %v, want %v; IsJobAlreadyExists = %v", IsJobNotFound(err), tc.notFound, IsJobAlreadyExists(err))
			}
			if err != nil && hasRawBytes(err.Error()) {
				t.Errorf("the error quotes the untrusted answer: %q", err)
			}
			if tc.check != nil {
				tc.check(t, info)
			}
		})
	}
}

func TestListJobs(t *testing.T) {
	body := `[` + failedJobJSON + `,
	  {"type":"DRIVER","job_id":"01000000","submission_id":null,"status":"SUCCEEDED","entrypoint":"","start_time":1700000000000,"end_time":1700000001000}]`
	srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) })
	jobs, err := New(srv.URL, nil).ListJobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if srv.path != JobsPath || len(jobs) != 2 || jobs[0].Status != JobStatusFailed || jobs[1].Type != "DRIVER" || jobs[1].SubmissionID != "" {
		t.Fatalf("path %s, jobs %+v", srv.path, jobs)
	}
}

func TestListJobsDenseAndInvalid(t *testing.T) {
	// 1 MiB of empty objects would be ~350,000 jobs: only MaxJobs are decoded.
	dense := "[" + strings.Repeat(`{},`, (MaxResponseBytes-16)/3) + `{}]`
	cases := []struct {
		name      string
		body      string
		wantN     int
		errSubstr string
	}{
		{name: "dense", body: dense, wantN: MaxJobs},
		{name: "empty", body: `[]`, wantN: 0},
		{name: "object instead of list", body: `{"jobs":[]}`, errSubstr: "not a JSON array"},
		{name: "broken element", body: `[{"status":"RUNNING"},{"status":`, errSubstr: "invalid JSON"},
		{name: "garbage", body: "\x00\x01\x02", errSubstr: "not a JSON array"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, tc.body) })
			jobs, err := New(srv.URL, nil).ListJobs(context.Background())
			if (err != nil) != (tc.errSubstr != "") || (err != nil && !strings.Contains(err.Error(), tc.errSubstr)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.errSubstr)
			}
			if err == nil && len(jobs) != tc.wantN {
				t.Errorf("%d jobs, want %d", len(jobs), tc.wantN)
			}
			for _, j := range jobs {
				if j.Status != JobStatusPending || j.UnknownStatus != `""` {
					t.Fatalf("an empty object decodes to %+v", j)
				}
			}
		})
	}
}

func TestStopAndDeleteJob(t *testing.T) {
	cases := []struct {
		name      string
		stop      bool
		status    int
		body      string
		want      bool
		notFound  bool
		errSubstr string
	}{
		{name: "stopped", stop: true, status: 200, body: `{"stopped": true}`, want: true},
		{name: "already ended", stop: true, status: 200, body: `{"stopped": false}`},
		{name: "stop unknown job", stop: true, status: 404, body: "Job j-1 does not exist", notFound: true, errSubstr: "HTTP 404"},
		{name: "stop garbage", stop: true, status: 200, body: "yes", errSubstr: "not a stop response"},
		{name: "deleted", status: 200, body: `{"deleted": true}`, want: true},
		{name: "delete running job", status: 500, body: "RuntimeError: Attempted to delete job with submission_id j-1, but it is in a non-terminal state RUNNING.", errSubstr: "non-terminal"},
		{name: "delete unknown job", status: 404, body: "Job j-1 does not exist", notFound: true, errSubstr: "HTTP 404"},
		{name: "delete garbage", status: 200, body: "[]", errSubstr: "not a delete response"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			c := New(srv.URL, nil)
			var got bool
			var err error
			wantMethod, wantPath := http.MethodDelete, "/api/jobs/j-1"
			if tc.stop {
				got, err = c.StopJob(context.Background(), "j-1")
				wantMethod, wantPath = http.MethodPost, "/api/jobs/j-1/stop"
			} else {
				got, err = c.DeleteJob(context.Background(), "j-1")
			}
			if srv.method != wantMethod || srv.path != wantPath {
				t.Errorf("request %s %s, want %s %s", srv.method, srv.path, wantMethod, wantPath)
			}
			if got != tc.want || (err != nil) != (tc.errSubstr != "") || (err != nil && !strings.Contains(err.Error(), tc.errSubstr)) {
				t.Errorf("= %v, %v; want %v and an error containing %q", got, err, tc.want, tc.errSubstr)
			}
			if IsJobNotFound(err) != tc.notFound {
				t.Errorf("IsJobNotFound = %v, want %v", IsJobNotFound(err), tc.notFound)
			}
		})
	}
}

func TestJobPathsEscapeAndRefuse(t *testing.T) {
	srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"submission_id":"j:1@x%y","status":"RUNNING"}`)
	})
	c := New(srv.URL, nil)
	if _, err := c.GetJobInfo(context.Background(), "j:1@x%y"); err != nil {
		t.Fatal(err)
	}
	if srv.path != "/api/jobs/j:1@x%25y" {
		t.Errorf("path = %s", srv.path)
	}
	for _, id := range []string{"", ".", "..", "a/b", `a\b`, "a b", "a\nb", "a\x00b", "\xff", strings.Repeat("x", 256)} {
		if err := ValidateJobID(id); err == nil {
			t.Errorf("ValidateJobID(%q) = nil", id)
		}
		if _, err := c.GetJobInfo(context.Background(), id); err == nil {
			t.Errorf("GetJobInfo(%q) = nil error", id)
		}
		if _, err := c.StopJob(context.Background(), id); err == nil {
			t.Errorf("StopJob(%q) = nil error", id)
		}
		if _, err := c.GetJobLogs(context.Background(), id); err == nil {
			t.Errorf("GetJobLogs(%q) = nil error", id)
		}
	}
	for _, id := range []string{"rayjob-sample-x7k2p", "raysubmit_6DCjsUQmuwhPk5Bs", "j:1@x%y", "日本"} {
		if err := ValidateJobID(id); err != nil {
			t.Errorf("ValidateJobID(%q) = %v", id, err)
		}
	}
}

func TestParseJobStatus(t *testing.T) {
	for in, want := range map[string]struct {
		s     JobStatus
		known bool
		term  bool
	}{
		"PENDING": {JobStatusPending, true, false}, "RUNNING": {JobStatusRunning, true, false},
		"STOPPED": {JobStatusStopped, true, true}, "SUCCEEDED": {JobStatusSucceeded, true, true}, "FAILED": {JobStatusFailed, true, true},
		"": {JobStatusPending, false, false}, "DONE": {JobStatusPending, false, false}, "failed": {JobStatusPending, false, false},
	} {
		s, known := ParseJobStatus(in)
		if s != want.s || known != want.known || s.IsTerminal() != want.term {
			t.Errorf("ParseJobStatus(%q) = %q, %v (terminal %v)", in, s, known, s.IsTerminal())
		}
	}
}
