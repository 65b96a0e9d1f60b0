package podrunner

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// hostArgs turns a container's args into the args of a process on this machine, which has
// one network namespace for every pod: addresses given as ":port" get the pod's own
// loopback address, the webhook server listens on it too, and paths under a mounted volume
// point at the volume's directory on disk. Everything else is passed unchanged.
func hostArgs(args []string, loopIP string, mounts map[string]string) []string {
	out := make([]string, 0, len(args)+1)
	hasWebhookPort, hasWebhookHost := false, false
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if ok {
			switch {
			case strings.HasSuffix(name, "-address") && strings.HasPrefix(val, ":"):
				val = loopIP + val
			case strings.HasPrefix(val, "/"):
				val = hostPath(val, mounts)
			}
			a = name + "=" + val
		}
		hasWebhookPort = hasWebhookPort || name == "--webhook-port"
		hasWebhookHost = hasWebhookHost || name == "--webhook-host"
		out = append(out, a)
	}
	if hasWebhookPort && !hasWebhookHost {
		out = append(out, "--webhook-host="+loopIP)
	}
	return out
}

// hostPath maps p under one of mounts (mount path → directory) to the directory.
func hostPath(p string, mounts map[string]string) string {
	for mp, dir := range mounts {
		if p == mp {
			return dir
		}
		if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(mp, "/")+"/"); ok {
			return path.Join(dir, rel)
		}
	}
	return p
}

// hostEnv resolves a container's environment as the kubelet would, for the fields the
// operator's pods use: values, the pod's namespace and name, and resource limits.
func hostEnv(pod *corev1.Pod, c *corev1.Container) ([]string, error) {
	var out []string
	for _, e := range c.Env {
		v := e.Value
		if src := e.ValueFrom; src != nil {
			switch {
			case src.FieldRef != nil:
				switch src.FieldRef.FieldPath {
				case "metadata.namespace":
					v = pod.Namespace
				case "metadata.name":
					v = pod.Name
				case "spec.serviceAccountName":
					v = pod.Spec.ServiceAccountName
				default:
					return nil, fmt.Errorf("env %s: field %s not supported by the pod runner", e.Name, src.FieldRef.FieldPath)
				}
			case src.ResourceFieldRef != nil:
				q, ok := resourceOf(c, src.ResourceFieldRef.Resource)
				if !ok {
					continue // unset: the kubelet would give the node's allocatable; leave it out
				}
				v = q.String()
				if src.ResourceFieldRef.Resource == "limits.memory" || src.ResourceFieldRef.Resource == "requests.memory" {
					v = fmt.Sprint(q.Value())
				}
			default:
				return nil, fmt.Errorf("env %s: source not supported by the pod runner", e.Name)
			}
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

func resourceOf(c *corev1.Container, ref string) (resource.Quantity, bool) {
	kind, name, _ := strings.Cut(ref, ".")
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	return q, ok
}

// probePort is the numeric port of a probe's named or numbered port.
func probePort(c *corev1.Container, p *corev1.Probe) (int32, error) {
	if p == nil || p.HTTPGet == nil {
		return 0, fmt.Errorf("only HTTP probes are supported")
	}
	if n := p.HTTPGet.Port.IntValue(); n > 0 {
		return int32(n), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.HTTPGet.Port.String() {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("probe port %q is not a port of container %s", p.HTTPGet.Port.String(), c.Name)
}
