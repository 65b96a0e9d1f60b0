package podrunner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestHostArgs(t *testing.T) {
	mounts := map[string]string{"/etc/raygate/webhook-certs": "/tmp/p/webhook-certs"}
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{
			name: "the chart's addresses get the pod's loopback IP; the webhook listens there too",
			in:   []string{"--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443", "--webhook-port=9443", "--webhook-cert-dir=/etc/raygate/webhook-certs"},
			want: []string{"--leader-elect", "--health-probe-bind-address=127.64.0.5:8081", "--metrics-bind-address=127.64.0.5:8443", "--webhook-port=9443", "--webhook-cert-dir=/tmp/p/webhook-certs", "--webhook-host=127.64.0.5"},
		},
		{
			name: "off, explicit hosts and unmounted paths are left alone",
			in:   []string{"--metrics-bind-address=0", "--pprof-bind-address=127.0.0.1:6060", "--webhook-port=9443", "--webhook-host=127.0.0.9", "--webhook-cert-dir=/elsewhere"},
			want: []string{"--metrics-bind-address=0", "--pprof-bind-address=127.0.0.1:6060", "--webhook-port=9443", "--webhook-host=127.0.0.9", "--webhook-cert-dir=/elsewhere"},
		},
		{
			name: "a file under a mount",
			in:   []string{"--cert=/etc/raygate/webhook-certs/tls.crt", "--enable-webhooks=false"},
			want: []string{"--cert=/tmp/p/webhook-certs/tls.crt", "--enable-webhooks=false"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := hostArgs(c.in, "127.64.0.5", mounts); !slices.Equal(got, c.want) {
				t.Fatalf("hostArgs:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestHostEnv(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "raygate-system", Name: "raygate-abc"}}
	c := &corev1.Container{
		Name:      "manager",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
		Env: []corev1.EnvVar{
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "CLUSTER_DOMAIN", Value: "cluster.local"},
			{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
			{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		},
	}
	got, err := hostEnv(pod, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"POD_NAMESPACE=raygate-system", "CLUSTER_DOMAIN=cluster.local", "GOMEMLIMIT=536870912"}
	if !slices.Equal(got, want) {
		t.Fatalf("hostEnv: got %q, want %q", got, want)
	}
	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}}}
	if _, err := hostEnv(pod, c); err == nil {
		t.Fatal("an unsupported field must be an error, not an empty value")
	}
}

func TestProbePort(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "health", ContainerPort: 8081}}}
	named := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}}}
	if p, err := probePort(c, named); err != nil || p != 8081 {
		t.Fatalf("named port: %d %v", p, err)
	}
	numbered := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(9000)}}}
	if p, err := probePort(c, numbered); err != nil || p != 9000 {
		t.Fatalf("numbered port: %d %v", p, err)
	}
	missing := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("nope")}}}
	if _, err := probePort(c, missing); err == nil {
		t.Fatal("an unknown port name must be an error")
	}
}
