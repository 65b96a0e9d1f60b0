package podrunner

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/certmanager"
)

// podProc is the kubelet's work for one pod.
type podProc struct {
	r       *Runner
	name    string
	uid     types.UID
	dir     string
	logPath string

	exec   func() error // starts the container's process
	probe  readiness
	cmd    *exec.Cmd
	exited chan error
}

func (p *podProc) run(ctx context.Context) {
	if err := p.start(ctx); err != nil {
		p.r.event(p.name, "not started: %v", err)
		return
	}
	p.loop(ctx)
}

// start binds the pod, prepares its volumes and credentials, reports it Running and starts
// its first container.
func (p *podProc) start(ctx context.Context) error {
	c := p.r.o.Client
	var pod corev1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: p.r.o.Namespace, Name: p.name}, &pod); err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target: corev1.ObjectReference{Kind: "Node", Name: p.r.o.Node}}
		if err := c.SubResource("binding").Create(ctx, &pod, b); err != nil {
			return fmt.Errorf("binding: %w", err)
		}
		p.r.event(p.name, "scheduled to %s", p.r.o.Node)
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	ctr := &pod.Spec.Containers[0]
	apiIP, loopIP, err := p.r.addresses()
	if err != nil {
		return err
	}
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			dir := filepath.Join(p.dir, v.Name)
			mounts[m.MountPath] = dir
			s := &certmanager.SecretSync{Client: c, Secret: types.NamespacedName{Namespace: pod.Namespace, Name: v.Secret.SecretName}, Dir: dir, Period: p.r.o.SecretPeriod}
			go s.Run(ctx)
		}
	}
	// The kubelet starts containers only once their volumes are mounted.
	for _, dir := range mounts {
		if err := waitFor(ctx, filepath.Join(dir, "..data"), 2*time.Minute); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(p.dir, "kubeconfig")
	if err := TokenKubeconfig(ctx, c, p.r.o.Config, pod.Namespace, pod.Spec.ServiceAccountName, &pod, kubeconfig); err != nil {
		return err
	}
	env, err := hostEnv(&pod, ctr)
	if err != nil {
		return err
	}
	args := hostArgs(ctr.Args, loopIP, mounts)
	p.logPath = filepath.Join(p.r.o.LogDir, p.name+".log")
	if err := p.setStatus(ctx, func(s *corev1.PodStatus) {
		now := metav1.Now()
		s.Phase = corev1.PodRunning
		s.HostIP, s.PodIP = "", apiIP
		s.PodIPs = []corev1.PodIP{{IP: apiIP}}
		s.StartTime = &now
		s.Conditions = conditions(false, now)
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: ctr.Name, Image: ctr.Image, ImageID: ctr.Image, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	}); err != nil {
		return err
	}
	p.exec = func() error {
		log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		cmd := exec.Command(p.r.o.Binary, args...)
		cmd.Env = append(env, "KUBECONFIG="+kubeconfig)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			_ = log.Close()
			return err
		}
		p.cmd, p.exited = cmd, make(chan error, 1)
		go func() { err := cmd.Wait(); _ = log.Close(); p.exited <- err }()
		return nil
	}
	p.probe = probeFor(ctr, loopIP)
	p.r.event(p.name, "started (pod IP %s, listening on %s)", apiIP, loopIP)
	return p.exec()
}

// loop probes readiness, restarts a crashed process and handles the pod's deletion.
func (p *podProc) loop(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	ready, fails := false, 0
	nextProbe := time.Now().Add(p.probe.initialDelay)
	for {
		select {
		case <-ctx.Done():
			p.kill()
			return
		case err := <-p.exited:
			p.r.event(p.name, "process exited unexpectedly: %v; restarting", err)
			if ready {
				ready = false
				_ = p.setReady(ctx, false)
			}
			time.Sleep(time.Second)
			if err := p.exec(); err != nil {
				p.r.event(p.name, "restart failed: %v", err)
				return
			}
			continue
		case <-tick.C:
		}
		var pod corev1.Pod
		err := p.r.o.Client.Get(ctx, types.NamespacedName{Namespace: p.r.o.Namespace, Name: p.name}, &pod)
		if apierrors.IsNotFound(err) || (err == nil && pod.UID != p.uid) {
			p.kill()
			p.r.event(p.name, "removed from the API before its process stopped")
			return
		}
		if err != nil {
			continue
		}
		if pod.DeletionTimestamp != nil {
			p.terminate(ctx, &pod)
			return
		}
		if time.Now().Before(nextProbe) {
			continue
		}
		nextProbe = time.Now().Add(p.probe.period)
		ok := p.probe.check()
		if ok {
			fails = 0
		} else {
			fails++
		}
		if ok && !ready || !ok && ready && fails >= p.probe.failureThreshold {
			ready = ok
			if err := p.setReady(ctx, ready); err == nil {
				p.r.event(p.name, "ready=%v", ready)
			}
		}
	}
}

