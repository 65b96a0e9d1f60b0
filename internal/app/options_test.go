package app

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name         string
		args         []string
		wantErr      string
		wantParseErr bool
	}{
		{name: "defaults", args: nil},
		{name: "tls 1.3", args: []string{"--tls-min-version=1.3"}},
		{name: "tls 1.1 refused", args: []string{"--tls-min-version=1.1"}, wantErr: "--tls-min-version must be 1.2 or 1.3"},
		{name: "bad log format", args: []string{"--log-format=xml"}, wantErr: "--log-format must be json or console"},
		{name: "bad log level", args: []string{"--log-level=loud"}, wantErr: "--log-level must be"},
		{name: "zero concurrency", args: []string{"--reconcile-concurrency=0"}, wantErr: "--reconcile-concurrency must be at least 1"},
		{name: "no drain", args: []string{"--webhook-shutdown-drain=0"}},
		{name: "negative drain", args: []string{"--webhook-shutdown-drain=-1s"}, wantErr: "--webhook-shutdown-drain must be between 0 and 1m"},
		{name: "bad port", args: []string{"--webhook-port=70000"}, wantErr: "--webhook-port must be 1-65535"},
		{name: "dashboard template", args: []string{"--dashboard-url-template=http://127.0.0.1:9000/{namespace}/{name}"}},
		{name: "bad dashboard template", args: []string{"--dashboard-url-template=http://127.0.0.1:9000/"}, wantErr: "--dashboard-url-template must contain {name}"},
		{name: "pod limits", args: []string{"--max-pods-per-group=64", "--max-pods-per-cluster=1000"}},
		{name: "zero pods per group", args: []string{"--max-pods-per-group=0"}, wantErr: "--max-pods-per-group must be at least 1, not 0"},
		{name: "one pod per cluster", args: []string{"--max-pods-per-cluster=1"}, wantErr: "--max-pods-per-cluster must be at least 2 (the head and a worker), not 1"},
		{name: "pod limit over int32", args: []string{"--max-pods-per-group=4294967296"}, wantParseErr: true},
		{name: "admin policy", args: []string{"--allowed-gateway-classes=istio,envoy", "--allowed-service-types=ClusterIP,LoadBalancer",
			"--allowed-image-registries=docker.io,registry.example.com:5000", "--pod-security-check=warn", "--pod-security-exempt-namespaces=kube-system"}},
		{name: "any Service type", args: []string{"--allowed-service-types="}},
		{name: "ExternalName is never allowed", args: []string{"--allowed-service-types=ClusterIP,ExternalName"}, wantErr: `--allowed-service-types: "ExternalName" is not one of ClusterIP, NodePort, LoadBalancer`},
		{name: "ClusterIP must stay allowed", args: []string{"--allowed-service-types=LoadBalancer"}, wantErr: "--allowed-service-types must include ClusterIP"},
		{name: "shared Gateways", args: []string{"--allowed-shared-gateways=infra/shared,gateways/*"}},
		{name: "shared Gateway without namespace", args: []string{"--allowed-shared-gateways=shared"}, wantErr: `--allowed-shared-gateways: "shared" must be <namespace>/<name> or <namespace>/*`},
		{name: "Ingress policy", args: []string{"--allowed-ingress-classes=*/nginx,team-a/*", "--allowed-ingress-hosts=*/{namespace}.apps.example.com,team-a/*", "--allowed-ingress-annotations=nginx.ingress.kubernetes.io/rewrite-target,alb.ingress.kubernetes.io/*"}},
		{name: "Ingress class without namespace", args: []string{"--allowed-ingress-classes=nginx"}, wantErr: `--allowed-ingress-classes: "nginx" must be <namespace>/<class>`},
		{name: "Ingress host as a wildcard", args: []string{"--allowed-ingress-hosts=*/*.example.com"}, wantErr: `--allowed-ingress-hosts: "*/*.example.com": domain`},
		{name: "a snippet annotation is never copied", args: []string{"--allowed-ingress-annotations=nginx.ingress.kubernetes.io/server-snippet"}, wantErr: `--allowed-ingress-annotations: "nginx.ingress.kubernetes.io/server-snippet" is a snippet`},
		{name: "bad GatewayClass", args: []string{"--allowed-gateway-classes=Istio_1"}, wantErr: `--allowed-gateway-classes: "Istio_1"`},
		{name: "a registry is a host", args: []string{"--allowed-image-registries=docker.io/rayproject"}, wantErr: `--allowed-image-registries: "docker.io/rayproject" is not a registry host`},
		{name: "bad Pod Security check", args: []string{"--pod-security-check=audit"}, wantErr: `--pod-security-check must be enforce, warn or off, not "audit"`},
		{name: "batch scheduler", args: []string{"--batch-scheduler=scheduler-plugins"}},
		{name: "unknown batch scheduler", args: []string{"--batch-scheduler=slurm"}, wantErr: `--batch-scheduler must be one of volcano, scheduler-plugins, yunikorn, kai-scheduler or empty, not "slurm"`},
		{name: "deprecated batch scheduler flag", args: []string{"--enable-batch-scheduler"}},
		{name: "both batch scheduler flags", args: []string{"--enable-batch-scheduler", "--batch-scheduler=volcano"}, wantErr: "--enable-batch-scheduler (deprecated) and --batch-scheduler are both set"},
		{name: "fast leader election", args: []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}},
		{name: "renew deadline not below lease duration", args: []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"}, wantErr: "--leader-elect-renew-deadline (10s) must be below --leader-elect-lease-duration (10s)"},
		{name: "retry period too close to renew deadline", args: []string{"--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"}, wantErr: "--leader-elect-renew-deadline (2s) must exceed 1.2 × --leader-elect-retry-period (2s)"},
		{name: "zero lease duration", args: []string{"--leader-elect-lease-duration=0s"}, wantErr: "--leader-elect-lease-duration must be positive, not 0s"},
		{name: "negative retry period", args: []string{"--leader-elect-retry-period=-1s"}, wantErr: "--leader-elect-retry-period must be positive, not -1s"},
		{name: "all errors at once", args: []string{"--log-format=xml", "--tls-min-version=1.0"}, wantErr: "--tls-min-version must be 1.2 or 1.3, not \"1.0\"; --log-format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.BindFlags(fs)
			if err := fs.Parse(tc.args); (err != nil) != tc.wantParseErr {
				t.Fatalf("parse error = %v, want one: %v", err, tc.wantParseErr)
			} else if err != nil {
				return
			}
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	o := DefaultOptions()
	p := o.Policy()
	if len(p.AllowedServiceTypes) != 1 || p.AllowedServiceTypes[0] != corev1.ServiceTypeClusterIP {
		t.Errorf("allowed Service types by default: %v, want only ClusterIP", p.AllowedServiceTypes)
	}
	if len(p.AllowedGatewayClasses) != 0 || len(p.AllowedImageRegistries) != 0 || p.PodSecurity != "enforce" {
		t.Errorf("by default any GatewayClass and registry, Pod Security enforced: %+v", p)
	}
}

func TestTLSOptions(t *testing.T) {
	o := DefaultOptions()
	c := &tls.Config{}
	for _, f := range o.tlsOptions() {
		f(c)
	}
	if c.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion = %x, want TLS 1.2", c.MinVersion)
	}
	if len(c.NextProtos) != 1 || c.NextProtos[0] != "http/1.1" {
		t.Errorf("NextProtos = %v, want only http/1.1 (HTTP/2 off by default)", c.NextProtos)
	}
	o.EnableHTTP2 = true
	o.TLSMinVersion = "1.3"
	c = &tls.Config{}
	for _, f := range o.tlsOptions() {
		f(c)
	}
	if c.MinVersion != tls.VersionTLS13 || len(c.NextProtos) != 0 {
		t.Errorf("with --enable-http2 --tls-min-version=1.3: %x %v", c.MinVersion, c.NextProtos)
	}
}

