package raysim

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/dashboard"
)

// The simulated Ray Jobs API (jobs_http.go serves it next to the Serve API). A submitted
// job is PENDING for JobOptions.PendingDelay, RUNNING for RunDelay, then ends as its
// JobOutcome says (SUCCEEDED by default), with start and end times in milliseconds since
// the epoch as Ray reports them. A second submission with a submission_id in use is refused
// as Ray refuses it (HTTP 500 wrapping the job agent's ValueError), and every POST is
// recorded, so a test can assert that a job was submitted exactly once.

// JobOptions tune a simulated cluster's Jobs API. The zero value runs every job to
// SUCCEEDED at once.
type JobOptions struct {
	// PendingDelay is how long a submitted job stays PENDING, RunDelay how long it then
	// stays RUNNING before it ends.
	PendingDelay, RunDelay time.Duration
	// Outcome, when set, decides how each submitted job ends (the zero JobOutcome:
	// SUCCEEDED). SetJobOutcome overrides it for one submission id.
	Outcome func(cluster types.NamespacedName, job dashboard.JobSubmission) JobOutcome
}

// JobOutcome is how a simulated job ends.
type JobOutcome struct {
	// Status is the status the job ends in: SUCCEEDED (""), FAILED or STOPPED; PENDING or
	// RUNNING make it hang in that status until SetJobStatus or a stop.
	Status dashboard.JobStatus
	// Message replaces Ray's message for that status ("": Ray's).
	Message string
	// Logs is what the entrypoint prints, shown once the job runs.
	Logs string
}

// JobPost is one POST /api/jobs/ the simulator answered (after any JobsFault delay).
type JobPost struct {
	Time time.Time
	// Body is the request body as sent.
	Body json.RawMessage
	// Request is the body decoded (zero when it was not a valid submission).
	Request dashboard.JobSubmission
	// SubmissionID is the id of the job it names or created (Ray's made-up one when the
	// request had none; "" when the request was invalid).
	SubmissionID string
	// Accepted: a job was created. HTTPStatus is the answer sent (a job created under
	// JobsFault.LoseSubmitAnswers is Accepted with a 500).
	Accepted   bool
	HTTPStatus int
}

// JobsFault scripts a misbehaving Jobs API; the zero value behaves like Ray. The Server's
// Fault (hang, redirect, huge and noisy answers) applies to the Jobs API too.
type JobsFault struct {
	// RefuseSubmissions, when non-zero, is the HTTP status every submission gets, with
	// RefuseMessage (default Ray's answer when no agent is available); no job is created.
	RefuseSubmissions int
	RefuseMessage     string
	// LoseSubmitAnswers creates each submitted job but answers HTTP 500, as when the head's
	// answer is lost: the caller must ask before it submits again.
	LoseSubmitAnswers bool
	// Errors answers every Jobs API request with HTTP 500, doing nothing.
	Errors bool
	// Delay holds every Jobs API answer this long (or until the client gives up).
	Delay time.Duration
}

// job is one submitted job's state; its status follows from the clock (see statusLocked).
type job struct {
	req          dashboard.JobSubmission
	submissionID string
	coreID       string // Ray's core job id, shown once it runs
	submitted    time.Time
	outcome      JobOutcome
	// forced is a status set by SetJobStatus or a stop, from forcedAt on.
	forced    dashboard.JobStatus
	forcedMsg string
	forcedAt  time.Time
}

// jobState is a Server's Jobs API state, guarded by Server.mu. The zero value is empty.
type jobState struct {
	jobs     map[string]*job // by submission id
	order    []string        // submission ids, oldest first
	posts    []JobPost
	outcomes map[string]JobOutcome // scripted by SetJobOutcome, by submission id
	fault    JobsFault
	coreIDs  int
}

// Ray's messages for each status.
const (
	msgPending   = "Job has not started yet. It may be waiting for resources (CPUs, GPUs, memory, custom resources) to become available. It may be waiting for the runtime environment to be set up."
	msgRunning   = "Job is currently running."
	msgSucceeded = "Job finished successfully."
	msgStopped   = "Job was intentionally stopped."
	msgFailed    = "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n"
)

