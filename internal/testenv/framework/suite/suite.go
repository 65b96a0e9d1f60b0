// Package suite starts, with one call from a BeforeSuite, what an envtest suite needs: the
// control plane, the fake kubelet and raygate's manager, and stops them after the suite.
// Managers run as the Helm chart's ServiceAccount with exactly the RBAC the chart grants,
// read from config/rbac when they start, so the API server's RBAC authorizer decides every
// request they send; the tests' own clients stay admin.
//
// Importing the package registers an AfterEach and a ReportAfterEach that fail every spec
// during which a manager started here was refused a request by the API server's authorizer
// (HTTP 403), naming the request and the +kubebuilder:rbac marker that would grant it.
// Ginkgo takes nodes only while it builds the spec tree, before any BeforeSuite runs, hence
// the registration at import.
//
// It imports Ginkgo, so it lives apart from package framework, which the local mode and the
// benchmarks import.
package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
)

// Options say what a suite needs besides raygate's CRDs.
type Options struct {
	// ControlPlane: Gateway API CRDs, webhook configuration, extra API server flags.
	ControlPlane controlplane.Options
	// Kubelet, when set, runs the fake kubelet with these options.
	Kubelet *framework.KubeletOptions
	// Manager, when set, runs a raygate manager with these options once the rest runs
	// (framework.ManagerOptions are the tests' defaults). Suites whose manager needs more
	// (simulated dashboards, a gateway) start it with Suite.StartManager.
	Manager *app.Options
	// ServiceAccount the managers run as; zero: the chart's release (raygate-system/raygate).
	ServiceAccount framework.ServiceAccount
}

// Suite is what Start started.
type Suite struct {
	Env *controlplane.Env
	// Client is the control plane's admin client.
	Client client.Client
	// Kubelet is the fake kubelet (Options.Kubelet), else nil.
	Kubelet *framework.Kubelet
	// Manager is the manager Options.Manager started, else nil.
	Manager *framework.Manager
	// ServiceAccount is who the managers are to the API server.
	ServiceAccount framework.ServiceAccount

	mu       sync.Mutex
	managers []*framework.Manager
	// granted is, per ServiceAccount and control plane, the RBAC options last granted.
	granted map[grantTarget]string
	// logs are operator processes' logs to check for refusals (WatchLogs).
	logs []*framework.LogRefusals
}

// current is the suite Start started in this test binary (one per binary, as BeforeSuite).
var (
	currentMu sync.Mutex
	current   *Suite
)

// The check runs twice per spec: after its AfterEach nodes (a failure there is added to the
// spec's own, so a spec that failed because of a refusal shows the refusal too), and once
// the spec's DeferCleanup functions have run (their requests are the spec's as well).
var (
	_ = ginkgo.AfterEach(checkCurrent)
	_ = ginkgo.ReportAfterEach(func(ginkgo.SpecReport) { checkCurrent() })
)

func checkCurrent() {
	currentMu.Lock()
	s := current
	currentMu.Unlock()
	if s != nil {
		s.ExpectNoRefusals()
	}
}

// Start starts what o asks for and registers its shutdown with DeferCleanup. Call it from
// BeforeSuite.
func Start(o Options) *Suite {
	ginkgo.GinkgoHelper()
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	if o.ServiceAccount == (framework.ServiceAccount{}) {
		o.ServiceAccount = framework.ChartServiceAccount()
	}
	s := &Suite{ServiceAccount: o.ServiceAccount, granted: map[grantTarget]string{}}
	// Registered first, so it runs last: what the managers were refused until they stopped.
	ginkgo.DeferCleanup(func() {
		s.ExpectNoRefusals()
		currentMu.Lock()
		current = nil
		currentMu.Unlock()
	})
	currentMu.Lock()
	gomega.Expect(current).To(gomega.BeNil(), "suite.Start runs once per test binary")
	current = s
	currentMu.Unlock()

	var err error
	s.Env, err = controlplane.Start(o.ControlPlane)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(s.Env.Stop)
	s.Client = s.Env.Client
	if o.Kubelet != nil {
		s.Kubelet, err = framework.StartKubelet(s.Env.Config, *o.Kubelet)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ginkgo.DeferCleanup(s.Kubelet.Stop)
	}
	if o.Manager != nil {
		s.Manager = s.StartManager(*o.Manager)
		ginkgo.DeferCleanup(func() { gomega.Expect(s.Manager.Stop()).To(gomega.Succeed()) })
	}
	return s
}

// StartManager runs a raygate manager with opts as the suite's ServiceAccount, bound to the
// RBAC the chart installs with the matching values (watchNamespaces, tokenAuthentication),
// and returns once its caches are synced. The caller stops it.
func (s *Suite) StartManager(opts app.Options) *framework.Manager {
	ginkgo.GinkgoHelper()
	return s.StartManagerAs(s.ServiceAccount, framework.RBACOptionsFor(opts), opts)
}