func TestSlimPodKeepsWhatControllersRead(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"ray.io/cluster": "c"}, Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{{Name: "ray-head", Image: "ray", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}}, {Name: "autoscaler"}},
			RestartPolicy: corev1.RestartPolicyNever, NodeName: "n1",
			Volumes: []corev1.Volume{{Name: "shm"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			HostIP: "10.1.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "ray-head", Image: "ray", ImageID: "sha", ContainerID: "c1", RestartCount: 2, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "wait-gcs"}}},
	}
	out, err := slimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	want := pod.DeepCopy()
	want.ManagedFields = nil
	want.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head"}, {Name: "autoscaler"}}, RestartPolicy: corev1.RestartPolicyNever}
	want.Status.HostIP, want.Status.PodIPs, want.Status.InitContainerStatuses = "", nil, nil
	want.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "ray-head", RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("slim pod:\n got %+v\nwant %+v", got, want)
	}
	if other, _ := slimPod("not a pod"); other != "not a pod" {
		t.Fatal("non-pod objects must pass through unchanged")
	}
}

func TestBatchSchedulerName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--batch-scheduler=kai-scheduler"}, "kai-scheduler"},
		{[]string{"--enable-batch-scheduler"}, "volcano"}, // KubeRay's deprecated flag
	} {
		o := DefaultOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := o.BatchSchedulerName(); got != tc.want {
			t.Errorf("%v: BatchSchedulerName() = %q, want %q", tc.args, got, tc.want)
		}
		if got := o.Policy().BatchScheduler; got != tc.want {
			t.Errorf("%v: Policy().BatchScheduler = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// Token authentication is off unless the admin passes --token-authentication; off, the
// admission policy refuses authOptions.mode token.
func TestTokenAuthentication(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--token-authentication"}, true},
		{[]string{"--token-authentication=false"}, false},
	} {
		o := DefaultOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if o.TokenAuthentication != tc.want || o.Policy().TokenAuthenticationOff == tc.want {
			t.Errorf("%v: TokenAuthentication = %v, Policy().TokenAuthenticationOff = %v; want %v", tc.args, o.TokenAuthentication, o.Policy().TokenAuthenticationOff, tc.want)
		}
	}
}