// jobView is a job as the API shows it at one instant.
type jobView struct {
	status   dashboard.JobStatus
	message  string
	started  bool // the entrypoint started (core job id, driver, logs)
	end      time.Time
	exitCode *int
}

// viewLocked is the job's status at now: the one SetJobStatus or a stop forced, else the
// one its delays and outcome give.
func (s *Server) viewLocked(j *job, now time.Time) jobView {
	if j.forced == "" || now.Before(j.forcedAt) {
		return s.naturalView(j, now)
	}
	v := jobView{status: j.forced, message: j.forcedMsg}
	v.started = j.forced == dashboard.JobStatusRunning || (j.forced.IsTerminal() && s.naturalView(j, j.forcedAt).started)
	if j.forced.IsTerminal() {
		v.end = j.forcedAt
	}
	return v.withDefaults(j)
}

// naturalView is the job's status at now by its delays and outcome alone.
func (s *Server) naturalView(j *job, now time.Time) jobView {
	o := s.opts.Jobs
	runAt := j.submitted.Add(o.PendingDelay)
	endAt := runAt.Add(o.RunDelay)
	final := j.finalStatus()
	var v jobView
	switch {
	case now.Before(runAt) || final == dashboard.JobStatusPending:
		v.status = dashboard.JobStatusPending
	case now.Before(endAt) || final == dashboard.JobStatusRunning:
		v.status, v.started = dashboard.JobStatusRunning, true
	default:
		v.status, v.started, v.end = final, true, endAt
	}
	if v.status == final {
		v.message = j.outcome.Message
	}
	return v.withDefaults(j)
}

// withDefaults fills Ray's message for the status and the driver's exit code.
func (v jobView) withDefaults(j *job) jobView {
	if v.message == "" {
		v.message = defaultJobMessage(v.status, j, v.started)
	}
	if v.started && (v.status == dashboard.JobStatusSucceeded || v.status == dashboard.JobStatusFailed) {
		code := 0
		if v.status == dashboard.JobStatusFailed {
			code = 1
		}
		v.exitCode = &code
	}
	return v
}

func (j *job) finalStatus() dashboard.JobStatus {
	if j.outcome.Status == "" {
		return dashboard.JobStatusSucceeded
	}
	return j.outcome.Status
}

func defaultJobMessage(st dashboard.JobStatus, j *job, started bool) string {
	switch st {
	case dashboard.JobStatusRunning:
		return msgRunning
	case dashboard.JobStatusSucceeded:
		return msgSucceeded
	case dashboard.JobStatusStopped:
		return msgStopped
	case dashboard.JobStatusFailed:
		return msgFailed + jobLogs(j, started, true)
	}
	return msgPending
}

// jobLogs is what the job printed: nothing before it runs, then a line naming it, the
// outcome's logs, and a last line once it ended.
func jobLogs(j *job, started, ended bool) string {
	if !started {
		return ""
	}
	out := fmt.Sprintf("simulated Ray job %s: running %s\n", j.submissionID, j.req.Entrypoint) + j.outcome.Logs
	if ended {
		out += fmt.Sprintf("simulated Ray job %s: exited\n", j.submissionID)
	}
	return out
}

// detailsLocked is the job as GET /api/jobs/<id> answers now (Ray's JobDetails).
func (s *Server) detailsLocked(j *job, now time.Time) map[string]any {
	v := s.viewLocked(j, now)
	d := map[string]any{
		"type": "SUBMISSION", "job_id": nil, "submission_id": j.submissionID, "driver_info": nil,
		"status": v.status, "entrypoint": j.req.Entrypoint, "message": v.message, "error_type": nil,
		"start_time": j.submitted.UnixMilli(), "end_time": nil, "metadata": j.req.Metadata, "runtime_env": j.req.RuntimeEnv,
		"driver_agent_http_address": nil, "driver_node_id": nil, "driver_exit_code": nil,
	}
	if j.req.RuntimeEnv == nil {
		d["runtime_env"] = nil
	}
	if v.started {
		d["job_id"] = j.coreID
		d["driver_info"] = map[string]any{"id": j.coreID, "node_ip_address": "127.0.0.1", "pid": "4242"}
		d["driver_agent_http_address"] = "http://127.0.0.1:52365"
		d["driver_node_id"] = "simulated-head-node"
	}
	if !v.end.IsZero() {
		d["end_time"] = v.end.UnixMilli()
	}
	if v.exitCode != nil {
		d["driver_exit_code"] = *v.exitCode
	}
	if v.status == dashboard.JobStatusFailed {
		d["error_type"] = "JOB_ENTRYPOINT_COMMAND_ERROR"
	}
	return d
}

