package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// fakeJobsAPI is a small Ray Jobs API: submissions create jobs (RUNNING), a submission of a
// known id is refused as Ray refuses it, reads find jobs, stops stop them. It records the
// requests in the order they came.
type fakeJobsAPI struct {
	mu    sync.Mutex
	jobs  map[string]string // id → status
	log   []string
	posts int
	// answer, when set, answers every request instead.
	answer http.HandlerFunc
}

func newFakeJobsAPI(t *testing.T) (*fakeJobsAPI, *httptest.Server) {
	t.Helper()
	f := &fakeJobsAPI{jobs: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeJobsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.log = append(f.log, r.Method+" "+r.URL.Path)
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		answer(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, JobsPath), "/stop")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == JobsPath:
		f.posts++
		var s JobSubmission
		_ = json.NewDecoder(r.Body).Decode(&s)
		if _, ok := f.jobs[s.SubmissionID]; ok {
			http.Error(w, "ValueError: Job with submission_id "+s.SubmissionID+" already exists. Please use a different submission_id.", http.StatusInternalServerError)
			return
		}
		f.jobs[s.SubmissionID] = "RUNNING"
		_, _ = fmt.Fprintf(w, `{"job_id":"02000000","submission_id":%q}`, s.SubmissionID)
	case r.Method == http.MethodPost:
		st, ok := f.jobs[id]
		if !ok {
			http.Error(w, "Job "+id+" does not exist", http.StatusNotFound)
			return
		}
		f.jobs[id] = "STOPPED"
		_, _ = fmt.Fprintf(w, `{"stopped":%t}`, st == "RUNNING")
	default:
		st, ok := f.jobs[id]
		if !ok {
			http.Error(w, "Job "+id+" does not exist", http.StatusNotFound)
			return
		}
		_, _ = fmt.Fprintf(w, `{"type":"SUBMISSION","submission_id":%q,"status":%q,"message":"it runs","start_time":1700000000000}`, id, st) //nolint:gosec // a test fake answering a loopback client
	}
}

func (f *fakeJobsAPI) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func jobsTarget(ns, name, url string) JobsTarget {
	c := types.NamespacedName{Namespace: ns, Name: name}
	return JobsTarget{Head: Head{Cluster: c, Pod: types.UID(name + "-head")}, URL: url, Owner: types.NamespacedName{Namespace: ns, Name: "job-" + name}}
}

func startJobsPool(t *testing.T, o JobsPoolOptions) (*JobsPool, <-chan JobsDone) {
	t.Helper()
	done := make(chan JobsDone, 1024)
	o.OnDone = func(d JobsDone) { done <- d }
	p := NewJobsPool(o)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = p.Start(ctx) }()
	t.Cleanup(cancel)
	return p, done
}

// waitJob returns the first completion of kind for cluster within limit, and how long it
// took.
func waitJob(t *testing.T, done <-chan JobsDone, cluster string, kind JobRequestKind, limit time.Duration) (JobsDone, time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := time.After(limit)
	for {
		select {
		case d := <-done:
			if d.Target.Head.Cluster.Name == cluster && d.Kind == kind {
				return d, time.Since(start)
			}
		case <-deadline:
			t.Fatalf("no %s answer for %s within %v", kind, cluster, limit)
		}
	}
}

