package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/test/builders"
)

// leaseHolder is the holder of raygate's leader election Lease ("" when none).
func leaseHolder(ctx context.Context) string {
	var l coordinationv1.Lease
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: app.DefaultOptions().LeaderElectionID}, &l); err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// admissionProbe sends admission requests one after another (a server-side dry-run create
// of a valid RayCluster: both webhooks run, nothing is stored) until stop, and counts the
// answered and the refused ones. A request counts as "in flight at the kill" when it was
// sent before the killed process had exited and the balancer had closed its connections,
// and failed once the kill had begun (killing): one in flight at the dying leader can fail
// with an EOF before the balancer has closed anything, and a SIGKILLed process answers
// nothing.
type admissionProbe struct {
	ns     string
	cancel context.CancelFunc
	done   chan struct{}

	mu                 sync.Mutex
	sent, answered     int
	refused            []string
	inFlightAtKill     int
	inFlightAtKillErrs []string
	// killStart is when the kill began (killing), kill when the dead leader's connections
	// were all closed (killedAt).
	killStart, kill time.Time
}

func startAdmissionProbe(ctx context.Context, ns string) *admissionProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &admissionProbe{ns: ns, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(p.done)
		for i := 0; ctx.Err() == nil && i < 5000; i++ {
			rc := builders.RayCluster(fmt.Sprintf("probe-%d", i), ns).Obj()
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
			err := k8s.Create(rctx, rc, client.DryRunAll)
			rcancel()
			if ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.sent++
			inFlight := !p.killStart.IsZero() && (p.kill.IsZero() || sent.Before(p.kill))
			switch {
			case !unanswered(err):
				p.answered++
			case inFlight:
				p.inFlightAtKill++
				p.inFlightAtKillErrs = append(p.inFlightAtKillErrs, err.Error())
			default:
				// when it was sent and how long the answer took tell a replica that was not
				// there from one too slow for the webhook's timeout
				when := "before the kill"
				if !p.kill.IsZero() {
					when = fmt.Sprintf("%v after the kill", sent.Sub(p.kill).Round(time.Millisecond))
				}
				p.refused = append(p.refused, fmt.Sprintf("sent %s, failed after %v: %v", when, time.Since(sent).Round(time.Millisecond), err))
			}
			p.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return p
}

// unanswered reports whether an admission request got no answer from a webhook: the API
// server could not call it (failurePolicy Fail refuses the request) or gave up waiting. An
// object the webhook rejects was answered.
func unanswered(err error) bool {
	if err == nil {
		return false
	}
	return strings.Contains(err.Error(), "failed calling webhook") || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// killing marks the kill's start: requests failing from now on, until the dead leader's
// connections are all closed, were in flight at it.
func (p *admissionProbe) killing(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killStart = t
}

func (p *admissionProbe) killedAt(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kill = t
}

func (p *admissionProbe) stop() {
	p.cancel()
	<-p.done
}

func leaderSpecs() {
	ginkgo.Describe("two replicas with leader election", func() {
		const name = "fruit"

		ginkgo.It("hands over to the standby within the lease time when the leader is killed at 25%, with 0 failed requests and every admission request answered", func(ctx context.Context) {
			a := startOperator(ctx, "replica-a", leaderElection...)
			ginkgo.DeferCleanup(a.stop)
			gomega.Eventually(func() string { return leaseHolder(ctx) }, time.Minute).ShouldNot(gomega.BeEmpty())
			leader := leaseHolder(ctx)
			b := startOperator(ctx, "replica-b", leaderElection...)
			ginkgo.DeferCleanup(b.stop)
			// replica-a keeps the Lease for 2 s after replica-b started, checked while the
			// RayService starts serving.
			leads := make(chan struct{})
			go func() {
				defer ginkgo.GinkgoRecover()
				defer close(leads)
				gomega.Consistently(ctx, func() string { return leaseHolder(ctx) }, 2*time.Second).Should(gomega.Equal(leader), "replica-a, started first, leads")
			}()
			ginkgo.DeferCleanup(func() { <-leads })
			u := startUnderLoad(ctx, name, nil)
			<-leads
			green := u.upgrade(ctx)
			u.waitValue("green weight", 25)

			probe := startAdmissionProbe(ctx, u.ns)
			time.Sleep(time.Second) // the probe's connections are open and in use
			ginkgo.By("SIGKILL the leader at 25%")
			killAt := time.Now()
			probe.killing(killAt)
			a.kill()
			// Requests sent until the process had exited went to a dying leader: the kernel
			// still accepts connections on its socket between SIGKILL and the exit, which on
			// a loaded machine takes a while. So did those the API server sent, after the exit,
			// on a kept-alive connection to it that the balancer had not closed yet (an EOF,
			// as through a Service whose endpoint just died; seen once under load).
			gomega.Eventually(func() int { return webhooks.OpenTo(a.webhook) }, 10*time.Second, 10*time.Millisecond).Should(gomega.BeZero(), "the balancer closes the dead leader's connections")
			probe.killedAt(time.Now())
			gomega.Eventually(func() string { return leaseHolder(ctx) }, 30*time.Second, 20*time.Millisecond).ShouldNot(gomega.Or(gomega.Equal(leader), gomega.BeEmpty()))
			takeover := time.Since(killAt)
			time.Sleep(3 * time.Second) // admission keeps being answered after the takeover
			probe.stop()
			webhooks.Remove(a.webhook)

			u.waitDone(ctx, green)
			r := u.stop()
			first, _ := firstAfter(r.changes, killAt)
			probe.mu.Lock()
			adm := fmt.Sprintf("admission requests from the kill on: sent=%d answered=%d refused=%d (in flight at the dying leader, counted apart: %d %v)",
				probe.sent, probe.answered, len(probe.refused), probe.inFlightAtKill, probe.inFlightAtKillErrs)
			refused := append([]string(nil), probe.refused...)
			sent := probe.sent
			probe.mu.Unlock()
			entry := fmt.Sprintf("leader SIGKILLed at 25%%: the standby held the Lease %s after the kill (lease duration 8s, retry period 1s); next step %s after the kill; %s",
				takeover.Round(10*time.Millisecond), first.At.Sub(killAt).Round(10*time.Millisecond), adm)
			ginkgo.AddReportEntry(entry)
			ginkgo.GinkgoWriter.Println(entry)
			verdicts("leader SIGKILLed at 25%", r, fmt.Sprintf(" takeover=%s", takeover.Round(10*time.Millisecond)))
			sameSteps("leader SIGKILLed at 25%", r.changes, baseline.upgrade)
			gomega.Expect(takeover).To(gomega.BeNumerically("<=", 8*time.Second+time.Second+3*time.Second), "the standby takes over within the lease duration and a retry period (+3 s for a loaded machine)")
			gomega.Expect(sent).To(gomega.BeNumerically(">=", 20))
			gomega.Expect(refused).To(gomega.BeEmpty(), "admission requests refused during the handover:\n%s", strings.Join(refused, "\n"))
		})
	})
}
