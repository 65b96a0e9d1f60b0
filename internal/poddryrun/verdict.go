package poddryrun

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
)

// kind is what a dry-run's answer means for the object.
type kind int

const (
	// admitted: the API server would create the pod.
	admitted kind = iota
	// refused: the API server refuses the pod as raygate would build it.
	refused
	// refusedByPodSecurity: Pod Security refuses it, at level.
	refusedByPodSecurity
	// quotaOnly: only a ResourceQuota refuses it (the last admission check): quotas change
	// as other pods come and go, and validation already warns about them.
	quotaOnly
	// missingServiceAccount: the template names a ServiceAccount that does not exist (yet);
	// the API server stops there, so nothing else was checked.
	missingServiceAccount
	// notChecked: the dry-run could not run or finish (time budget, a failing webhook, a
	// webhook with side effects, no right to create pods there).
	notChecked
)

// verdict is a dry-run's answer, read.
type verdict struct {
	kind kind
	// level is the Pod Security level of a refusedByPodSecurity verdict.
	level api.LevelVersion
	// afterPodSecurity: the refusal came from a check that runs after Pod Security (an
	// admission policy, a webhook, a quota), so Pod Security admitted the pod.
	afterPodSecurity bool
	// status is the API server's answer for a refusal; message its text without the pod's
	// name ("maximum cpu usage per Container is 2, but limit is 4").
	status  metav1.Status
	message string
	// timedOut: notChecked because the caller's deadline passed.
	timedOut bool
}

var (
	// What the API server puts before the reason in a pod's refusal.
	podPrefix = regexp.MustCompile(`^(?:[Pp]ods?|Pod)(?: "[^"]*")? is (?:forbidden|invalid): `)
	// Pod Security's refusal names the level it enforced: violates PodSecurity "baseline:latest": ...
	podSecurityLevel = regexp.MustCompile(`violates PodSecurity "([^"]+)"`)
	// and its warnings the level warned about: would violate PodSecurity "restricted:latest": ...
	podSecurityWarning = regexp.MustCompile(`^would violate PodSecurity "([^"]+)": `)
)

// classify reads the answer to a dry-run create. ctxErr is the caller's context error.
func classify(err, ctxErr error) verdict {
	if err == nil {
		return verdict{kind: admitted}
	}
	if ctxErr != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return verdict{kind: notChecked, timedOut: true, message: "it did not finish in time"}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return verdict{kind: notChecked, message: err.Error()}
	}
	s := status.Status()
	msg := podPrefix.ReplaceAllString(s.Message, "")
	v := verdict{status: s, message: msg}
	code := s.Code
	switch {
	case code >= http.StatusInternalServerError || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code == 0:
		v.kind = notChecked // a webhook or the API server failed: not the pod's fault
	case strings.Contains(msg, "does not support dry run"):
		v.kind = notChecked // a webhook that declares side effects
	case s.Reason == metav1.StatusReasonForbidden && strings.Contains(msg, "cannot create resource"):
		v.kind = notChecked // RBAC: raygate may not create pods here
	case s.Reason == metav1.StatusReasonNotFound || strings.Contains(msg, "because it is being terminated"):
		v.kind = notChecked // the namespace is gone or going
	case strings.Contains(msg, "exceeded quota") || strings.Contains(msg, "failed quota") ||
		strings.Contains(msg, "status unknown for quota") || strings.Contains(msg, "insufficient quota"):
		v.kind, v.afterPodSecurity = quotaOnly, true
	case strings.Contains(msg, "error looking up service account"):
		v.kind = missingServiceAccount
	case podSecurityLevel.MatchString(msg):
		lv, err := parseLevelVersion(podSecurityLevel.FindStringSubmatch(msg)[1])
		if err != nil {
			v.kind = refused
			break
		}
		v.kind, v.level = refusedByPodSecurity, lv
	default:
		v.kind = refused
		v.afterPodSecurity = strings.Contains(msg, "ValidatingAdmissionPolicy ") || strings.Contains(msg, "admission webhook ")
	}
	return v
}

// parseLevelVersion reads "baseline:latest" or "restricted:v1.30".
func parseLevelVersion(s string) (api.LevelVersion, error) {
	level, version, _ := strings.Cut(s, ":")
	l, err := api.ParseLevel(level)
	if err != nil {
		return api.LevelVersion{}, err
	}
	v, err := api.ParseVersion(version)
	if err != nil {
		return api.LevelVersion{}, err
	}
	return api.LevelVersion{Level: l, Version: v}, nil
}
