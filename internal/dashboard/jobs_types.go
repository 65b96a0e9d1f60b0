package dashboard

import "encoding/json"

// JobsPath is the Ray Jobs REST API's collection: POST submits, GET lists; a job is
// JobsPath+<submission id>, with /stop and /logs under it.
const JobsPath = "/api/jobs/"

// JobStatus is a Ray job's status, Ray's JobStatus (the same words as a KubeRay RayJob's
// status.jobStatus).
type JobStatus string

// Ray's job statuses. A job starts PENDING, goes RUNNING when its entrypoint starts, and
// ends STOPPED, SUCCEEDED or FAILED.
const (
	JobStatusPending   JobStatus = "PENDING"
	JobStatusRunning   JobStatus = "RUNNING"
	JobStatusStopped   JobStatus = "STOPPED"
	JobStatusSucceeded JobStatus = "SUCCEEDED"
	JobStatusFailed    JobStatus = "FAILED"
)

// IsTerminal reports whether a job with this status has ended for good.
func (s JobStatus) IsTerminal() bool {
	return s == JobStatusStopped || s == JobStatusSucceeded || s == JobStatusFailed
}

// ParseJobStatus maps a status word from a dashboard to a JobStatus. A word that is none of
// Ray's five (a newer Ray, or a hostile head) becomes PENDING with known false: a status
// that is not terminal, so a caller keeps waiting, within its own deadlines, and never takes
// an unknown word for the end of a job (which would delete its cluster) or for a job that
// was never submitted (which would submit it again).
func ParseJobStatus(s string) (status JobStatus, known bool) {
	switch st := JobStatus(s); st {
	case JobStatusPending, JobStatusRunning, JobStatusStopped, JobStatusSucceeded, JobStatusFailed:
		return st, true
	}
	return JobStatusPending, false
}

// JobSubmission is the body of POST /api/jobs/, Ray's JobSubmitRequest (the fields a
// RayJob sets). Zero values are left out, as `ray job submit` leaves out unset options.
type JobSubmission struct {
	// Entrypoint is the shell command the job runs.
	Entrypoint string `json:"entrypoint"`
	// SubmissionID names the job; Ray refuses a second submission with the same one, which
	// is what makes a submission at most once. Empty: Ray makes one up.
	SubmissionID string `json:"submission_id,omitempty"`
	// RuntimeEnv is the runtime environment, a JSON object (a RayJob's runtimeEnvYAML
	// converted to JSON).
	RuntimeEnv json.RawMessage `json:"runtime_env,omitempty"`
	// Metadata is attached to the job as given.
	Metadata map[string]string `json:"metadata,omitempty"`
	// EntrypointNumCPUs, EntrypointNumGPUs, EntrypointMemory (bytes) and
	// EntrypointResources reserve resources for the entrypoint itself.
	EntrypointNumCPUs   float64            `json:"entrypoint_num_cpus,omitempty"`
	EntrypointNumGPUs   float64            `json:"entrypoint_num_gpus,omitempty"`
	EntrypointMemory    int64              `json:"entrypoint_memory,omitempty"`
	EntrypointResources map[string]float64 `json:"entrypoint_resources,omitempty"`
}

// JobInfo is what raygate keeps of a job's details (Ray's JobDetails, the answer of GET
// /api/jobs/<id> and the elements of the list), bounded and sanitized: every text field is
// printable and cut to a length fit for a status or an event.
type JobInfo struct {
	// Type is SUBMISSION (submitted through this API) or DRIVER (a script that called
	// ray.init itself).
	Type string `json:"type,omitempty"`
	// JobID is Ray's core job id, set once the entrypoint started.
	JobID string `json:"job_id,omitempty"`
	// SubmissionID is the id the job was submitted with.
	SubmissionID string `json:"submission_id,omitempty"`
	// Status is one of Ray's five statuses (see ParseJobStatus for anything else).
	Status JobStatus `json:"status"`
	// UnknownStatus is the word the dashboard sent when it is none of Ray's (sanitized);
	// Status is then PENDING. Empty when the status was known.
	UnknownStatus string `json:"-"`
	// Entrypoint is the command the job runs.
	Entrypoint string `json:"entrypoint,omitempty"`
	// Message says more about the status (for a failed job, Ray puts the end of its logs
	// here).
	Message string `json:"message,omitempty"`
	// ErrorType tells an internal error from a failure of the user's script.
	ErrorType string `json:"error_type,omitempty"`
	// StartTime is when the job was submitted and EndTime when it reached a terminal status,
	// in milliseconds since the Unix epoch (0: not yet).
	StartTime uint64 `json:"start_time,omitempty"`
	EndTime   uint64 `json:"end_time,omitempty"`
	// Metadata is the job's metadata (at most MaxJobMetadata entries).
	Metadata map[string]string `json:"metadata,omitempty"`
	// RuntimeEnv is the job's runtime environment as Ray reports it (nil when larger than
	// MaxJobRuntimeEnvBytes or not a JSON object).
	RuntimeEnv json.RawMessage `json:"runtime_env,omitempty"`
	// DriverExitCode is the entrypoint's exit code once it exited.
	DriverExitCode *int32 `json:"driver_exit_code,omitempty"`
}

// JobLogs is the end of a job's logs.
type JobLogs struct {
	// Tail is the last MaxJobLogTail bytes (or fewer) of the logs, valid UTF-8, with line
	// breaks and tabs kept and every other control character removed.
	Tail string
	// Truncated: the logs were longer than Tail.
	Truncated bool
}

// Ray's answers to a stop and a delete.
type jobStopResponse struct {
	Stopped bool `json:"stopped"`
}

type jobDeleteResponse struct {
	Deleted bool `json:"deleted"`
}

type jobSubmitResponse struct {
	JobID        string `json:"job_id"`
	SubmissionID string `json:"submission_id"`
}
