package app

import (
	"os"
	"strings"
)

// EnvPodNamespace is set by the Helm chart and the kustomize manifests from the downward
// API (metadata.namespace).
const EnvPodNamespace = "POD_NAMESPACE"

// serviceAccountNamespaceFile is where the kubelet writes the pod's namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// operatorNamespace is the namespace raygate runs in: $POD_NAMESPACE, else the service
// account's namespace, else "" (running outside a cluster).
func operatorNamespace() string {
	if ns := strings.TrimSpace(os.Getenv(EnvPodNamespace)); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}
