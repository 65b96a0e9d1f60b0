package raycluster

import (
	"errors"
	"fmt"
)

// replicaFailure is a failure to create or delete pods. Its reason becomes the
// ReplicaFailure condition; any other error leaves that condition as it is.
type replicaFailure struct {
	reason string
	err    error
}

func (e *replicaFailure) Error() string { return e.err.Error() }
func (e *replicaFailure) Unwrap() error { return e.err }

func failure(reason string, format string, args ...any) error {
	return &replicaFailure{reason: reason, err: fmt.Errorf(format, args...)}
}

// replicaFailureReason is the ReplicaFailure reason of err, or "" when err is not one.
func replicaFailureReason(err error) string {
	var rf *replicaFailure
	if errors.As(err, &rf) {
		return rf.reason
	}
	return ""
}