// terminate is the kubelet's graceful termination: preStop, SIGTERM, SIGKILL at the end of
// the grace period, then the pod's removal from the API.
func (p *podProc) terminate(ctx context.Context, pod *corev1.Pod) {
	grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 30))) * time.Second
	deadline := time.Now().Add(grace)
	p.r.event(p.name, "deletion seen (grace %s)", grace)
	ctr := &pod.Spec.Containers[0]
	if l := ctr.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		d := min(time.Duration(l.PreStop.Sleep.Seconds)*time.Second, grace)
		p.r.event(p.name, "preStop: sleep %s", d)
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.r.event(p.name, "SIGTERM")
	var err error
	select {
	case err = <-p.exited:
	case <-time.After(time.Until(deadline)):
		_ = p.cmd.Process.Kill()
		err = <-p.exited
		p.r.event(p.name, "SIGKILL at the end of the grace period")
	}
	p.r.event(p.name, "process exited: %v", errOrOK(err))
	_ = p.setStatus(ctx, func(s *corev1.PodStatus) {
		now := metav1.Now()
		s.Conditions = conditions(false, now)
		for i := range s.ContainerStatuses {
			s.ContainerStatuses[i].Ready = false
			s.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: now, Reason: "Completed"}}
		}
	})
	err = p.r.o.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.uid})
	p.r.event(p.name, "removed from the API: %v", errOrOK(client.IgnoreNotFound(err)))
}

// waitFor waits until path exists.
func waitFor(ctx context.Context, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("volume not projected within %s: %s", timeout, path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (p *podProc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		p.exited <- fmt.Errorf("killed: %w", <-p.exited)
	}
}

func (p *podProc) setReady(ctx context.Context, ready bool) error {
	return p.setStatus(ctx, func(s *corev1.PodStatus) {
		s.Conditions = conditions(ready, metav1.Now())
		for i := range s.ContainerStatuses {
			s.ContainerStatuses[i].Ready = ready
		}
	})
}

func (p *podProc) setStatus(ctx context.Context, mutate func(*corev1.PodStatus)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pod corev1.Pod
		if err := p.r.o.Client.Get(ctx, types.NamespacedName{Namespace: p.r.o.Namespace, Name: p.name}, &pod); err != nil {
			return err
		}
		if pod.UID != p.uid {
			return apierrors.NewNotFound(corev1.Resource("pods"), p.name)
		}
		mutate(&pod.Status)
		return p.r.o.Client.Status().Update(ctx, &pod)
	})
}

func conditions(ready bool, now metav1.Time) []corev1.PodCondition {
	r := corev1.ConditionFalse
	if ready {
		r = corev1.ConditionTrue
	}
	c := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	return []corev1.PodCondition{
		c(corev1.PodScheduled, corev1.ConditionTrue), c(corev1.PodInitialized, corev1.ConditionTrue),
		c(corev1.ContainersReady, r), c(corev1.PodReady, r),
	}
}

// readiness is a container's HTTP readiness probe against the pod's loopback address.
type readiness struct {
	url              string
	initialDelay     time.Duration
	period           time.Duration
	timeout          time.Duration
	failureThreshold int
}

func probeFor(c *corev1.Container, loopIP string) readiness {
	r := readiness{period: 10 * time.Second, timeout: time.Second, failureThreshold: 3}
	p := c.ReadinessProbe
	port, err := probePort(c, p)
	if err != nil {
		return r // no probe: ready once started (an empty URL checks nothing)
	}
	r.url = "http://" + loopIP + ":" + strconv.Itoa(int(port)) + p.HTTPGet.Path
	r.initialDelay = time.Duration(p.InitialDelaySeconds) * time.Second
	if p.PeriodSeconds > 0 {
		r.period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		r.timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.FailureThreshold > 0 {
		r.failureThreshold = int(p.FailureThreshold)
	}
	return r
}

func (r readiness) check() bool {
	if r.url == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

// TokenKubeconfig writes a kubeconfig for the API server at cfg that authenticates with a
// token of the ServiceAccount ns/sa (bound to pod when it is not nil, as a kubelet's is),
// so a process gets exactly the RBAC the install grants it.
func TokenKubeconfig(ctx context.Context, c client.Client, cfg *rest.Config, ns, sa string, pod *corev1.Pod, path string) error {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if pod != nil {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	acct := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}
	if err := c.SubResource("token").Create(ctx, acct, tr); err != nil {
		return fmt.Errorf("token of ServiceAccount %s/%s: %w", ns, sa, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: sa, Namespace: ns}
	kc.CurrentContext = "sa"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}