// newSubmissionID makes an id as Ray does when the request has none: raysubmit_ and 16
// random letters and digits.
func newSubmissionID() string {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "raysubmit_" + string(b)
}

// JobSubmissions returns every POST /api/jobs/ answered, oldest first.
func (s *Server) JobSubmissions() []JobPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.jobs.posts)
}

// JobSubmissionsFor returns the POSTs that named submissionID (accepted or refused).
func (s *Server) JobSubmissionsFor(submissionID string) []JobPost {
	var out []JobPost
	for _, p := range s.JobSubmissions() {
		if p.SubmissionID == submissionID {
			out = append(out, p)
		}
	}
	return out
}

// Job returns a job's details as the API shows them now (false: no such job).
func (s *Server) Job(submissionID string) (dashboard.JobInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs.jobs[submissionID]
	if !ok {
		return dashboard.JobInfo{}, false
	}
	b, _ := json.Marshal(s.detailsLocked(j, s.opts.Now()))
	var info dashboard.JobInfo
	_ = json.Unmarshal(b, &info)
	return info, true
}

// JobStatuses returns every job's status now, by submission id.
func (s *Server) JobStatuses() map[string]dashboard.JobStatus {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]dashboard.JobStatus, len(s.jobs.jobs))
	for id, j := range s.jobs.jobs {
		out[id] = s.viewLocked(j, now).status
	}
	return out
}

// SetJobOutcome scripts how the job with this submission id ends: a job submitted later
// gets it, a job already submitted changes course (its delays still count from its
// submission).
func (s *Server) SetJobOutcome(submissionID string, o JobOutcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs.outcomes == nil {
		s.jobs.outcomes = map[string]JobOutcome{}
	}
	s.jobs.outcomes[submissionID] = o
	if j, ok := s.jobs.jobs[submissionID]; ok {
		j.outcome = o
	}
}

// SetJobStatus puts a job in a status now, whatever its delays and outcome say: e.g. a
// hanging job is released with SUCCEEDED, or a running one fails. message "" is Ray's.
func (s *Server) SetJobStatus(submissionID string, status dashboard.JobStatus, message string) error {
	if _, known := dashboard.ParseJobStatus(string(status)); !known {
		return fmt.Errorf("%q is not a Ray job status", status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs.jobs[submissionID]
	if !ok {
		return fmt.Errorf("cluster %s has no job %q", s.cluster, submissionID)
	}
	j.forced, j.forcedMsg, j.forcedAt = status, message, s.opts.Now()
	return nil
}

// SetJobsFault makes the Jobs API misbehave as f says (JobsFault{}: behave again).
func (s *Server) SetJobsFault(f JobsFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs.fault = f
}

// forgetJobsLocked drops every job, as a head restart without GCS fault tolerance does
// (the record of POSTs and the scripted outcomes are kept).
func (s *Server) forgetJobsLocked() {
	s.jobs.jobs, s.jobs.order = nil, nil
}

// JobSubmissions returns every simulator's POSTs to the Jobs API, by cluster.
func (r *Registry) JobSubmissions() map[types.NamespacedName][]JobPost {
	r.mu.Lock()
	servers := maps.Clone(r.servers)
	r.mu.Unlock()
	out := map[types.NamespacedName][]JobPost{}
	for c, s := range servers {
		if posts := s.JobSubmissions(); len(posts) > 0 {
			out[c] = posts
		}
	}
	return out
}
