package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// jobCalls runs every Jobs API call once against c and returns their errors by name.
func jobCalls(c *HTTPClient) map[string]error {
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["submit"] = c.SubmitJob(ctx, JobSubmission{Entrypoint: "python x.py", SubmissionID: "j-1"})
	_, errs["get"] = c.GetJobInfo(ctx, "j-1")
	_, errs["list"] = c.ListJobs(ctx)
	_, errs["stop"] = c.StopJob(ctx, "j-1")
	_, errs["delete"] = c.DeleteJob(ctx, "j-1")
	_, errs["logs"] = c.GetJobLogs(ctx, "j-1")
	return errs
}

// A redirect is never followed by any Jobs API call: a 307 would re-send the submission,
// entrypoint and runtime_env included, wherever the head pod points.
func TestJobCallsNeverFollowRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		head := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+JobsPath, code)
		}))
		for name, err := range jobCalls(New(head.URL, &http.Client{})) {
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != code {
				t.Errorf("%s answered %d: err = %v, want an Error with that status", name, code, err)
			}
		}
		head.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests, want 0", n)
	}
}

func TestJobCallsRefuseHugeAnswers(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if chunked {
				w.(http.Flusher).Flush()
			}
			_, _ = io.WriteString(w, `{"submission_id":"j-1","status":"RUNNING","message":"`+strings.Repeat("x", MaxResponseBytes)+`"}`)
		}))
		for name, err := range jobCalls(New(srv.URL, nil)) {
			if name == "logs" {
				continue // read as a stream, see TestGetJobLogs
			}
			if err == nil || !strings.Contains(err.Error(), "raygate reads") {
				t.Errorf("chunked=%v %s: err = %v, want a size error", chunked, name, err)
			}
		}
		srv.Close()
	}
}

func TestJobCallsTimeOut(t *testing.T) {
	release := make(chan struct{})
	// A head that sends headers and then one byte a second: the timeout covers the body.
	trickle := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for {
			_, _ = io.WriteString(w, " ")
			w.(http.Flusher).Flush()
			select {
			case <-release:
				return
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	}))
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer trickle.Close()
	defer silent.Close()
	defer close(release)
	for _, url := range []string{trickle.URL, silent.URL} {
		c := New(url, nil)
		c.Timeout = 150 * time.Millisecond
		start := time.Now()
		for name, err := range jobCalls(c) {
			if err == nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: err = %v, want a deadline error", name, err)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("six calls took %v with a 150 ms timeout", d)
		}
	}
}

func TestJobCallsOnGarbage(t *testing.T) {
	garbage := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x1b[2J")
	for _, status := range []int{200, 500} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write(garbage)
		}))
		for name, err := range jobCalls(New(srv.URL, nil)) {
			if err == nil {
				t.Errorf("status %d %s: no error", status, name)
				continue
			}
			if hasRawBytes(err.Error()) {
				t.Errorf("status %d %s: the error carries raw bytes: %q", status, name, err)
			}
		}
		srv.Close()
	}
}

