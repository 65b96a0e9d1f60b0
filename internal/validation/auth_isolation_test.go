package validation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

var netpolOn = features.Static{features.RayClusterNetworkPolicy: true}

func TestAuthOptions(t *testing.T) {
	token := func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.52.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	}
	cases := map[string]struct {
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"mode token":                  {mutate: token},
		"mode token with a Secret":    {mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.AuthOptions.SecretName = ptr.To("ray-token") }},
		"mode disabled":               {mutate: func(rc *rayv1.RayCluster) { rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled} }},
		"a newer Ray with a suffix":   {mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.RayVersion = "2.53.0rc1" }},
		"enableK8sTokenAuth false is": {mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.AuthOptions.EnableK8sTokenAuth = ptr.To(false) }},
		"no mode: open, and said so": {
			mutate:   func(rc *rayv1.RayCluster) { rc.Spec.AuthOptions = &rayv1.AuthOptions{} },
			warnings: []string{"spec.authOptions.mode is not set: authentication stays off (as under KubeRay, only mode: token turns it on); set mode: token to require a token"},
		},
		"a Secret with mode disabled": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled, SecretName: ptr.To("ray-token")}
			},
			want: field.ErrorList{field.Forbidden(p("spec.authOptions.secretName"), "")},
		},
		"an empty or invalid Secret name": {
			mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.AuthOptions.SecretName = ptr.To("Bad_Name") },
			want:   field.ErrorList{field.Invalid(p("spec.authOptions.secretName"), nil, "")},
		},
		"an empty Secret name": {
			mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.AuthOptions.SecretName = ptr.To("") },
			want:   field.ErrorList{field.Required(p("spec.authOptions.secretName"), "")},
		},
		"token without rayVersion": {
			mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.RayVersion = "" },
			want:   field.ErrorList{field.Required(p("spec.rayVersion"), "")},
		},
		"token with an old Ray": {
			mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.RayVersion = "2.51.1" },
			want:   field.ErrorList{field.Invalid(p("spec.rayVersion"), nil, "")},
		},
		"token with a rayVersion that is not one": {
			mutate: func(rc *rayv1.RayCluster) { token(rc); rc.Spec.RayVersion = "latest" },
			want:   field.ErrorList{field.Invalid(p("spec.rayVersion"), nil, "")},
		},
		"the token inline in a container or the autoscaler": {
			mutate: func(rc *rayv1.RayCluster) {
				token(rc)
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "RAY_AUTH_TOKEN", Value: "s3cret"}}
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "disabled"}}
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Env: []corev1.EnvVar{{Name: "RAY_AUTH_TOKEN", Value: "s3cret"}}}
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.template.spec.containers[0].env[1].name"), ""),
				field.Forbidden(p("spec.workerGroupSpecs[0].template.spec.containers[0].env[0].name"), ""),
				field.Forbidden(p("spec.autoscalerOptions.env[0].name"), ""),
			},
		},
		"the same env without token auth is the user's business": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "disabled"}}
		}},
	}
	k8s := func(rc *rayv1.RayCluster) {
		token(rc)
		rc.Spec.RayVersion = "2.55.0"
		rc.Spec.AuthOptions.EnableK8sTokenAuth = ptr.To(true)
	}
	rbac := "spec.authOptions.enableK8sTokenAuth: the pods' ServiceAccount needs create on tokenreviews (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io), " +
		"which raygate does not grant; bind a ClusterRole with them to it, or Ray rejects every request"
	for name, tc := range map[string]struct {
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"Kubernetes-delegated: admitted, with the RBAC the user grants": {mutate: k8s, warnings: []string{rbac}},
		"delegated without a mode": {
			mutate:   func(rc *rayv1.RayCluster) { k8s(rc); rc.Spec.AuthOptions.Mode = "" },
			want:     field.ErrorList{field.Forbidden(p("spec.authOptions.enableK8sTokenAuth"), "")},
			warnings: []string{"spec.authOptions.mode is not set: authentication stays off (as under KubeRay, only mode: token turns it on); set mode: token to require a token"},
		},
		"delegated with mode disabled": {
			mutate: func(rc *rayv1.RayCluster) { k8s(rc); rc.Spec.AuthOptions.Mode = rayv1.AuthModeDisabled },
			want:   field.ErrorList{field.Forbidden(p("spec.authOptions.enableK8sTokenAuth"), "")},
		},
		"delegated with a Secret": {
			mutate:   func(rc *rayv1.RayCluster) { k8s(rc); rc.Spec.AuthOptions.SecretName = ptr.To("team") },
			want:     field.ErrorList{field.Forbidden(p("spec.authOptions.secretName"), "")},
			warnings: []string{rbac},
		},
		"delegated with a Ray older than 2.55.0": {
			mutate:   func(rc *rayv1.RayCluster) { k8s(rc); rc.Spec.RayVersion = "2.54.1" },
			want:     field.ErrorList{field.Invalid(p("spec.rayVersion"), nil, "")},
			warnings: []string{rbac},
		},
		"delegated without rayVersion": {
			mutate:   func(rc *rayv1.RayCluster) { k8s(rc); rc.Spec.RayVersion = "" },
			want:     field.ErrorList{field.Required(p("spec.rayVersion"), "")},
			warnings: []string{rbac},
		},
		"the delegated switch in a Ray container or the autoscaler": {
			mutate: func(rc *rayv1.RayCluster) {
				k8s(rc)
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_ENABLE_K8S_TOKEN_AUTH", Value: "false"}}
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Env: []corev1.EnvVar{{Name: "RAY_AUTH_TOKEN", Value: "s3cret"}}}
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.template.spec.containers[0].env[0].name"), ""),
				field.Forbidden(p("spec.autoscalerOptions.env[0].name"), ""),
			},
			warnings: []string{rbac},
		},
		"the delegated switch with a Secret's token": {
			mutate: func(rc *rayv1.RayCluster) {
				token(rc)
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_ENABLE_K8S_TOKEN_AUTH", Value: "true"}}
			},
			want: field.ErrorList{field.Forbidden(p("spec.workerGroupSpecs[0].template.spec.containers[0].env[0].name"), "")},
		},
		"a volume or mount in the place of the ServiceAccount token": {
			mutate: func(rc *rayv1.RayCluster) {
				k8s(rc)
				head := &rc.Spec.HeadGroupSpec.Template.Spec
				head.Volumes = append(head.Volumes, corev1.Volume{Name: "ray-token"})
				head.Containers[0].VolumeMounts = append(head.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "ray-token", MountPath: "/x"})
				worker := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
				worker.Containers[0].VolumeMounts = append(worker.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "sa", MountPath: "/var/run/secrets/ray.io/serviceaccount"})
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{VolumeMounts: []corev1.VolumeMount{{Name: "ray-token", MountPath: "/y"}}}
			},
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.template.spec.volumes[0].name"), ""),
				field.Forbidden(p("spec.headGroupSpec.template.spec.containers[0].volumeMounts[0].name"), ""),
				field.Forbidden(p("spec.workerGroupSpecs[0].template.spec.containers[0].volumeMounts[0].mountPath"), ""),
				field.Forbidden(p("spec.autoscalerOptions.volumeMounts[0].name"), ""),
			},
			warnings: []string{rbac},
		},
		"a ray-token volume without the delegated mode is the user's business": {mutate: func(rc *rayv1.RayCluster) {
			token(rc)
			rc.Spec.HeadGroupSpec.Template.Spec.Volumes = append(rc.Spec.HeadGroupSpec.Template.Spec.Volumes, corev1.Volume{Name: "ray-token"})
		}},
	} {
		cases[name] = tc
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := RayCluster(cluster(tc.mutate), gateOff)
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestAuthMessages(t *testing.T) {
	errs, _ := RayCluster(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.51.1"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	}), gateOff)
	want := `spec.rayVersion: Invalid value: "2.51.1": authOptions.mode token needs Ray 2.52.0 or newer`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want %q", errs, want)
	}
	errs, _ = RayService(service(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.RayVersion = "2.55.0"
		s.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	}), gateOff)
	want = "spec.rayClusterConfig.authOptions.enableK8sTokenAuth: Forbidden: KubeRay does not support Kubernetes-delegated token authentication on a RayService; use mode: token, with the Secret raygate generates or one named in secretName"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want %q", errs, want)
	}
	errs, _ = RayCluster(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.54.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true), SecretName: ptr.To("team")}
	}), gateOff)
	wantAll := []string{
		"spec.authOptions.secretName: Forbidden: no token Secret is used when enableK8sTokenAuth is true: each pod presents its ServiceAccount token; remove secretName or enableK8sTokenAuth",
		`spec.rayVersion: Invalid value: "2.54.0": authOptions.enableK8sTokenAuth needs Ray 2.55.0 or newer`,
	}
	if got := errorStrings(errs); !slices.Equal(got, wantAll) {
		t.Errorf("got %q, want %q", got, wantAll)
	}
	errs, _ = RayCluster(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.55.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}}
	}), gateOff)
	want = "spec.headGroupSpec.template.spec.containers[0].env[0].name: Forbidden: raygate sets RAY_AUTH_MODE for the pod's ServiceAccount token when authOptions.mode is token; remove it"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want %q", errs, want)
	}
}

