package raysim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/raygate/raygate/internal/dashboard"
)

// Paths of the dashboard the Jobs API simulation serves besides /api/jobs/.
const (
	// GCSHealthPath answers "success" while the GCS is up: what KubeRay's submitter waits
	// for before it submits.
	GCSHealthPath = "/api/gcs_healthz"
	// VersionPath is where `ray job` clients check the dashboard's version first.
	VersionPath = "/api/version"
)

// isJobsAPIPath reports whether path belongs to the simulated Jobs API.
func isJobsAPIPath(path string) bool {
	return path == GCSHealthPath || path == VersionPath || path == strings.TrimSuffix(dashboard.JobsPath, "/") || strings.HasPrefix(path, dashboard.JobsPath)
}

// serveJobs serves the Jobs API (ServeHTTP has already counted, authorized and faulted the
// request, and answered 503 while the cluster is unavailable).
func (s *Server) serveJobs(w http.ResponseWriter, r *http.Request) {
	// The GCS health and version endpoints are not the job module's: a JobsFault leaves
	// them alone.
	switch r.URL.Path {
	case GCSHealthPath:
		onlyGet(w, r, func() { _, _ = io.WriteString(w, "success") })
		return
	case VersionPath:
		onlyGet(w, r, func() {
			writeJSON(w, map[string]string{"version": "4", "ray_version": "2.52.0", "ray_commit": "simulated", "session_name": "session_raysim"})
		})
		return
	}
	s.mu.Lock()
	fault := s.jobs.fault
	s.mu.Unlock()
	if fault.Delay > 0 {
		select {
		case <-time.After(fault.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if fault.Errors {
		http.Error(w, "Traceback (most recent call last):\nRuntimeError: the simulated job module is failing (raysim JobsFault.Errors)", http.StatusInternalServerError)
		return
	}
	rest := strings.TrimPrefix(r.URL.EscapedPath(), strings.TrimSuffix(dashboard.JobsPath, "/"))
	rest = strings.TrimPrefix(rest, "/")
	if rest == "" {
		switch r.Method {
		case http.MethodGet:
			s.listJobs(w)
		case http.MethodPost:
			s.submitJob(w, r, fault)
		default:
			methodNotAllowed(w, "GET, POST")
		}
		return
	}
	segs := strings.Split(rest, "/")
	id, err := url.PathUnescape(segs[0])
	if err != nil || id == "" {
		http.NotFound(w, r)
		return
	}
	switch {
	case len(segs) == 1 && r.Method == http.MethodGet:
		s.getJob(w, id)
	case len(segs) == 1 && r.Method == http.MethodDelete:
		s.deleteJob(w, id)
	case len(segs) == 2 && segs[1] == "stop" && r.Method == http.MethodPost:
		s.stopJob(w, id)
	case len(segs) == 2 && segs[1] == "logs" && r.Method == http.MethodGet:
		s.jobLogs(w, id)
	case len(segs) == 1:
		methodNotAllowed(w, "GET, DELETE")
	case len(segs) == 2 && (segs[1] == "stop" || segs[1] == "logs"):
		methodNotAllowed(w, map[string]string{"stop": "POST", "logs": "GET"}[segs[1]])
	default:
		http.NotFound(w, r)
	}
}

func onlyGet(w http.ResponseWriter, r *http.Request, answer func()) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	answer()
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// lookupLocked finds a job as Ray does: by submission id, else by core job id.
func (s *Server) lookupLocked(id string, now time.Time) *job {
	if j, ok := s.jobs.jobs[id]; ok {
		return j
	}
	for _, sid := range s.jobs.order {
		if j := s.jobs.jobs[sid]; j.coreID == id && s.viewLocked(j, now).started {
			return j
		}
	}
	return nil
}

func notFound(w http.ResponseWriter, id string) {
	http.Error(w, fmt.Sprintf("Job %s does not exist", id), http.StatusNotFound)
}

func (s *Server) getJob(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	s.mu.Lock()
	j := s.lookupLocked(id, now)
	var d map[string]any
	if j != nil {
		d = s.detailsLocked(j, now)
	}
	s.mu.Unlock()
	if j == nil {
		notFound(w, id)
		return
	}
	writeJSON(w, d)
}

func (s *Server) listJobs(w http.ResponseWriter) {
	now := s.opts.Now()
	s.mu.Lock()
	out := make([]map[string]any, 0, len(s.jobs.order))
	for _, id := range s.jobs.order {
		out = append(out, s.detailsLocked(s.jobs.jobs[id], now))
	}
	s.mu.Unlock()
	writeJSON(w, out)
}

// stopJob stops a job that has not ended: {"stopped": true}; one that ended gets false.
func (s *Server) stopJob(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	s.mu.Lock()
	j := s.lookupLocked(id, now)
	stopped := false
	if j != nil && !s.viewLocked(j, now).status.IsTerminal() {
		j.forced, j.forcedMsg, j.forcedAt = dashboard.JobStatusStopped, "", now
		stopped = true
	}
	s.mu.Unlock()
	if j == nil {
		notFound(w, id)
		return
	}
	writeJSON(w, map[string]bool{"stopped": stopped})
}

// deleteJob deletes an ended job; Ray refuses (the agent's error, wrapped in a 500) to
// delete one that has not ended.
func (s *Server) deleteJob(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	s.mu.Lock()
	j := s.lookupLocked(id, now)
	var status dashboard.JobStatus
	if j != nil {
		status = s.viewLocked(j, now).status
		if status.IsTerminal() {
			delete(s.jobs.jobs, j.submissionID)
			s.jobs.order = deleteString(s.jobs.order, j.submissionID)
		}
	}
	s.mu.Unlock()
	switch {
	case j == nil:
		notFound(w, id)
	case !status.IsTerminal():
		http.Error(w, fmt.Sprintf("Traceback (most recent call last):\nRuntimeError: Request failed with status code 400: Traceback (most recent call last):\n"+
			"RuntimeError: Attempted to delete job with submission_id %s, but it is in a non-terminal state %s. Stop the job before deleting it.", j.submissionID, status), http.StatusInternalServerError)
	default:
		writeJSON(w, map[string]bool{"deleted": true})
	}
}

func deleteString(list []string, s string) []string {
	for i, v := range list {
		if v == s {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

func (s *Server) jobLogs(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	s.mu.Lock()
	j := s.lookupLocked(id, now)
	var logs string
	if j != nil {
		v := s.viewLocked(j, now)
		logs = jobLogs(j, v.started, v.status.IsTerminal())
	}
	s.mu.Unlock()
	if j == nil {
		notFound(w, id)
		return
	}
	writeJSON(w, map[string]string{"logs": logs})
}

// submitJob creates a job as Ray's head does: the body is validated as JobSubmitRequest
// (HTTP 400 with the TypeError otherwise), a submission_id in use is refused with HTTP 500
// wrapping the agent's ValueError, and the answer names the job.
func (s *Server) submitJob(w http.ResponseWriter, r *http.Request, fault JobsFault) {
	now := s.opts.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	post := JobPost{Time: now, Body: append(json.RawMessage(nil), body...)}
	answer := func(status int, text string) {
		post.HTTPStatus = status
		s.mu.Lock()
		s.jobs.posts = append(s.jobs.posts, post)
		s.mu.Unlock()
		if status == http.StatusOK {
			writeJSON(w, map[string]string{"job_id": post.SubmissionID, "submission_id": post.SubmissionID})
			return
		}
		http.Error(w, text, status)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		answer(http.StatusInternalServerError, "Traceback (most recent call last):\njson.decoder.JSONDecodeError: the request body is not a JSON object")
		return
	}
	req, problem := parseJobSubmission(doc)
	if problem != "" {
		answer(http.StatusBadRequest, "Traceback (most recent call last):\n  File \"ray/dashboard/modules/job/utils.py\", in parse_and_validate_request\n"+problem)
		return
	}
	post.Request = req
	post.SubmissionID = req.SubmissionID
	if fault.RefuseSubmissions != 0 {
		msg := fault.RefuseMessage
		if msg == "" {
			msg = "No available agent to submit job, please try again later."
		}
		answer(fault.RefuseSubmissions, msg)
		return
	}
	if post.SubmissionID == "" {
		post.SubmissionID = newSubmissionID()
	}
	var outcome JobOutcome
	if f := s.opts.Jobs.Outcome; f != nil {
		outcome = f(s.cluster, req)
	}
	s.mu.Lock()
	if _, taken := s.jobs.jobs[post.SubmissionID]; taken {
		s.mu.Unlock()
		answer(http.StatusInternalServerError, alreadyExistsAnswer(post.SubmissionID))
		return
	}
	if o, ok := s.jobs.outcomes[post.SubmissionID]; ok {
		outcome = o
	}
	if s.jobs.jobs == nil {
		s.jobs.jobs = map[string]*job{}
	}
	s.jobs.coreIDs++
	s.jobs.jobs[post.SubmissionID] = &job{req: req, submissionID: post.SubmissionID, coreID: fmt.Sprintf("%02x000000", s.jobs.coreIDs%256), submitted: now, outcome: outcome}
	s.jobs.order = append(s.jobs.order, post.SubmissionID)
	s.mu.Unlock()
	post.Accepted = true
	if fault.LoseSubmitAnswers {
		answer(http.StatusInternalServerError, "Traceback (most recent call last):\naiohttp.client_exceptions.ServerDisconnectedError: Server disconnected (raysim JobsFault.LoseSubmitAnswers)")
		return
	}
	answer(http.StatusOK, "")
}

// alreadyExistsAnswer is the head's answer to a submission_id in use: the job agent
// refused it with HTTP 400 and the head wrapped that in a 500, both tracebacks included.
func alreadyExistsAnswer(id string) string {
	return "Traceback (most recent call last):\n" +
		"  File \"/home/ray/anaconda3/lib/python3.11/site-packages/ray/dashboard/modules/job/job_head.py\", in submit_job\n" +
		"    resp = await job_agent_client.submit_job_internal(submit_request)\n" +
		"RuntimeError: Request failed with status code 400: Traceback (most recent call last):\n" +
		"  File \"/home/ray/anaconda3/lib/python3.11/site-packages/ray/dashboard/modules/job/job_agent.py\", in submit_job\n" +
		"ValueError: Job with submission_id " + id + " already exists. Please use a different submission_id.\n."
}

// jobRequestFields are the members Ray's JobSubmitRequest takes; any other is a TypeError.
var jobRequestFields = map[string]bool{
	"entrypoint": true, "submission_id": true, "job_id": true, "runtime_env": true, "metadata": true,
	"entrypoint_num_cpus": true, "entrypoint_num_gpus": true, "entrypoint_memory": true, "entrypoint_resources": true,
	"entrypoint_label_selector": true,
}

// parseJobSubmission validates a POST body as Ray's JobSubmitRequest does and returns the
// problem as Ray's last traceback line ("" when valid).
func parseJobSubmission(doc map[string]any) (dashboard.JobSubmission, string) {
	var req dashboard.JobSubmission
	for k := range doc {
		if !jobRequestFields[k] {
			return req, fmt.Sprintf("TypeError: __init__() got an unexpected keyword argument '%s'", k)
		}
	}
	ep, ok := doc["entrypoint"]
	if !ok {
		return req, "TypeError: __init__() missing 1 required positional argument: 'entrypoint'"
	}
	if req.Entrypoint, ok = ep.(string); !ok {
		return req, fmt.Sprintf("TypeError: entrypoint must be a string, got %s", pyType(ep))
	}
	for _, key := range []string{"submission_id", "job_id"} {
		switch v := doc[key].(type) {
		case nil:
		case string:
			if req.SubmissionID == "" {
				req.SubmissionID = v
			}
		default:
			return req, fmt.Sprintf("TypeError: %s must be a string if provided, got %s", key, pyType(v))
		}
	}
	switch v := doc["runtime_env"].(type) {
	case nil:
	case map[string]any:
		req.RuntimeEnv, _ = json.Marshal(v)
	default:
		return req, fmt.Sprintf("TypeError: runtime_env must be a dict, got %s", pyType(v))
	}
	switch v := doc["metadata"].(type) {
	case nil:
	case map[string]any:
		req.Metadata = map[string]string{}
		for k, val := range v {
			s, ok := val.(string)
			if !ok {
				return req, fmt.Sprintf("TypeError: metadata values must be strings, got %s", pyType(val))
			}
			req.Metadata[k] = s
		}
	default:
		return req, fmt.Sprintf("TypeError: metadata must be a dict, got %s", pyType(v))
	}
	for _, f := range []struct {
		key string
		dst *float64
	}{{"entrypoint_num_cpus", &req.EntrypointNumCPUs}, {"entrypoint_num_gpus", &req.EntrypointNumGPUs}} {
		switch v := doc[f.key].(type) {
		case nil:
		case float64:
			if v < 0 {
				return req, fmt.Sprintf("ValueError: %s must be a non-negative number, got %v", f.key, v)
			}
			*f.dst = v
		default:
			return req, fmt.Sprintf("TypeError: %s must be a number, got %s", f.key, pyType(v))
		}
	}
	switch v := doc["entrypoint_memory"].(type) {
	case nil:
	case float64:
		if v < 0 || v != math.Trunc(v) {
			return req, fmt.Sprintf("ValueError: entrypoint_memory must be a non-negative integer, got %v", v)
		}
		req.EntrypointMemory = int64(v)
	default:
		return req, fmt.Sprintf("TypeError: entrypoint_memory must be an integer, got %s", pyType(v))
	}
	switch v := doc["entrypoint_resources"].(type) {
	case nil:
	case map[string]any:
		req.EntrypointResources = map[string]float64{}
		for k, val := range v {
			n, ok := val.(float64)
			if !ok {
				return req, fmt.Sprintf("TypeError: entrypoint_resources values must be numbers, got %s", pyType(val))
			}
			req.EntrypointResources[k] = n
		}
	default:
		return req, fmt.Sprintf("TypeError: entrypoint_resources must be a dict, got %s", pyType(v))
	}
	return req, ""
}

// pyType names a decoded JSON value's Python type as Ray's messages do.
func pyType(v any) string {
	switch v.(type) {
	case string:
		return "<class 'str'>"
	case float64:
		return "<class 'float'>"
	case bool:
		return "<class 'bool'>"
	case []any:
		return "<class 'list'>"
	case map[string]any:
		return "<class 'dict'>"
	}
	return "<class 'NoneType'>"
}
