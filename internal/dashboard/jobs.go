package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// JobsClient talks to the Ray Jobs REST API of one Ray cluster, the part a RayJob needs.
// Its answers are untrusted like the Serve API's: the same HTTPClient carries them, with no
// redirects, a size cap and a timeout, and every text that comes back is sanitized and cut.
type JobsClient interface {
	// SubmitJob submits a job and returns its submission id. A submission whose
	// submission_id is taken fails with an error for which IsJobAlreadyExists is true.
	SubmitJob(ctx context.Context, job JobSubmission) (submissionID string, err error)
	// GetJobInfo returns a job's details; IsJobNotFound is true of the error when the
	// cluster has no such job.
	GetJobInfo(ctx context.Context, submissionID string) (*JobInfo, error)
	// ListJobs returns the cluster's jobs (at most MaxJobs, the first ones of the answer).
	ListJobs(ctx context.Context) ([]JobInfo, error)
	// StopJob asks Ray to stop a job; stopped is false when it had already ended.
	StopJob(ctx context.Context, submissionID string) (stopped bool, err error)
	// DeleteJob deletes an ended job and its record; Ray refuses to delete a job that is
	// still PENDING or RUNNING.
	DeleteJob(ctx context.Context, submissionID string) (deleted bool, err error)
	// GetJobLogs returns the end of a job's logs.
	GetJobLogs(ctx context.Context, submissionID string) (*JobLogs, error)
}

var _ JobsClient = (*HTTPClient)(nil)

// Errors a JobsClient call can be matched against with errors.Is (the error is also an
// *Error with the status and a sanitized excerpt of the answer).
var (
	// ErrJobNotFound: the dashboard answered 404 for the job.
	ErrJobNotFound = errors.New("the Ray cluster has no such job")
	// ErrJobExists: the dashboard refused a submission because a job with its
	// submission_id exists, so that job was submitted before.
	ErrJobExists = errors.New("a Ray job with this submission_id already exists")
)

// IsJobNotFound reports whether err says the cluster has no such job.
func IsJobNotFound(err error) bool { return errors.Is(err, ErrJobNotFound) }

// IsJobAlreadyExists reports whether err says the submission_id was already used: the job
// was submitted before (by this operator, an earlier attempt, or a submitter pod).
func IsJobAlreadyExists(err error) bool { return errors.Is(err, ErrJobExists) }

// jobError is an *Error that also matches one of the sentinels above.
type jobError struct {
	err  *Error
	kind error
}

func (e *jobError) Error() string { return e.err.Error() }

func (e *jobError) Unwrap() []error { return []error{e.err, e.kind} }

// Bounds of the Jobs API answers (see also untrusted.go).
const (
	// MaxJobs is how many jobs of a list raygate keeps; the rest of the answer is not read.
	MaxJobs = 1024
	// MaxJobMetadata is how many metadata entries of a job raygate keeps.
	MaxJobMetadata = 64
	// MaxJobRuntimeEnvBytes is the largest runtime_env raygate keeps.
	MaxJobRuntimeEnvBytes = 16 << 10
	// MaxJobLogTail is how much of the end of a job's logs raygate keeps.
	MaxJobLogTail = 16 << 10
	// MaxJobLogBytes is the most raygate reads of a logs answer (Ray sends the whole log,
	// and only its end is kept): a longer answer is an error.
	MaxJobLogBytes = 32 << 20
	// maxJobID is the longest submission id raygate sends or accepts.
	maxJobID = 255
	// maxJobMessage is the longest job message kept.
	maxJobMessage = 512
	// maxEntrypoint is the longest entrypoint kept.
	maxEntrypoint = 1024
	// maxMetadataValue is the longest metadata value kept.
	maxMetadataValue = 512
)

// alreadyExistsPhrase is how Ray words the refusal of a submission_id in use, whether the
// job agent's 400 or the head's 500 that wraps it reaches us.
const alreadyExistsPhrase = "Please use a different submission_id"