func TestAuthOptionsOnUpdate(t *testing.T) {
	old := cluster(nil)
	on := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.52.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	})
	errs, warnings := RayClusterUpdate(old, on, gateOff)
	diffErrors(t, nil, errs)
	diffWarnings(t, []string{"spec.authOptions changed: pods get authentication settings when they are created, so running pods keep the old ones until they are replaced (upgradeStrategy.type Recreate replaces them now)"}, warnings)

	// Turning token auth on for a stored cluster without rayVersion: the rule reads mode, so
	// the error counts although rayVersion did not change.
	unversioned := cluster(func(rc *rayv1.RayCluster) { rc.Spec.RayVersion = "" })
	noVersion := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = ""
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	})
	errs, _ = RayClusterUpdate(unversioned, noVersion, gateOff)
	diffErrors(t, field.ErrorList{field.Required(p("spec.rayVersion"), "")}, errs)

	// The RBAC warning comes when the delegated mode is turned on, not on every later change.
	k8s := func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.55.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	}
	_, warnings = RayClusterUpdate(on, cluster(k8s), gateOff)
	diffWarnings(t, []string{
		"spec.authOptions changed: pods get authentication settings when they are created, so running pods keep the old ones until they are replaced (upgradeStrategy.type Recreate replaces them now)",
		"spec.authOptions.enableK8sTokenAuth: the pods' ServiceAccount needs create on tokenreviews (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io), " +
			"which raygate does not grant; bind a ClusterRole with them to it, or Ray rejects every request",
	}, warnings)
	_, warnings = RayClusterUpdate(cluster(k8s), cluster(func(rc *rayv1.RayCluster) { k8s(rc); rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) }), gateOff)
	diffWarnings(t, nil, warnings)

	// The controller acts on a stored cluster with enableK8sTokenAuth (even one admission
	// would refuse now), but refuses a stored RayService with it: its dashboard calls would
	// need a token Secret the mode does not have.
	v := Validator{Gates: gateOff}
	diffErrors(t, nil, v.StoredRayCluster(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	})))
	diffErrors(t, field.ErrorList{field.Forbidden(p("spec.rayClusterConfig.authOptions.enableK8sTokenAuth"), "")}, v.StoredRayService(service(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	})))
}

