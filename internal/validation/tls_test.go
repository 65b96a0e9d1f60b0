package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

var mtlsOn = features.Static{features.RayClusterMTLS: true}

func TestMTLS(t *testing.T) {
	tls := func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{} }
	cases := map[string]struct {
		mutate   func(*rayv1.RayCluster)
		gates    features.Gates
		want     field.ErrorList
		warnings []string
	}{
		"TLS with the gate on":  {mutate: tls, gates: mtlsOn},
		"enabled true":          {mutate: func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{Enabled: ptr.To(true)} }, gates: mtlsOn},
		"TLS with the gate off": {mutate: tls, gates: gateOff, want: field.ErrorList{field.Forbidden(p("spec.tlsOptions"), "")}},
		"enabled false, gate off": {
			mutate:   func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{Enabled: ptr.To(false)} },
			gates:    gateOff,
			warnings: []string{"spec.tlsOptions: enabled is false, so mutual TLS stays off; remove tlsOptions or set enabled to true"},
		},
		"clashes with what TLS adds to the pods": {
			mutate: func(rc *rayv1.RayCluster) {
				tls(rc)
				head := &rc.Spec.HeadGroupSpec.Template.Spec
				head.Volumes = append(head.Volumes, corev1.Volume{Name: "ray-mtls"})
				head.Containers[0].VolumeMounts = append(head.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "mine", MountPath: "/etc/ray/tls"})
				worker := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
				worker.InitContainers = append(worker.InitContainers, corev1.Container{Name: "wait-for-tls-ip-san", Image: "busybox"})
				worker.Containers[0].Env = append(worker.Containers[0].Env, corev1.EnvVar{Name: "RAY_TLS_CA_CERT", Value: "/ca.crt"})
			},
			gates: mtlsOn,
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.template.spec.volumes[0].name"), ""),
				field.Forbidden(p("spec.headGroupSpec.template.spec.containers[0].volumeMounts[0].mountPath"), ""),
				field.Forbidden(p("spec.workerGroupSpecs[0].template.spec.initContainers[0].name"), ""),
			},
			warnings: []string{"spec.workerGroupSpecs[0].template.spec.containers[0].env[0]: RAY_TLS_CA_CERT is set by raygate for spec.tlsOptions; this value is replaced"},
		},
		"a name too long for the Certificates": {
			mutate: func(rc *rayv1.RayCluster) { tls(rc); rc.Name = strings.Repeat("c", 45) },
			gates:  mtlsOn,
			want:   field.ErrorList{field.Invalid(p("spec.tlsOptions"), nil, "")},
		},
		"the longest name that fits": {mutate: func(rc *rayv1.RayCluster) { tls(rc); rc.Name = strings.Repeat("c", 44) }, gates: mtlsOn},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := RayCluster(cluster(tc.mutate), tc.gates)
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestMTLSNameMessage(t *testing.T) {
	errs, _ := RayCluster(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.TLSOptions = &rayv1.TLSOptions{}
		rc.Name = strings.Repeat("c", 50)
	}), mtlsOn)
	want := `spec.tlsOptions: Invalid value: "enabled": the cluster's Certificate "ray-ca-certificate-` + strings.Repeat("c", 50) +
		`" would be 69 characters, over the limit of 63 that cert-manager needs (it labels requests with the name); use a name of at most 44 characters`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

func TestMTLSToggle(t *testing.T) {
	plain := cluster(nil)
	withTLS := cluster(func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{} })
	disabled := cluster(func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{Enabled: ptr.To(false)} })
	cases := map[string]struct {
		old, new *rayv1.RayCluster
		want     field.ErrorList
	}{
		"turning TLS on":      {old: plain, new: withTLS, want: field.ErrorList{field.Forbidden(p("spec.tlsOptions"), "")}},
		"turning TLS off":     {old: withTLS, new: plain, want: field.ErrorList{field.Forbidden(p("spec.tlsOptions"), "")}},
		"enabled false to on": {old: disabled, new: withTLS, want: field.ErrorList{field.Forbidden(p("spec.tlsOptions"), "")}},
		"unchanged TLS, scaled": {old: withTLS, new: cluster(func(rc *rayv1.RayCluster) {
			rc.Spec.TLSOptions = &rayv1.TLSOptions{}
			rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
		})},
		"empty to enabled true (on)": {old: withTLS, new: cluster(func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{Enabled: ptr.To(true)} })},
		"off to enabled false (off)": {old: plain, new: disabled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := RayClusterUpdate(tc.old, tc.new, mtlsOn)
			diffErrors(t, tc.want, errs)
		})
	}
	// A RayService replaces its cluster when rayClusterConfig changes: no toggle rule.
	svcTLS := service(func(s *rayv1.RayService) { s.Spec.RayClusterSpec.TLSOptions = &rayv1.TLSOptions{} })
	if errs, _ := RayServiceUpdate(service(nil), svcTLS, mtlsOn); len(errs) != 0 {
		t.Errorf("turning TLS on in a RayService: %v", errs)
	}
}

func TestStoredTLSClusterWithGateOff(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.TLSOptions = &rayv1.TLSOptions{} })
	if errs := (Validator{Gates: gateOff}).StoredRayCluster(rc); len(errs) != 0 {
		t.Errorf("a stored TLS cluster must keep being served (TLS kept) with the gate off: %v", errs)
	}
}

func TestCertManagerErrors(t *testing.T) {
	tlsSpec := &rayv1.RayClusterSpec{TLSOptions: &rayv1.TLSOptions{}}
	cases := map[string]struct {
		old   *rayv1.RayClusterSpec
		state CertManagerState
		want  field.ErrorList
	}{
		"installed":                    {state: CertManagerInstalled},
		"unknown (lookup failed)":      {state: CertManagerUnknown},
		"not installed, create":        {state: CertManagerNotInstalled, want: field.ErrorList{field.Forbidden(p("spec.tlsOptions"), "")}},
		"not installed, new TLS":       {old: &rayv1.RayClusterSpec{}, state: CertManagerNotInstalled, want: field.ErrorList{field.Forbidden(p("spec.tlsOptions"), "")}},
		"not installed, TLS unchanged": {old: tlsSpec, state: CertManagerNotInstalled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, CertManagerErrors(tc.old, specPath, tc.state))
		})
	}
	svc := service(func(s *rayv1.RayService) { s.Spec.RayClusterSpec.TLSOptions = &rayv1.TLSOptions{} })
	if path, ok := TLSClusterPath(svc); !ok || path.String() != "spec.rayClusterConfig" {
		t.Errorf("RayService path %v %v", path, ok)
	}
	if _, ok := TLSClusterPath(cluster(nil)); ok {
		t.Errorf("a cluster without TLS needs no lookup")
	}
}
