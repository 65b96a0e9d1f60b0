package plan

import (
	"strconv"
	"strings"
	"time"

	"github.com/raygate/raygate/internal/features"
)

// The operator environment variables KubeRay's RayJob controller reads, with their names,
// so a deployment written for KubeRay keeps its meaning. The operator reads them once at
// start (ParseSettings); the plan takes the values as Settings.
const (
	// EnvStatusCheckTimeout: seconds reading a running job's status may keep failing before
	// the RayJob fails (a positive integer; default 300).
	EnvStatusCheckTimeout = "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"
	// EnvTransitionGracePeriod: seconds a RayJob whose Ray job ended waits for its submitter
	// to finish (default 300; 0 or less: none, it ends at once).
	EnvTransitionGracePeriod = "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS"
	// EnvDeleteRayJobAfterFinish, "true" (any case): shutdownAfterJobFinishes deletes the
	// RayJob itself, and with it everything it owns, not only its RayCluster.
	EnvDeleteRayJobAfterFinish = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"
	defaultClusterDomain       = "cluster.local"
)

// Settings are the operator's choices the plan follows; zero values take the defaults.
type Settings struct {
	// StatusCheckTimeout: reading the job's status may fail this long before the RayJob
	// fails (JobStatusCheckTimeoutExceeded).
	StatusCheckTimeout time.Duration
	// TransitionGracePeriod: a Ray job that ended may wait this long for its submitter to
	// finish before the RayJob ends anyway (JobDeploymentStatusTransitionGracePeriodExceeded).
	// Negative: none, the RayJob ends at once (KubeRay's reading of 0 or less).
	TransitionGracePeriod time.Duration
	// SubmitterFinishedTimeout: once the submitter finished, the Ray job may take this long to
	// report a final status.
	SubmitterFinishedTimeout time.Duration
	// DeleteRayJobAfterJobFinishes: shutdownAfterJobFinishes deletes the RayJob itself (and
	// with it everything it owns), not only its RayCluster.
	DeleteRayJobAfterJobFinishes bool
	// JobStatusPoll is how often a running Ray job's status is read.
	JobStatusPoll time.Duration
	// Recheck is how soon a job waiting on something raygate does not watch looks again.
	Recheck time.Duration
	// ClusterDomain is the cluster's DNS domain, for status.dashboardURL.
	ClusterDomain string
	// BatchScheduler: a batch scheduler is configured, whose hooks run on submission and
	// clean-up.
	BatchScheduler bool
	// Gates are the feature gates (RayJobDeletionPolicy, SidecarSubmitterRestart).
	Gates features.Gates
}

// withDefaults fills the zero values.
func (s Settings) withDefaults() Settings {
	if s.StatusCheckTimeout <= 0 {
		s.StatusCheckTimeout = DefaultStatusCheckTimeout
	}
	if s.TransitionGracePeriod == 0 {
		s.TransitionGracePeriod = DefaultTransitionGracePeriod
	}
	if s.SubmitterFinishedTimeout <= 0 {
		s.SubmitterFinishedTimeout = DefaultSubmitterFinishedTimeout
	}
	if s.JobStatusPoll <= 0 {
		s.JobStatusPoll = DefaultJobStatusPoll
	}
	if s.Recheck <= 0 {
		s.Recheck = DefaultRecheck
	}
	if s.ClusterDomain == "" {
		s.ClusterDomain = defaultClusterDomain
	}
	if s.Gates == nil {
		s.Gates = features.Static{}
	}
	return s
}

// ParseSettings reads KubeRay's RayJob environment variables through getenv, as KubeRay
// reads them: a status-check timeout that is not a positive integer, and a grace period
// that is not an integer, take the defaults; DELETE_RAYJOB_CR_AFTER_JOB_FINISHES is "true"
// in any case. The operator calls it once at start (with os.Getenv); the rest of Settings
// comes from flags.
func ParseSettings(getenv func(string) string) Settings {
	var s Settings
	if n, err := strconv.Atoi(strings.TrimSpace(getenv(EnvStatusCheckTimeout))); err == nil && n > 0 {
		s.StatusCheckTimeout = seconds(n)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(getenv(EnvTransitionGracePeriod))); err == nil {
		s.TransitionGracePeriod = seconds(n)
		if n == 0 {
			// Zero means "none" here, not "the default": end at once.
			s.TransitionGracePeriod = -1
		}
	}
	s.DeleteRayJobAfterJobFinishes = strings.EqualFold(strings.TrimSpace(getenv(EnvDeleteRayJobAfterFinish)), "true")
	return s
}

// seconds converts a count of seconds to a Duration, saturating instead of overflowing.
func seconds(n int) time.Duration {
	const maxSeconds = int(1<<63-1) / int(time.Second)
	switch {
	case n > maxSeconds:
		return time.Duration(maxSeconds) * time.Second
	case n < -maxSeconds:
		return -time.Duration(maxSeconds) * time.Second
	}
	return time.Duration(n) * time.Second
}