func TestNetworkPolicy(t *testing.T) {
	ingress := []networkingv1.NetworkPolicyIngressRule{{}}
	egress := []networkingv1.NetworkPolicyEgressRule{{}}
	np := func(mode rayv1.NetworkPolicyMode, mutate func(*rayv1.NetworkPolicyConfig)) func(*rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			rc.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{Mode: ptr.To(mode)}
			if mutate != nil {
				mutate(rc.Spec.NetworkPolicy)
			}
		}
	}
	group := rayv1.WorkerGroupNetworkPolicyRules{GroupName: "workers"}
	cases := map[string]struct {
		mutate func(*rayv1.RayCluster)
		gates  features.Gates
		want   field.ErrorList
	}{
		"DenyAll with every kind of rule": {mutate: np(rayv1.NetworkPolicyDenyAll, func(c *rayv1.NetworkPolicyConfig) {
			c.Head = &rayv1.NetworkPolicyRules{IngressRules: ingress, EgressRules: egress}
			c.Worker = &rayv1.NetworkPolicyRules{IngressRules: ingress, EgressRules: egress}
			c.WorkerGroups = []rayv1.WorkerGroupNetworkPolicyRules{group}
		})},
		"no mode means DenyAll": {mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{Head: &rayv1.NetworkPolicyRules{IngressRules: ingress, EgressRules: egress}}
		}},
		"the gate is off": {
			mutate: np(rayv1.NetworkPolicyDenyAll, nil),
			gates:  gateOff,
			want:   field.ErrorList{field.Forbidden(p("spec.networkPolicy"), "")},
		},
		"ingress rules that DenyAllEgress ignores": {
			mutate: np(rayv1.NetworkPolicyDenyAllEgress, func(c *rayv1.NetworkPolicyConfig) {
				c.Head = &rayv1.NetworkPolicyRules{IngressRules: ingress, EgressRules: egress}
				c.WorkerGroups = []rayv1.WorkerGroupNetworkPolicyRules{{GroupName: "workers", NetworkPolicyRules: rayv1.NetworkPolicyRules{IngressRules: ingress}}}
			}),
			want: field.ErrorList{
				field.Forbidden(p("spec.networkPolicy.head.ingressRules"), ""),
				field.Forbidden(p("spec.networkPolicy.workerGroups[0].ingressRules"), ""),
			},
		},
		"egress rules that DenyAllIngress ignores": {
			mutate: np(rayv1.NetworkPolicyDenyAllIngress, func(c *rayv1.NetworkPolicyConfig) {
				c.Worker = &rayv1.NetworkPolicyRules{IngressRules: ingress, EgressRules: egress}
			}),
			want: field.ErrorList{field.Forbidden(p("spec.networkPolicy.worker.egressRules"), "")},
		},
		"rules for a group that does not exist, twice": {
			mutate: np(rayv1.NetworkPolicyDenyAll, func(c *rayv1.NetworkPolicyConfig) {
				c.WorkerGroups = []rayv1.WorkerGroupNetworkPolicyRules{{GroupName: "gpu"}, group, group}
			}),
			want: field.ErrorList{
				field.Invalid(p("spec.networkPolicy.workerGroups[0].groupName"), nil, ""),
				field.Duplicate(p("spec.networkPolicy.workerGroups[2].groupName"), nil),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = netpolOn
			}
			errs, _ := RayCluster(cluster(tc.mutate), gates)
			diffErrors(t, tc.want, errs)
		})
	}
	// A stored cluster keeps its NetworkPolicies when the gate is turned off: removing them
	// would open the cluster.
	stored := Validator{Gates: gateOff}.StoredRayCluster(cluster(np(rayv1.NetworkPolicyDenyAll, nil)))
	diffErrors(t, nil, stored)
}