// The answers of a healthy Jobs API, as the plan reads them: not found, submitted (pending
// from the moment it is queued), found, already exists, stopped.
func TestJobsPoolAnswers(t *testing.T) {
	api, srv := newFakeJobsAPI(t)
	p, done := startJobsPool(t, JobsPoolOptions{})
	tg := jobsTarget("ns", "c1", srv.URL)

	p.Read(tg, "id-1")
	waitJob(t, done, "c1", JobReadRequest, 5*time.Second)
	if m := p.View(tg, "id-1"); m.Read == nil || m.Read.Outcome != JobNotFound || m.Submit != nil {
		t.Fatalf("after a read of an unknown job: %+v", m)
	}

	p.Submit(tg, JobSubmission{SubmissionID: "id-1", Entrypoint: "python x.py"})
	if m := p.View(tg, "id-1"); m.Submit == nil || m.Submit.Outcome != JobSubmitPending {
		t.Fatalf("a queued submission is not pending: %+v", m.Submit)
	}
	p.Submit(tg, JobSubmission{SubmissionID: "id-1", Entrypoint: "python x.py"}) // the same, held
	waitJob(t, done, "c1", JobSubmitRequest, 5*time.Second)
	if m := p.View(tg, "id-1"); m.Submit == nil || m.Submit.Outcome != JobSubmitAccepted || m.Submit.At.IsZero() {
		t.Fatalf("after the submission: %+v", m.Submit)
	}
	p.Read(tg, "id-1")
	waitJob(t, done, "c1", JobReadRequest, 5*time.Second)
	if m := p.View(tg, "id-1"); m.Read.Outcome != JobFound || m.Read.Info.Status != JobStatusRunning || m.Read.Info.StartTime != 1700000000000 {
		t.Fatalf("after a read of the running job: %+v", m.Read)
	}

	// A second submission of the id (an answer lost, an operator restart) finds it there.
	p.Submit(tg, JobSubmission{SubmissionID: "id-1", Entrypoint: "python x.py"})
	waitJob(t, done, "c1", JobSubmitRequest, 5*time.Second)
	if m := p.View(tg, "id-1"); m.Submit.Outcome != JobSubmitAlreadyExists {
		t.Fatalf("a second submission: %+v", m.Submit)
	}
	p.Stop(tg, "id-1")
	waitJob(t, done, "c1", JobStopRequest, 5*time.Second)
	if m := p.View(tg, "id-1"); m.Stop == nil || !m.Stop.Stopped || m.Stop.Err != "" {
		t.Fatalf("after the stop: %+v", m.Stop)
	}
	if api.posts != 2 {
		t.Fatalf("%d submissions sent, want 2 (the held duplicate is not sent): %v", api.posts, api.requests())
	}
	// What the pool heard of one id says nothing of another.
	if m := p.View(tg, "id-2"); m != (JobMemory{}) {
		t.Fatalf("another id: %+v", m)
	}
}