func TestGetJobLogs(t *testing.T) {
	big := strings.Repeat("line of the job's output\n", 400_000) // 10 MB
	cases := []struct {
		name      string
		status    int
		body      string
		want      string
		truncated bool
		notFound  bool
		errSubstr string
	}{
		{name: "short", status: 200, body: `{"logs": "hello\nworld\n"}`, want: "hello\nworld\n"},
		{name: "empty while pending", status: 200, body: `{"logs": ""}`, want: ""},
		{name: "null", status: 200, body: `{"logs": null}`, want: ""},
		{name: "other members skipped", status: 200, body: `{"a": {"b": [1, "x\"}", null, true]}, "logs": "ok", "z": -1.5e3}`, want: "ok"},
		{name: "escapes", status: 200, body: `{"logs":"caf\u00e9 \ud83d\ude00 tab\there \"q\" back\\slash \/ bell\u0007 esc\u001b[31m cr\r\n"}`, want: "café 😀 tab\there \"q\" back\\slash / bell esc[31m cr\n"},
		{name: "lone surrogate", status: 200, body: `{"logs":"a\udc00b\ud800\u0041"}`, want: "a?b?"},
		{name: "bidi and raw bytes", status: 200, body: "{\"logs\":\"x\u202ey\xffz\"}", want: "xy?z"},
		{name: "big log keeps its end", status: 200, body: `{"logs": ` + mustQuote(big+"THE END") + `}`, want: big[len(big)-(MaxJobLogTail-7):] + "THE END", truncated: true},
		{name: "not found", status: 404, body: "Job j-1 does not exist", notFound: true, errSubstr: "HTTP 404"},
		{name: "not an object", status: 200, body: `["logs"]`, errSubstr: "not the JSON expected"},
		{name: "cut short", status: 200, body: `{"logs": "abc`, errSubstr: "ends in the middle"},
		{name: "deep nesting", status: 200, body: `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"logs":"a"}`, errSubstr: "nests deeper"},
		{name: "garbage", status: 200, body: "\x00\x01", errSubstr: "not the JSON expected"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJobServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			logs, err := New(srv.URL, nil).GetJobLogs(context.Background(), "j-1")
			if srv.method != http.MethodGet || srv.path != "/api/jobs/j-1/logs" {
				t.Errorf("request %s %s", srv.method, srv.path)
			}
			if (err != nil) != (tc.errSubstr != "") || (err != nil && !strings.Contains(err.Error(), tc.errSubstr)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.errSubstr)
			}
			if IsJobNotFound(err) != tc.notFound {
				t.Errorf("IsJobNotFound = %v", IsJobNotFound(err))
			}
			if err != nil {
				return
			}
			if logs.Tail != tc.want || logs.Truncated != tc.truncated {
				t.Errorf("tail = %q (truncated %v), want %q (%v)", clip(logs.Tail), logs.Truncated, clip(tc.want), tc.truncated)
			}
			if len(logs.Tail) > MaxJobLogTail {
				t.Errorf("kept %d bytes", len(logs.Tail))
			}
		})
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:40] + "…" + s[len(s)-40:]
	}
	return s
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestReadLogsTailBounds(t *testing.T) {
	// More than maxRead bytes is an error, whatever the tail would be.
	body := `{"logs":"` + strings.Repeat("a", 1000) + `"}`
	if _, _, err := readLogsTail(strings.NewReader(body), 500, 100); err == nil || !strings.Contains(err.Error(), "longer than the 500 bytes") {
		t.Errorf("err = %v", err)
	}
	tail, truncated, err := readLogsTail(strings.NewReader(body), 2000, 100)
	if err != nil || tail != strings.Repeat("a", 100) || !truncated {
		t.Errorf("tail %d bytes, truncated %v, err %v", len(tail), truncated, err)
	}
	// A multi-byte rune cut by the start of the tail is dropped, not shown as garbage.
	body = `{"logs":"` + strings.Repeat("é", 100) + `"}`
	tail, _, err = readLogsTail(strings.NewReader(body), 2000, 51)
	if err != nil || tail != strings.Repeat("é", 25) {
		t.Errorf("tail %q, err %v", tail, err)
	}
	// A key that is not "logs", however long, is skipped without being kept.
	body = `{"` + strings.Repeat("k", 100000) + `":"v","logs":"x"}`
	if tail, _, err := readLogsTail(strings.NewReader(body), 1<<20, 10); err != nil || tail != "x" {
		t.Errorf("tail %q, err %v", tail, err)
	}
	// A logs answer streamed past MaxJobLogBytes through HTTP is refused.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, `{"logs":"`)
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range MaxJobLogBytes>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}`)
	}))
	defer srv.Close()
	c := New(srv.URL, nil)
	c.Timeout = time.Minute
	if _, err := c.GetJobLogs(context.Background(), "j-1"); err == nil || !strings.Contains(err.Error(), "raygate reads") {
		t.Errorf("err = %v", err)
	}
}

// hasRawBytes reports whether s carries bytes an answer's text must lose on its way into
// an error: NUL, escape, carriage return, or invalid UTF-8.
func hasRawBytes(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || strings.IndexByte(s, 0x1b) >= 0 || strings.IndexByte(s, '\r') >= 0 || !utf8.ValidString(s)
}