func TestNetworkPolicyDNSWarnings(t *testing.T) {
	port := func(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }
	dns := []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: port(53)}}}}
	https := []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: port(443)}}}}
	anything := []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}}}
	portRange := []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: port(1), EndPort: ptr.To[int32](1024)}}}}
	warn := func(mode, who string) string {
		return "spec.networkPolicy: mode " + mode + " restricts egress and no egress rule of " + who +
			" allows DNS (port 53): the pods cannot resolve the head Service's name, so workers will not start; add a rule such as ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]"
	}
	cases := map[string]struct {
		np   *rayv1.NetworkPolicyConfig
		want []string
	}{
		"DenyAll without rules": {np: &rayv1.NetworkPolicyConfig{}, want: []string{warn("DenyAll", "the head"), warn("DenyAll", "worker group workers")}},
		"DNS for the head, HTTPS only for workers": {
			np:   &rayv1.NetworkPolicyConfig{Head: &rayv1.NetworkPolicyRules{EgressRules: dns}, Worker: &rayv1.NetworkPolicyRules{EgressRules: https}},
			want: []string{warn("DenyAll", "worker group workers")},
		},
		"all ports to a range, or a port range with 53": {np: &rayv1.NetworkPolicyConfig{
			Mode: ptr.To(rayv1.NetworkPolicyDenyAllEgress),
			Head: &rayv1.NetworkPolicyRules{EgressRules: anything}, Worker: &rayv1.NetworkPolicyRules{EgressRules: portRange}}},
		"a group's own rules replace worker's": {
			np: &rayv1.NetworkPolicyConfig{Head: &rayv1.NetworkPolicyRules{EgressRules: dns}, Worker: &rayv1.NetworkPolicyRules{EgressRules: https},
				WorkerGroups: []rayv1.WorkerGroupNetworkPolicyRules{{GroupName: "workers", NetworkPolicyRules: rayv1.NetworkPolicyRules{EgressRules: dns}}}},
		},
		"egress open": {np: &rayv1.NetworkPolicyConfig{Mode: ptr.To(rayv1.NetworkPolicyDenyAllIngress)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := RayCluster(cluster(func(rc *rayv1.RayCluster) { rc.Spec.NetworkPolicy = tc.np }), netpolOn)
			diffErrors(t, nil, errs)
			diffWarnings(t, tc.want, warnings)
		})
	}
}

