package raycluster

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRefusalText(t *testing.T) {
	for _, tt := range []struct{ name, err, want string }{
		{"the generated name is shown as its prefix, so a repeated refusal reads the same",
			`pods "demo-workers-worker-x7k2p" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2`,
			`pods "demo-workers-worker-" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2`},
		{"control characters and runs of space from a policy's message",
			"admission webhook \"deny.example.com\" denied the request: line one\n\tline two\x1b[31m",
			`admission webhook "deny.example.com" denied the request: line one line two [31m`},
	} {
		if got := refusalText(errors.New(tt.err), "demo-workers-worker-"); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	long := refusalText(errors.New(strings.Repeat("é", 2000)), "")
	if len(long) > maxRefusal || !utf8.ValidString(long) || !strings.HasSuffix(long, "…") {
		t.Errorf("a long refusal is cut to %d bytes of valid UTF-8 ending in …: %d bytes, valid %v", maxRefusal, len(long), utf8.ValidString(long))
	}
}

func TestEventNotesFitTheAPILimit(t *testing.T) {
	p := &pass{}
	p.warn(EventFailedCreateWorkerPod, actionCreate, "Failed: %s", strings.Repeat("x", 5000))
	if n := len(p.events[0].note); n > maxEventNote {
		t.Errorf("note of %d bytes; the API server refuses events over %d", n, maxEventNote)
	}
}
