package raycluster

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/raygate/raygate/internal/dashboard"
)

// replicaFailure is a failure to create or delete pods. Its reason and message become the
// ReplicaFailure condition; any other error leaves that condition as it is.
type replicaFailure struct {
	reason string
	// message is what status and events show; err, with the API's error wrapped, is logged.
	message string
	err     error
}

func (e *replicaFailure) Error() string { return e.err.Error() }
func (e *replicaFailure) Unwrap() error { return e.err }

func failure(reason string, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &replicaFailure{reason: reason, message: err.Error(), err: err}
}

// refused is a failure to create pods: message is what + the refusal's text (refusalText).
func refused(reason, what string, err error, generateName string) *replicaFailure {
	return &replicaFailure{reason: reason, message: what + ": " + refusalText(err, generateName), err: fmt.Errorf("%s: %w", what, err)}
}

// replicaFailureReason is the ReplicaFailure reason of err, or "" when err is not one.
func replicaFailureReason(err error) string {
	var rf *replicaFailure
	if errors.As(err, &rf) {
		return rf.reason
	}
	return ""
}

// replicaFailureMessage is what status shows of a replicaFailure.
func replicaFailureMessage(err error) string {
	var rf *replicaFailure
	if errors.As(err, &rf) {
		return rf.message
	}
	return ""
}

// maxRefusal bounds the text of a refusal kept in the ReplicaFailure condition and its
// Warning event (whose note the API server limits to maxEventNote bytes).
const maxRefusal = 768

// generatedSuffix is the random part the API server appends to a generateName.
var generatedSuffix = regexp.MustCompile(`^[a-z0-9]{5}`)

// refusalText is how a refused pod create is shown: the text of whatever admission refused
// it (Pod Security, a ResourceQuota, a LimitRange, a webhook, a ValidatingAdmissionPolicy),
// which may quote a policy author's message, so control characters are removed and it is
// cut to maxRefusal bytes. The pod name the API server generated is shown as its prefix:
// it changes on every try, and a refusal that does not change must not rewrite the status.
func refusalText(err error, generateName string) string {
	text := err.Error()
	if generateName != "" {
		var b strings.Builder
		for {
			i := strings.Index(text, generateName)
			if i < 0 {
				b.WriteString(text)
				break
			}
			b.WriteString(text[:i+len(generateName)])
			text = text[i+len(generateName):]
			text = strings.TrimPrefix(text, generatedSuffix.FindString(text))
		}
		text = b.String()
	}
	return cutBytes(dashboard.Sanitize(text, maxRefusal), maxRefusal)
}

// cutBytes cuts s to at most limit bytes at a character boundary, marking the cut with "…".
func cutBytes(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = "…"
	cut := limit - len(mark)
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSuffix(s[:cut], mark) + mark
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
