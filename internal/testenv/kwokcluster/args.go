package kwokcluster

import (
	"fmt"
	"strconv"
)

// controllerManagerArgs: every default controller except serviceaccount-token (it needs a
// signing key the envtest API server keeps to itself, and nothing here reads legacy token
// Secrets). All three kubeconfigs are the admin one; the secure port serves /healthz only.
func controllerManagerArgs(kubeconfig string, port int, certDir string, o Options) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--controllers=*,-serviceaccount-token",
		"--use-service-account-credentials=false",
	}
	if o.ControllerManagerQPS > 0 {
		args = append(args,
			"--kube-api-qps="+formatFloat(o.ControllerManagerQPS),
			"--kube-api-burst="+strconv.Itoa(int(o.ControllerManagerBurst)))
	}
	return append(args, o.ControllerManagerArgs...)
}

// schedulerConfig is a KubeSchedulerConfiguration: the --kube-api-qps/--kube-api-burst flags
// still exist in 1.36 but are deprecated, the configuration file is the supported way.
func schedulerConfig(kubeconfig string, qps float32, burst int32) []byte {
	s := "apiVersion: kubescheduler.config.k8s.io/v1\n" +
		"kind: KubeSchedulerConfiguration\n" +
		"leaderElection:\n  leaderElect: false\n" +
		"clientConnection:\n  kubeconfig: " + strconv.Quote(kubeconfig) + "\n"
	if qps > 0 {
		s += fmt.Sprintf("  qps: %s\n  burst: %d\n", formatFloat(qps), burst)
	}
	return []byte(s)
}

func schedulerArgs(kubeconfig, config string, port int, certDir string) []string {
	return []string{
		"--config=" + config,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
	}
}

// kwokArgs: kwok manages every Node (the cluster has no other kind) with the given stages.
func kwokArgs(kubeconfig, stages string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=true",
		"--config=" + stages,
	}
}

func formatFloat(f float32) string { return strconv.FormatFloat(float64(f), 'f', -1, 32) }
