package raysim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/raygate/raygate/internal/dashboard"
)

// SubmitterEnv is what RunSubmitter needs from the harness.
type SubmitterEnv struct {
	// Resolve returns the base URL at which the dashboard the script names (address,
	// e.g. http://rayjob-x-head-svc.ns.svc.cluster.local:8265) is reached: a simulator's.
	// An error is a dashboard nobody answers for.
	Resolve func(ctx context.Context, address string) (string, error)
	// Token is sent as Ray's CLI sends RAY_AUTH_TOKEN ("": none).
	Token dashboard.BearerToken
	// Poll is how often a wait polls the dashboard (default 200 ms; KubeRay's loop sleeps
	// 2 s, the simulation need not).
	Poll time.Duration
}

// SubmitterResult is how a simulated submitter run ended.
type SubmitterResult struct {
	// ExitCode is the script's: 0, 1 when a command failed (bash -e) or the job FAILED
	// under a `ray job submit` that waits, 2 for a command line ray refuses.
	ExitCode int
	// Output is what the script printed, bounded, for the container's termination message.
	Output string
	// SubmissionID is the job's id, and Submitted whether this run POSTed it (false: the
	// status check found the job).
	SubmissionID string
	Submitted    bool
}

// maxOutput bounds SubmitterResult.Output: a termination message holds 4 KiB.
const maxOutput = 4096

// RunSubmitter carries out a submitter script against the simulated dashboards as the
// container would: wait for the GCS, check the job, submit it unless the check found it,
// then follow it. It returns when the script would have exited, or when ctx ends (exit
// code 137, as a killed container).
func RunSubmitter(ctx context.Context, sc *SubmitterScript, env SubmitterEnv) SubmitterResult {
	r := &submitterRun{sc: sc, env: env, res: SubmitterResult{SubmissionID: sc.Job.SubmissionID}}
	if r.env.Poll <= 0 {
		r.env.Poll = 200 * time.Millisecond
	}
	r.res.ExitCode = r.run(ctx)
	r.res.Output = r.out.String()
	if len(r.res.Output) > maxOutput {
		r.res.Output = "…" + r.res.Output[len(r.res.Output)-maxOutput+len("…"):]
	}
	return r.res
}

type submitterRun struct {
	sc  *SubmitterScript
	env SubmitterEnv
	res SubmitterResult
	out strings.Builder
	c   *dashboard.HTTPClient
}

func (r *submitterRun) printf(format string, a ...any) {
	if r.out.Len() < 4*maxOutput {
		fmt.Fprintf(&r.out, format+"\n", a...)
	}
}

func (r *submitterRun) run(ctx context.Context) int {
	base, err := r.resolve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return 137
		}
		r.printf("ConnectionError: %v", err)
		return 1
	}
	r.c = dashboard.New(base, nil)
	r.c.Token = r.env.Token
	if r.sc.GCSHealthURL != "" && !r.waitGCS(ctx, base) {
		return 137
	}
	known := false
	if r.sc.CheckID != "" {
		_, err := r.c.GetJobInfo(ctx, r.sc.CheckID)
		known = err == nil
	}
	if !known {
		got, err := r.c.SubmitJob(ctx, r.sc.Job)
		if err != nil {
			r.printf("RuntimeError: %v", err)
			return exitCode(ctx, 1)
		}
		r.res.SubmissionID, r.res.Submitted = got, true
		r.printf("Job '%s' submitted successfully", got)
		if !r.sc.NoWait {
			st, ok := r.follow(ctx, got)
			if !ok {
				return exitCode(ctx, 1)
			}
			if st == dashboard.JobStatusFailed {
				return 1
			}
		}
	}
	if r.sc.FollowID != "" {
		if _, ok := r.follow(ctx, r.sc.FollowID); !ok {
			return exitCode(ctx, 1)
		}
	}
	return 0
}

// exitCode is code, or 137 when the run was stopped (the container killed).
func exitCode(ctx context.Context, code int) int {
	if ctx.Err() != nil {
		return 137
	}
	return code
}

// resolve finds the dashboard, retrying while the script waits for the GCS (the head may
// not be up yet); without that wait, the first failure is ray's connection error.
func (r *submitterRun) resolve(ctx context.Context) (string, error) {
	for {
		base, err := r.env.Resolve(ctx, r.sc.Address)
		if err == nil || r.sc.GCSHealthURL == "" {
			return base, err
		}
		if !sleep(ctx, r.env.Poll) {
			return "", ctx.Err()
		}
	}
}

// waitGCS polls the GCS health path until it answers "success", as KubeRay's until loop
// does; false when ctx ended first.
func (r *submitterRun) waitGCS(ctx context.Context, base string) bool {
	p := GCSHealthPath
	if u, err := url.Parse(r.sc.GCSHealthURL); err == nil && u.Path != "" {
		p = u.Path
	}
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/"+strings.TrimLeft(p, "/"), nil)
		if err == nil {
			if r.env.Token != "" {
				req.Header.Set("Authorization", "Bearer "+string(r.env.Token))
			}
			if resp, err := hc.Do(req); err == nil {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK && strings.Contains(string(b), "success") {
					return true
				}
			}
		}
		r.printf("Waiting for Ray Dashboard GCS to become healthy at %s ...", r.sc.Address)
		if !sleep(ctx, r.env.Poll) {
			return false
		}
	}
}

// follow waits until the job ends, as `ray job logs --follow` and a waiting `ray job
// submit` do, and returns its last status; false when the dashboard stopped answering
// for it (the log stream broke) or ctx ended.
func (r *submitterRun) follow(ctx context.Context, id string) (dashboard.JobStatus, bool) {
	for {
		info, err := r.c.GetJobInfo(ctx, id)
		if err != nil {
			r.printf("RuntimeError: following job '%s': %v", id, err)
			return "", false
		}
		if info.Status.IsTerminal() {
			switch info.Status {
			case dashboard.JobStatusSucceeded:
				r.printf("Job '%s' succeeded", id)
			case dashboard.JobStatusStopped:
				r.printf("Job '%s' was stopped", id)
			default:
				r.printf("Job '%s' failed\nStatus message: %s", id, info.Message)
			}
			return info.Status, true
		}
		if !sleep(ctx, r.env.Poll) {
			return "", false
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
