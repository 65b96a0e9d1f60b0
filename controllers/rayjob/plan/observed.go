package plan

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Observed is what one pass read before deciding anything; the plan never changes it. Every
// object is nil when it was not found. The controller fills it from its cache and from the
// dashboard pool; a read that failed (not "not found") ends the pass before the plan runs.
type Observed struct {
	// Cluster is the RayCluster the job runs on: status.rayClusterName's (nil while no name
	// is recorded). Whether the job controls it is read from its owner references.
	Cluster *rayv1.RayCluster
	// HeadService is Cluster's head Service, whose dashboard port gives status.dashboardURL.
	HeadService *corev1.Service
	// JobService is `<job>-head-svc`, the Service KubeRay keeps pointing at the head of the
	// job's current cluster.
	JobService *corev1.Service
	// Submitter is the submitter Job (K8sJobMode), named after the RayJob.
	Submitter *batchv1.Job
	// HeadPod is Cluster's head pod (read in SidecarMode, where its submitter container
	// submits the job).
	HeadPod *corev1.Pod
	// Jobs is what the dashboard pool last heard from Cluster's Jobs API about a submission
	// id. The plan uses it only when Cluster and JobID are status.rayClusterName and
	// status.jobId: an answer about another attempt's cluster or id says nothing about this
	// one.
	Jobs JobsView
}

// JobsView is what the dashboard pool last heard from one cluster's Jobs API about one
// submission id. The pool forgets it when the head pod changes (a new head knows none of
// the old one's jobs) and when the operator restarts.
type JobsView struct {
	Cluster string
	JobID   string
	// Read is the last answer to GET /api/jobs/<id> (nil: none yet).
	Read *JobRead
	// Submission is what became of the last submission of JobID (HTTPMode; nil: none).
	Submission *SubmitAnswer
	// Stop is the answer to the last request to stop JobID (nil: none).
	Stop *StopAnswer
}

// ReadOutcome is what a read of a job's details found.
type ReadOutcome int

const (
	// ReadFound: the Jobs API returned the job's details.
	ReadFound ReadOutcome = iota
	// ReadNotFound: the Jobs API answered that it has no job with this id (HTTP 404).
	ReadNotFound
	// ReadFailed: no usable answer (no connection, a timeout, a server error, garbage).
	ReadFailed
)

func (o ReadOutcome) String() string {
	switch o {
	case ReadFound:
		return "found"
	case ReadNotFound:
		return "not found"
	case ReadFailed:
		return "failed"
	}
	return "unknown"
}

// JobRead is one answer to a read of a job's details.
type JobRead struct {
	// Sent is when the request left the pool (zero: not known; At stands for it). The answer
	// describes the job at some moment between Sent and At.
	Sent time.Time
	// At is when the answer came (the pool's clock).
	At      time.Time
	Outcome ReadOutcome
	// Info is the job's details (ReadFound).
	Info JobInfo
	// Err says why the read failed (ReadFailed); remote text, quoted only sanitized.
	Err string
}

// sentSince reports whether the read was sent at or after t, so that what it found holds
// at t or later. A read still in flight at t may describe the job as it was before t.
func (r *JobRead) sentSince(t time.Time) bool {
	sent := r.Sent
	if sent.IsZero() {
		sent = r.At
	}
	return !sent.Before(t)
}

// JobInfo is what the plan uses of a job's details (Ray's JobDetails). The text is remote:
// the plan sanitizes and bounds it again before quoting it.
type JobInfo struct {
	// Status is one of Ray's statuses; a word that is none of them is reported as PENDING
	// with the word in UnknownStatus, so an unknown word never ends a job.
	Status        rayv1.JobStatus
	UnknownStatus string
	Message       string
	// StartTimeMs and EndTimeMs are Ray's times, in milliseconds since the epoch (0: not
	// yet).
	StartTimeMs, EndTimeMs uint64
}

// SubmitOutcome is the Jobs API's answer to a submission (HTTPMode).
type SubmitOutcome int

const (
	// SubmitPending: the submission is queued or in flight.
	SubmitPending SubmitOutcome = iota
	// SubmitAccepted: the Jobs API took the job.
	SubmitAccepted
	// SubmitAlreadyExists: the Jobs API already has a job with this id: it was submitted
	// (by this operator before a restart, or by a submission whose answer was lost).
	SubmitAlreadyExists
	// SubmitRefused: the Jobs API refused the submission itself (HTTP 4xx); sent unchanged it
	// fails the same way.
	SubmitRefused
	// SubmitFailed: no answer in time, a server error: the job may or may not have arrived.
	SubmitFailed
)

func (o SubmitOutcome) String() string {
	switch o {
	case SubmitPending:
		return "pending"
	case SubmitAccepted:
		return "accepted"
	case SubmitAlreadyExists:
		return "already exists"
	case SubmitRefused:
		return "refused"
	case SubmitFailed:
		return "failed"
	}
	return "unknown"
}

// SubmitAnswer is what became of a submission.
type SubmitAnswer struct {
	// At is when it was answered (zero while pending).
	At      time.Time
	Outcome SubmitOutcome
	// Message is the answer's error (remote text).
	Message string
}

// submitted reports whether the Jobs API has the job: it took it, or had it already.
func (s *SubmitAnswer) submitted() bool {
	return s != nil && (s.Outcome == SubmitAccepted || s.Outcome == SubmitAlreadyExists)
}

// StopAnswer is the answer to a request to stop a job. Any answer will do: the stop is best
// effort (KubeRay removes its finalizer whether StopJob succeeded or not), and a dashboard
// that cannot be reached is answered by the pool as a failure within its timeout.
type StopAnswer struct {
	At time.Time
	// Err says why the stop failed ("" when the Jobs API answered).
	Err string
}