// SubmitJob implements JobsClient.
func (c *HTTPClient) SubmitJob(ctx context.Context, job JobSubmission) (string, error) {
	if job.SubmissionID != "" {
		if err := ValidateJobID(job.SubmissionID); err != nil {
			return "", err
		}
	}
	if len(job.RuntimeEnv) > 0 && !isJSONObject(job.RuntimeEnv) {
		return "", errors.New("the job's runtime_env must be a JSON object")
	}
	body, err := json.Marshal(job)
	if err != nil {
		return "", fmt.Errorf("encoding the job submission: %w", err)
	}
	status, data, err := c.exchange(ctx, http.MethodPost, JobsPath, body, MaxResponseBytes)
	if err != nil {
		return "", err
	}
	if status < 200 || status > 299 {
		e := c.statusError(http.MethodPost, JobsPath, status, data)
		if (status == http.StatusBadRequest || status == http.StatusInternalServerError) && refusesSubmissionID(data, job.SubmissionID) {
			return "", &jobError{err: e, kind: ErrJobExists}
		}
		return "", e
	}
	var resp jobSubmitResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return "", fmt.Errorf("POST %s: the answer is not a job submission response (invalid JSON)", c.url(JobsPath))
	}
	got := resp.SubmissionID
	if got == "" {
		got = resp.JobID // Ray before 2.0 answered with job_id only
	}
	if job.SubmissionID != "" && got != job.SubmissionID {
		return "", fmt.Errorf("POST %s: the dashboard answered for submission id %q, not the %q submitted", c.url(JobsPath), Sanitize(got, 64), job.SubmissionID)
	}
	if err := ValidateJobID(got); err != nil {
		return "", fmt.Errorf("POST %s: the dashboard answered with an unusable submission id: %w", c.url(JobsPath), err)
	}
	return got, nil
}

// refusesSubmissionID reports whether an error answer is Ray refusing a submission_id in
// use. The whole answer (within MaxResponseBytes) is searched: Ray's text is a traceback
// with the reason at its end.
func refusesSubmissionID(body []byte, id string) bool {
	if bytes.Contains(body, []byte(alreadyExistsPhrase)) {
		return true
	}
	return id != "" && bytes.Contains(body, []byte("submission_id "+id+" already exists"))
}

// GetJobInfo implements JobsClient.
func (c *HTTPClient) GetJobInfo(ctx context.Context, submissionID string) (*JobInfo, error) {
	path, err := jobPath(submissionID, "")
	if err != nil {
		return nil, err
	}
	data, err := c.jobCall(ctx, http.MethodGet, path)
	if err != nil {
		return nil, err
	}
	var w wireJob
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("GET %s: the answer is not a job's details (invalid JSON)", c.url(path))
	}
	info := w.bound()
	// Ray finds a job by submission id or by core job id; raygate always asks by
	// submission id, so an answer about another job is a head pod lying.
	if info.SubmissionID != submissionID && info.JobID != submissionID {
		return nil, fmt.Errorf("GET %s: the dashboard answered with the details of another job (%q)", c.url(path), info.SubmissionID)
	}
	return &info, nil
}

// ListJobs implements JobsClient.
func (c *HTTPClient) ListJobs(ctx context.Context) ([]JobInfo, error) {
	data, err := c.jobCall(ctx, http.MethodGet, JobsPath)
	if err != nil {
		return nil, err
	}
	jobs, err := decodeJobList(data, MaxJobs)
	if err != nil {
		return nil, fmt.Errorf("GET %s: the answer is not a list of jobs (%s)", c.url(JobsPath), err.Error())
	}
	return jobs, nil
}

// StopJob implements JobsClient.
func (c *HTTPClient) StopJob(ctx context.Context, submissionID string) (bool, error) {
	path, err := jobPath(submissionID, "/stop")
	if err != nil {
		return false, err
	}
	data, err := c.jobCall(ctx, http.MethodPost, path)
	if err != nil {
		return false, err
	}
	var resp jobStopResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return false, fmt.Errorf("POST %s: the answer is not a stop response (invalid JSON)", c.url(path))
	}
	return resp.Stopped, nil
}