// KubeRay's two samples of the delegated mode: the manual one (the settings in the pod
// templates, no authOptions) and the one with authOptions are admitted; moving to
// authOptions while keeping the manual settings is refused where they would clash.
func TestK8sTokenAuthSamples(t *testing.T) {
	manual := func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.55.0"
		for _, ps := range []*corev1.PodSpec{&rc.Spec.HeadGroupSpec.Template.Spec, &rc.Spec.WorkerGroupSpecs[0].Template.Spec} {
			ps.ServiceAccountName = "ray-cluster-with-k8s-auth"
			ps.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}, {Name: "RAY_ENABLE_K8S_TOKEN_AUTH", Value: "true"}}
			ps.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ray-token", MountPath: "/var/run/secrets/ray.io/serviceaccount"}}
			ps.Volumes = []corev1.Volume{{Name: "ray-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}
	}
	errs, _ := RayCluster(cluster(manual), gateOff)
	diffErrors(t, nil, errs)

	errs, _ = RayCluster(cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.RayVersion = "2.55.0"
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	}), gateOff)
	diffErrors(t, nil, errs)

	errs, _ = RayCluster(cluster(func(rc *rayv1.RayCluster) {
		manual(rc)
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	}), gateOff)
	var want field.ErrorList
	groups := []string{"spec.headGroupSpec", "spec.workerGroupSpecs[0]"}
	for _, g := range groups {
		want = append(want,
			field.Forbidden(p(g+".template.spec.containers[0].env[0].name"), ""),
			field.Forbidden(p(g+".template.spec.containers[0].env[1].name"), ""))
	}
	for _, g := range groups {
		want = append(want, field.Forbidden(p(g+".template.spec.volumes[0].name"), ""))
	}
	for _, g := range groups {
		want = append(want, field.Forbidden(p(g+".template.spec.containers[0].volumeMounts[0].name"), ""))
	}
	diffErrors(t, want, errs)
}