// One cluster's requests go one at a time, in the order asked.
func TestJobsPoolKeepsTheOrderOfOneCluster(t *testing.T) {
	api, srv := newFakeJobsAPI(t)
	p, done := startJobsPool(t, JobsPoolOptions{})
	tg := jobsTarget("ns", "c1", srv.URL)
	p.Read(tg, "a")
	p.Submit(tg, JobSubmission{SubmissionID: "a", Entrypoint: "x"})
	p.Read(tg, "a")
	p.Stop(tg, "a")
	for _, k := range []JobRequestKind{JobReadRequest, JobSubmitRequest, JobReadRequest, JobStopRequest} {
		waitJob(t, done, "c1", k, 5*time.Second)
	}
	want := []string{"GET /api/jobs/a", "POST /api/jobs/", "GET /api/jobs/a", "POST /api/jobs/a/stop"}
	if got := api.requests(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if m := p.View(tg, "a"); m.Read.Outcome != JobFound || m.Read.Info.Status != JobStatusRunning {
		t.Fatalf("the second read came after the submission: %+v", m.Read)
	}
}

// A read records when it was sent, not when it was asked: one waiting behind another
// request of its cluster is sent once that one is answered. (A RayJob's deadline counts
// only reads sent after it.)
func TestJobsPoolRecordsWhenAReadWasSent(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-release
		}
		http.Error(w, "Job x does not exist", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	p, done := startJobsPool(t, JobsPoolOptions{})
	tg := jobsTarget("ns", "c1", srv.URL)
	p.Read(tg, "a") // held by the server
	for calls.Load() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	p.Read(tg, "b") // waits for a's answer
	released := time.Now()
	close(release)
	waitJob(t, done, "c1", JobReadRequest, 5*time.Second)
	waitJob(t, done, "c1", JobReadRequest, 5*time.Second)
	a, b := p.View(tg, "a").Read, p.View(tg, "b").Read
	if a == nil || b == nil {
		t.Fatalf("answers a %+v, b %+v", a, b)
	}
	if !a.Sent.Before(released) || a.At.Before(released) {
		t.Errorf("a sent %v, answered %v: want sent before the release at %v and answered after", a.Sent, a.At, released)
	}
	if b.Sent.Before(released) || b.At.Before(b.Sent) {
		t.Errorf("b sent %v, answered %v: want sent after the release at %v, answered after that", b.Sent, b.At, released)
	}
}

// A new head pod (or a restarted Ray) knows none of the old one's jobs: what the pool heard
// is forgotten, and an answer of the old head that comes late is dropped.
func TestJobsPoolForgetsWhenTheHeadChanges(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 2 {
			<-release
		}
		http.Error(w, "Job x does not exist", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	p, done := startJobsPool(t, JobsPoolOptions{})
	old := jobsTarget("ns", "c1", srv.URL)
	p.Read(old, "x")
	waitJob(t, done, "c1", JobReadRequest, 5*time.Second)
	if m := p.View(old, "x"); m.Read == nil {
		t.Fatal("no answer")
	}
	p.Read(old, "x") // held by the server
	for calls.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	restarted := old
	restarted.Head.Restarts = 1
	if m := p.View(restarted, "x"); m != (JobMemory{}) {
		t.Fatalf("a restarted head still shows %+v", m)
	}
	close(release)
	waitJob(t, done, "c1", JobReadRequest, 5*time.Second)
	if m := p.View(restarted, "x"); m != (JobMemory{}) {
		t.Fatalf("the old head's late answer was kept: %+v", m)
	}
}

// A request the pool cannot send is answered at once as failed, without a request.
func TestJobsPoolAnswersWhatItCannotSend(t *testing.T) {
	p, _ := startJobsPool(t, JobsPoolOptions{})
	tg := jobsTarget("ns", "c1", "")
	tg.Unreachable = "RayCluster c1 has no running head pod"
	p.Read(tg, "x")
	p.Submit(tg, JobSubmission{SubmissionID: "x", Entrypoint: "e"})
	p.Stop(tg, "x")
	m := p.View(tg, "x")
	if m.Read == nil || m.Read.Outcome != JobReadFailed || !strings.Contains(m.Read.Err, "no running head pod") {
		t.Errorf("read: %+v", m.Read)
	}
	if m.Submit == nil || m.Submit.Outcome != JobSubmitFailed || m.Submit.At.IsZero() {
		t.Errorf("submit: %+v", m.Submit)
	}
	if m.Stop == nil || m.Stop.Err == "" {
		t.Errorf("stop: %+v", m.Stop)
	}
	p.Reject(tg, "y", "entrypointResources is not a JSON object of numbers")
	if m := p.View(tg, "y"); m.Submit == nil || m.Submit.Outcome != JobSubmitRefused {
		t.Errorf("rejected: %+v", m.Submit)
	}
}

// Hostile or broken answers: each is recorded as a failed read or submission with a short,
// printable reason, an unknown status word never passes for an ended job, and a head that
// redirects is not followed.
func TestJobsPoolHostileAnswers(t *testing.T) {
	var followed atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Store(true) }))
	t.Cleanup(elsewhere.Close)
	huge := strings.Repeat("x", MaxResponseBytes+10)
	for _, tc := range []struct {
		name    string
		answer  http.HandlerFunc
		read    JobReadOutcome
		status  JobStatus
		unknown string
		submit  JobSubmitOutcome
	}{
		{name: "garbage", answer: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>\x00\x1b[31m") },
			read: JobReadFailed, submit: JobSubmitFailed},
		{name: "too large", answer: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"status":"`+huge+`"}`) },
			read: JobReadFailed, submit: JobSubmitFailed},
		{name: "another job's details", answer: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"submission_id":"someone-else","status":"SUCCEEDED","submission_id2":1}`)
		}, read: JobReadFailed, submit: JobSubmitFailed},
		{name: "an unknown status word", answer: func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"submission_id":"x","status":"DONE\u0007\u202e","message":"`+strings.Repeat("m", 5000)+`"}`)
		}, read: JobFound, status: JobStatusPending, unknown: "DONE", submit: JobSubmitAccepted},
		{name: "a redirect", answer: func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, elsewhere.URL, http.StatusFound) },
			read: JobReadFailed, submit: JobSubmitFailed},
		{name: "a refusal with control characters", answer: func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				http.Error(w, "nope", http.StatusInternalServerError)
				return
			}
			http.Error(w, "bad\x1b[2J request "+strings.Repeat("y", 10000), http.StatusBadRequest)
		}, read: JobReadFailed, submit: JobSubmitRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, srv := newFakeJobsAPI(t)
			api.answer = tc.answer
			p, done := startJobsPool(t, JobsPoolOptions{MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
			tg := jobsTarget("ns", "c", srv.URL)
			p.Read(tg, "x")
			waitJob(t, done, "c", JobReadRequest, 5*time.Second)
			p.Submit(tg, JobSubmission{SubmissionID: "x", Entrypoint: "e"})
			waitJob(t, done, "c", JobSubmitRequest, 5*time.Second)
			m := p.View(tg, "x")
			if m.Read.Outcome != tc.read || m.Submit.Outcome != tc.submit {
				t.Fatalf("read %+v, submit %+v", m.Read, m.Submit)
			}
			if m.Read.Outcome == JobFound && (m.Read.Info.Status != tc.status || !strings.HasPrefix(m.Read.Info.UnknownStatus, tc.unknown) || len(m.Read.Info.Message) > 1024) {
				t.Fatalf("info %+v", m.Read.Info)
			}
			for _, text := range []string{m.Read.Err, m.Submit.Message, m.Read.Info.Message, m.Read.Info.UnknownStatus} {
				if len([]rune(text)) > max(maxErrorMessage, maxJobMessage)+1 || strings.ContainsAny(text, "\x00\x1b\x07") {
					t.Errorf("unbounded or unsanitized text: %q", text)
				}
			}
			if followed.Load() {
				t.Fatal("a redirect was followed")
			}
		})
	}
}

// A namespace whose dashboards never answer holds at most PerNamespace workers: another
// namespace's job is read at once, and the hung requests end at the timeout as failed.
func TestJobsPoolSlowDashboardDoesNotDelayAnotherNamespace(t *testing.T) {
	hung, calls := hangingServer(t)
	_, ok := newFakeJobsAPI(t)
	const timeout = 2 * time.Second
	p, done := startJobsPool(t, JobsPoolOptions{Workers: 4, PerNamespace: 2, Timeout: timeout})
	for i := range 6 {
		tg := jobsTarget("attacker", fmt.Sprintf("slow-%d", i), hung.URL)
		p.Submit(tg, JobSubmission{SubmissionID: "s", Entrypoint: "e"})
		p.Read(tg, "s")
	}
	for calls.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	victim := jobsTarget("victim", "fast", ok.URL)
	p.Read(victim, "mine")
	if _, took := waitJob(t, done, "fast", JobReadRequest, timeout); took > timeout/2 {
		t.Fatalf("the victim's read took %v", took)
	}
	if m := p.View(victim, "mine"); m.Read == nil || m.Read.Outcome != JobNotFound {
		t.Fatalf("victim: %+v", m.Read)
	}
	if total, attacker := p.MaxInFlight("attacker"); attacker > 2 || total > 4 {
		t.Fatalf("in flight at most: %d in all, %d for the attacker", total, attacker)
	}
	d, _ := waitJob(t, done, "slow-0", JobSubmitRequest, 2*timeout)
	m := p.View(d.Target, "s")
	if m.Submit.Outcome != JobSubmitFailed || !strings.Contains(m.Submit.Message, "no answer within") {
		t.Fatalf("a hung submission: %+v", m.Submit)
	}
}

// A failing dashboard is asked again only after the backoff.
func TestJobsPoolBacksOffAFailingDashboard(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "GCS down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	p, done := startJobsPool(t, JobsPoolOptions{MinBackoff: 300 * time.Millisecond, MaxBackoff: time.Second})
	tg := jobsTarget("ns", "c", srv.URL)
	p.Read(tg, "x")
	waitJob(t, done, "c", JobReadRequest, 5*time.Second)
	start := time.Now()
	p.Read(tg, "x")
	waitJob(t, done, "c", JobReadRequest, 5*time.Second)
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("asked again after %v, before the backoff", took)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls", calls.Load())
	}
}