// DeleteJob implements JobsClient.
func (c *HTTPClient) DeleteJob(ctx context.Context, submissionID string) (bool, error) {
	path, err := jobPath(submissionID, "")
	if err != nil {
		return false, err
	}
	data, err := c.jobCall(ctx, http.MethodDelete, path)
	if err != nil {
		return false, err
	}
	var resp jobDeleteResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return false, fmt.Errorf("DELETE %s: the answer is not a delete response (invalid JSON)", c.url(path))
	}
	return resp.Deleted, nil
}

// GetJobLogs implements JobsClient. Ray answers with the whole log in one JSON string; it
// is read as a stream (at most MaxJobLogBytes) and only its last MaxJobLogTail bytes are
// kept, so a job that logged gigabytes costs raygate a bounded buffer and the timeout.
func (c *HTTPClient) GetJobLogs(ctx context.Context, submissionID string) (*JobLogs, error) {
	path, err := jobPath(submissionID, "/logs")
	if err != nil {
		return nil, err
	}
	resp, done, err := c.send(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	defer done()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := readAtMost(resp.Body, maxErrorRead)
		return nil, c.classify(c.statusError(http.MethodGet, path, resp.StatusCode, data))
	}
	if resp.ContentLength > MaxJobLogBytes {
		return nil, fmt.Errorf("GET %s: the answer is %d bytes, more than the %d raygate reads", c.url(path), resp.ContentLength, MaxJobLogBytes)
	}
	tail, truncated, err := readLogsTail(resp.Body, MaxJobLogBytes, MaxJobLogTail)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", c.url(path), err)
	}
	return &JobLogs{Tail: tail, Truncated: truncated}, nil
}

// maxErrorRead is how much of an error answer is read: enough for the excerpt.
const maxErrorRead = 4 << 10

// jobCall sends a request without a body about one job (or the list) and returns the 2xx
// answer; a 404 is ErrJobNotFound.
func (c *HTTPClient) jobCall(ctx context.Context, method, path string) ([]byte, error) {
	status, data, err := c.exchange(ctx, method, path, nil, MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, c.classify(c.statusError(method, path, status, data))
	}
	return data, nil
}

func (c *HTTPClient) statusError(method, path string, status int, body []byte) *Error {
	return &Error{Op: method, URL: c.url(path), StatusCode: status, Body: Sanitize(string(body), maxErrorExcerpt)}
}

// classify marks a 404 about a job as ErrJobNotFound.
func (c *HTTPClient) classify(e *Error) error {
	if e.StatusCode == http.StatusNotFound {
		return &jobError{err: e, kind: ErrJobNotFound}
	}
	return e
}

// ValidateJobID checks a submission id raygate sends in a URL or a body: non-empty, at most
// 255 bytes, printable, no slash or white space, and not "." or "..", so it always names
// exactly one path segment of the Jobs API.
func ValidateJobID(id string) error {
	switch {
	case id == "":
		return errors.New("the submission id is empty")
	case len(id) > maxJobID:
		return fmt.Errorf("the submission id is %d bytes long, more than %d", len(id), maxJobID)
	case id == "." || id == "..":
		return fmt.Errorf("the submission id %q is not a path segment", id)
	case !utf8.ValidString(id):
		return errors.New("the submission id is not valid UTF-8")
	}
	for _, r := range id {
		if r == '/' || r == '\\' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("the submission id %q holds a character raygate does not send (%q)", Sanitize(id, 64), r)
		}
	}
	return nil
}

// jobPath is the path of a job, plus suffix ("/stop", "/logs").
func jobPath(submissionID, suffix string) (string, error) {
	if err := ValidateJobID(submissionID); err != nil {
		return "", err
	}
	return JobsPath + url.PathEscape(submissionID) + suffix, nil
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// jobStatusWord is how a job error is shown in a message: the status with its unknown word.
func (j *JobInfo) jobStatusWord() string {
	if j.UnknownStatus != "" {
		return string(j.Status) + " (reported as " + strings.TrimSpace(j.UnknownStatus) + ")"
	}
	return string(j.Status)
}

// String is a one-line description of the job for logs and events, every part sanitized.
func (j *JobInfo) String() string {
	s := fmt.Sprintf("job %s: %s", j.SubmissionID, j.jobStatusWord())
	if j.Message != "" {
		s += ": " + j.Message
	}
	return s
}