// StartManagerAs runs a manager as sa with the chart's RBAC for rbac: a spec can start a
// throwaway manager with a rule taken away (RBACOptions.EditRules) under its own
// ServiceAccount. The manager's refusals fail the spec like any other's.
func (s *Suite) StartManagerAs(sa framework.ServiceAccount, rbac framework.RBACOptions, opts app.Options) *framework.Manager {
	ginkgo.GinkgoHelper()
	return s.startManager(s.Env, sa, rbac, opts)
}

// StartManagerIn is StartManager against another control plane a spec started (one without
// some CRDs, say).
func (s *Suite) StartManagerIn(env *controlplane.Env, opts app.Options) *framework.Manager {
	ginkgo.GinkgoHelper()
	return s.startManager(env, s.ServiceAccount, framework.RBACOptionsFor(opts), opts)
}

func (s *Suite) startManager(env *controlplane.Env, sa framework.ServiceAccount, rbac framework.RBACOptions, opts app.Options) *framework.Manager {
	ginkgo.GinkgoHelper()
	s.grant(env, sa, rbac)
	m, err := framework.StartManagerAs(env, sa.Config(env.Config), opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s.mu.Lock()
	s.managers = append(s.managers, m)
	s.mu.Unlock()
	return m
}

// grantTarget is a ServiceAccount of one control plane.
type grantTarget struct {
	env *controlplane.Env
	sa  framework.ServiceAccount
}

// grant binds sa the chart's RBAC for rbac in env (framework.GrantChartRBAC), unless the
// same was the last grant to sa there.
func (s *Suite) grant(env *controlplane.Env, sa framework.ServiceAccount, rbac framework.RBACOptions) {
	ginkgo.GinkgoHelper()
	target, key := grantTarget{env, sa}, grantKey(rbac)
	s.mu.Lock()
	same := key != "" && s.granted[target] == key
	s.mu.Unlock()
	if same {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gomega.Expect(framework.GrantChartRBAC(ctx, env.Config, sa, rbac)).To(gomega.Succeed())
	s.mu.Lock()
	s.granted[target] = key
	s.mu.Unlock()
}

// grantKey identifies a grant; "" when it cannot (edited rules are granted every time).
func grantKey(o framework.RBACOptions) string {
	if o.EditRules != nil {
		return ""
	}
	k := o.LeaderElectionNamespace + "|" + boolString(o.TokenAuthentication)
	for _, ns := range o.WatchNamespaces {
		k += "|" + ns
	}
	return k
}

func boolString(b bool) string {
	if b {
		return "token"
	}
	return "-"
}

// OperatorKubeconfig grants the suite's ServiceAccount the chart's RBAC for rbac and writes
// a kubeconfig that runs an operator process (cmd/raygate) as it. Its refusals are in the
// process's log, not here.
func (s *Suite) OperatorKubeconfig(rbac framework.RBACOptions) string {
	ginkgo.GinkgoHelper()
	s.grant(s.Env, s.ServiceAccount, rbac)
	dir, err := os.MkdirTemp("", "raygate-operator-kubeconfig-")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(os.RemoveAll, dir)
	path := filepath.Join(dir, "kubeconfig")
	gomega.Expect(s.ServiceAccount.WriteKubeconfig(s.Env.Config, path)).To(gomega.Succeed())
	// The API server says who the kubeconfig's holder is.
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	c, err := client.New(cfg, client.Options{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	review := &authenticationv1.SelfSubjectReview{}
	gomega.Expect(c.Create(context.Background(), review)).To(gomega.Succeed())
	gomega.Expect(review.Status.UserInfo.Username).To(gomega.Equal(s.ServiceAccount.User()))
	return path
}

// WatchLogs has the check after every spec read the logs in dir of operator processes
// running as the suite's ServiceAccount: a refusal they log fails the spec as a manager's
// does.
func (s *Suite) WatchLogs(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, &framework.LogRefusals{Dir: dir, ServiceAccount: s.ServiceAccount})
}

// Config is the admin's config impersonating the suite's ServiceAccount (no RBAC granted).
func (s *Suite) Config() *rest.Config { return s.ServiceAccount.Config(s.Env.Config) }

// ExpectNoRefusals fails the running node if a manager started here was refused a request
// since the last check, and forgets the refusals; it runs after every spec.
func (s *Suite) ExpectNoRefusals() {
	ginkgo.GinkgoHelper()
	s.mu.Lock()
	var report string
	for _, m := range s.managers {
		report += framework.RefusalReport(m.Who, m.Refusals.Drain())
	}
	for _, l := range s.logs {
		lines, err := l.New()
		if err != nil {
			report += fmt.Sprintf("reading the operator logs in %s: %v\n", l.Dir, err)
		}
		if len(lines) > 0 {
			report += fmt.Sprintf("the API server refused the operator process (%s), as its logs in %s say: its RBAC misses a rule the code needs.\n  %s\n",
				s.ServiceAccount, l.Dir, strings.Join(lines, "\n  "))
		}
	}
	s.mu.Unlock()
	if report == "" {
		return
	}
	if ginkgo.CurrentSpecReport().Failed() {
		// Ginkgo drops a reporting node's failure once the spec failed: say it in its output.
		ginkgo.GinkgoWriter.Print(report)
	}
	ginkgo.Fail(report)
}
